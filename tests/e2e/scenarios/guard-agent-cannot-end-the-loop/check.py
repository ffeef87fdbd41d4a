"""The agent cannot end the loop: `ralph-hooks loop cancel` from the Bash
tool is denied with a reason that names no way around, the /cancel-loop
slash command is refused through the Skill tool, and the same command run
through a script (which the text reading cannot see) is undone after the
fact; the loop then completes normally."""

import sys

from e2e_check import Checks, Run

run = Run(sys.argv[1])
check = Checks()

check(run.ended_normally(), "claude ended the run normally", run.result)
denied = [text for (is_error, text) in run.tool_results(1) if is_error]
check(denied and "ending it is the user's decision" in denied[0], "loop cancel was denied by the guard", denied)
for hint in ("/cancel-loop", "terminal", "loop resume"):
    check(denied and hint not in denied[0], "the reason does not name %r" % hint, denied)
refused = [text for (is_error, text) in run.tool_results(2) if is_error]
check(bool(refused), "the Skill call of /cancel-loop was refused", run.tool_results(2))
skill_hooks = run.hook_runs("PreToolUse:Skill")
print("PreToolUse:Skill runs: %r" % skill_hooks)
print("the Skill refusal: %r" % refused)
check.contains(run.new_text(3), "loop.json (changed, put back)", "the script's cancel was undone after the fact")

state = run.state_json("loop.json") or {}
check.equal(state.get("status"), "COMPLETED", "the loop ran on and completed")
check.equal(state.get("completion_reason"), "conditions_met", "by its promise")
kinds = [(event.get("data") or {}).get("event") for event in run.events()]
check("protected_restored" in kinds, "a guard_event was logged", kinds)
check.finish()
