"""Claude Code 2.1.332 sends PostToolUseFailure, not PostToolUse, after a
Bash command that exits non-zero. A command that tampers with the loop's
state and then fails is checked all the same (the state is put back), and
so is a push made by a script that fails afterwards (the loop is paused by
the guard)."""

import sys

from e2e_check import Checks, Run

run = Run(sys.argv[1])
check = Checks()

check(run.ended_normally(), "claude ended the run normally", run.result)
failed = [h for h in run.hook_runs("PostToolUseFailure:Bash") if "ralph-post-tool-lsp-diagnostic" in h["command"]]
check.equal(len(failed), 2, "our check ran after both failing commands")
plain = [h for h in run.hook_runs("PostToolUse:Bash") if "ralph-post-tool-lsp-diagnostic" in h["command"]]
check.equal(len(plain), 0, "no PostToolUse for a failing command")
state = run.state_json("loop.json") or {}
check.equal(state.get("goal"), "E2E-GOAL: ship it", "the loop is the one the user started")
check.equal(state.get("status"), "PAUSED", "the push paused the loop")
check.equal(state.get("paused_by"), "guard", "paused by the guard")
kinds = [(event.get("data") or {}).get("event") for event in run.events()]
for kind in ("protected_restored", "publish_detected", "loop_paused"):
    check(kind in kinds, "events.jsonl has %s" % kind, kinds)
check.finish()
