"""Sandbox mode: the user's `/ralph-loop` starts a loop although the
command's `!` line runs inside the sandbox, where the state is read-only:
the prompt hook (outside the sandbox) starts it from the user's prompt,
bound to the session; the command file's line only shows its status. The
loop blocks the first "Done." and completes on the promise."""

import sys

from e2e_check import Checks, Run

run = Run(sys.argv[1])
check = Checks()
check(run.ended_normally(), "claude ended the run normally", run.result)
state = run.state_json("loop.json") or {}
check.equal(state.get("goal"), "E2E-GOAL: say the word", "the loop the user asked for")
check.equal(state.get("session_id"), run.session_id, "bound to the user's session")
check.equal(state.get("status"), "COMPLETED", "it completed on the promise")
check.equal(state.get("iteration"), 1, "after blocking one stop")
check.finish()
