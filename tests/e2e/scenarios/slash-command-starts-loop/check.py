"""The /ralph-loop slash command that `ralph-hooks install` put in the project
starts a loop bound to the session; the loop then behaves as usual."""

import sys

from e2e_check import Checks, Run

run = Run(sys.argv[1])
check = Checks()

check(run.ended_normally(), "claude ended the run normally", run.result)
check.contains(run.new_text(0), "Started Ralph loop", "the slash command ran `ralph-hooks loop start` and its output reached the model")
state = run.state_json("loop.json") or {}
check.equal(state.get("goal"), "E2E-SLASH-GOAL: write ready.txt", "the quoted goal arrived as one argument")
check.equal(state.get("checks"), ["test -f ready.txt"], "the quoted --check arrived as one argument")
check.equal(state.get("max_iterations"), 4, "--max-iterations was passed through")
check(state.get("session_id") and state.get("session_id") == run.session_id, "the loop is bound to this session",
      {"loop": state.get("session_id"), "claude": run.session_id})
check.equal(state.get("status"), "COMPLETED", "the loop completed once ready.txt existed")
check.equal([entry.get("decision") for entry in state.get("history") or []], ["block", "complete"], "one blocked stop, then the completing one")
check.finish()
