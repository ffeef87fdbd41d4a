"""The user's own /cancel-loop keeps working: its `!` shell line is run by
Claude Code itself and reaches no tool hook (neither PreToolUse nor
PostToolUse fires for it; only UserPromptSubmit and UserPromptExpansion
do), so the guard never sees it. UserPromptSubmit pauses the loop first
("/cancel-loop" is a stop phrase), then the line cancels it."""

import json
import os
import sys

from e2e_check import Checks, Run

run = Run(sys.argv[1])
check = Checks()

check(run.ended_normally(), "claude ended the run normally", run.result)
payloads = []
path = os.path.join(run.out, "payloads.jsonl")
if os.path.exists(path):
    with open(path, encoding="utf-8") as file:
        payloads = [json.loads(line) for line in file if line.strip()]
events = [payload.get("hook_event_name") for payload in payloads]
print("hook events the probe saw: %r" % events)
check("UserPromptSubmit" in events, "UserPromptSubmit fired for /cancel-loop", events)
expansions = [p for p in payloads if p.get("hook_event_name") == "UserPromptExpansion"]
check(expansions and expansions[0].get("command_name") == "cancel-loop", "UserPromptExpansion names the command", expansions)
check("PreToolUse" not in events and "PostToolUse" not in events, "the `!` line reached no tool hook", events)
check.equal(run.hook_runs("PreToolUse"), [], "Claude Code ran no PreToolUse hook at all")

state = run.state_json("loop.json") or {}
check.equal(state.get("status"), "CANCELLED", "the user's command cancelled the loop")
kinds = [(event.get("data") or {}).get("event") for event in run.events()]
check(kinds.index("loop_paused") < kinds.index("loop_cancelled") if "loop_paused" in kinds and "loop_cancelled" in kinds else False,
      "the prompt hook paused the loop before the line cancelled it", kinds)
check.finish()
