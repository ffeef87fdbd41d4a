"""Sandbox mode: the user's `/cancel-loop` ends a running loop although the
command's `!` line runs inside the sandbox, where the state is read-only:
the prompt hook, outside the sandbox, pauses the loop ("/cancel-loop" is a
stop phrase) and cancels it from the user's prompt; the model's stop that
follows is not blocked."""

import sys

from e2e_check import Checks, Run

run = Run(sys.argv[1])
check = Checks()
check(run.ended_normally(), "claude ended the run normally", run.result)
state = run.state_json("loop.json") or {}
check.equal(state.get("status"), "CANCELLED", "the user's command cancelled the loop")
kinds = [(event.get("data") or {}).get("event") for event in run.events()]
check("loop_cancelled" in kinds, "events.jsonl has loop_cancelled", kinds)
check.finish()
