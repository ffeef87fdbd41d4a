"""`rm -rf .claude` (spelled through a variable the text reading cannot
expand) removes the state root and Claude Code's own settings: the check
after the command puts them back before Claude Code's settings watcher
drops our hooks, so the next calls are still guarded. A push made through a
script is seen after the fact: the loop is paused by the guard and the
user is told what went where."""

import json
import os
import sys

from e2e_check import Checks, Run

run = Run(sys.argv[1])
check = Checks()

check(run.ended_normally(), "claude ended the run normally", run.result)
pre = [h for h in run.hook_runs("PreToolUse:Bash") if "ralph-pre-tool-stop-guard" in h["command"]]
post = [h for h in run.hook_runs("PostToolUse:Bash") if "ralph-post-tool-lsp-diagnostic" in h["command"]]
check.equal(len(pre), 3, "our guard ran before all three commands, after the removal too")
check.equal(len(post), 3, "our check ran after all three")
settings = json.loads(run.project_file(".claude/settings.json") or "{}")
check("PreToolUse" in settings.get("hooks", {}), "Claude Code's settings are back with our hooks", settings)

state = run.state_json("loop.json") or {}
check.equal(state.get("status"), "PAUSED", "the push paused the loop")
check.equal(state.get("paused_by"), "guard", "paused by the guard")
notices = [json.dumps(event) for event in run.stream if "cannot be undone" in json.dumps(event)]
print("what the user saw: %s" % (notices[:1],))
kinds = [(event.get("data") or {}).get("event") for event in run.events()]
for kind in ("protected_restored", "publish_detected", "loop_paused"):
    check(kind in kinds, "events.jsonl has %s" % kind, kinds)
published = [e for e in run.events() if (e.get("data") or {}).get("event") == "publish_detected"]
if published:
    push = published[0]["data"]["pushes"][0]
    check.equal((push.get("remote"), push.get("branch")), ("origin", "main"), "the push is named")
    check.equal(push.get("url"), os.path.join(run.out, "origin.git"), "with where it went")
check.finish()
