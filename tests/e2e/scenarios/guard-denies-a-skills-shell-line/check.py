"""A skill's `!` line called by the model (`invoked_by: claude`) that runs
`ralph-hooks loop cancel`: the guard denies it at PreSkillShellCommand, the
loop is not cancelled and completes on its promise."""

import sys

from e2e_check import Checks, Run

run = Run(sys.argv[1])
check = Checks()

check(run.ended_normally(), "claude ended the run normally", run.result)
lines = [h for h in run.hook_runs("PreSkillShellCommand") if "ralph-pre-tool-stop-guard" in h["command"]]
check.equal([h["status"] for h in lines], [0], "our guard ran for the skill's line")
state = run.state_json("loop.json") or {}
check.equal(state.get("status"), "COMPLETED", "the loop was not cancelled and completed")
check.finish()
