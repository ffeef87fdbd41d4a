"""Subagents: Claude Code 2.1.330 runs PreToolUse and PostToolUse for a
subagent's tool calls with `agent_id` set, so the guard denies the
subagent's push and the check after its command undoes the config it
wrote, exactly as for the main agent."""

import glob
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
bash = [p for p in payloads if p.get("tool_name") == "Bash"]
pre = [p for p in bash if p.get("hook_event_name") == "PreToolUse"]
post = [p for p in bash if p.get("hook_event_name") == "PostToolUse"]
check.equal(len(pre), 2, "PreToolUse fired for both of the subagent's Bash calls")
check.equal(len(post), 1, "PostToolUse fired for the one that ran (the push was denied)")
check(all(p.get("agent_id") and p.get("agent_type") == "general-purpose" for p in pre + post),
      "each carries agent_id and agent_type", [(p.get("agent_id"), p.get("agent_type")) for p in pre + post])
agent_calls = [p for p in payloads if p.get("tool_name") == "Agent"]
check(agent_calls and not agent_calls[0].get("agent_id"), "the main agent's own call has no agent_id", agent_calls[:1])

guards = [h for h in run.hook_runs("PreToolUse:Bash") if "ralph-pre-tool-stop-guard" in h["command"]]
check.equal([h["status"] for h in guards], [0, 0], "our guard ran for both and exited 0")
check.equal(run.project_file(".claude/ralph-hooks.json"), None, "the config the subagent wrote is gone")
check(glob.glob(os.path.join(run.project, ".claude", "ralph-hooks.json.undone-by-ralph-hooks-*")),
      "and kept aside for the user to see")
kinds = [(event.get("data") or {}).get("event") for event in run.events()]
check("protected_restored" in kinds, "a guard_event was logged", kinds)
state = run.state_json("loop.json") or {}
check.equal(state.get("status"), "COMPLETED", "the loop completed")
check.finish()
