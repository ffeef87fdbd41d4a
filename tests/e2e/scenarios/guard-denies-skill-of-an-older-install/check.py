"""An older install's /cancel-loop (no `disable-model-invocation`) called
by the model through the Skill tool: PreToolUse fires for Skill, and the
guard denies it, so its `!` line never runs."""

import sys

from e2e_check import Checks, Run

run = Run(sys.argv[1])
check = Checks()

check(run.ended_normally(), "claude ended the run normally", run.result)
skill = [h for h in run.hook_runs("PreToolUse:Skill") if "ralph-pre-tool-stop-guard" in h["command"]]
check.equal([h["status"] for h in skill], [0], "our guard ran for the Skill call")
state = run.state_json("loop.json") or {}
check.equal(state.get("status"), "COMPLETED", "the loop was not cancelled and completed")
check.finish()
