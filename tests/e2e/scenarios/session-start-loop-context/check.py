"""A loop running before the session starts: the SessionStart hook's
additionalContext puts it in front of the model, the session claims the
unbound loop at its first stop, a promise quoted in prose does not end it,
and the promise given as the final text does."""

import sys

from e2e_check import Checks, Run

run = Run(sys.argv[1])
check = Checks()

check(run.ended_normally(), "claude ended the run normally", run.result)
check.equal(len(run.calls), 2, "two main-loop calls")

starts = [event for event in run.stream if event.get("subtype") == "hook_response" and event.get("hook_event") == "SessionStart"]
check.equal(len(starts), 1, "the SessionStart hook ran once")
if starts:
    check.equal(starts[0].get("exit_code"), 0, "the SessionStart hook exited 0")
    check.contains(starts[0].get("stdout"), '"additionalContext"', "the SessionStart hook answered with additionalContext")

first = run.new_text(0)
check.contains(first, "E2E-GOAL: ship the widget", "the model saw the running loop's goal before its first reply")
check.contains(first, "<promise>WIDGET SHIPPED</promise>", "the model was told the exact promise to give")
check.contains(run.new_text(1), "iteration 1/3", "a promise quoted in prose did not end the loop")

state = run.state_json("loop.json") or {}
check.equal(state.get("status"), "COMPLETED", "loop.json says COMPLETED")
check.equal(state.get("completion_reason"), "conditions_met", "the promise ended it")
check(state.get("session_id") and state.get("session_id") == run.session_id,
      "the unbound loop was claimed by this session", {"loop": state.get("session_id"), "claude": run.session_id})
check.equal([entry.get("decision") for entry in state.get("history") or []], ["block", "complete"],
            "the history holds the blocked stop, then the completing one")
check.finish()
