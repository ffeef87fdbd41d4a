"""A --rewake loop in plain `claude -p`: the asyncRewake registration's
exit 2 blocks the stop like an ordinary Stop hook, so the follow-ups reach
the model and the loop completes when its check passes."""

import sys

from e2e_check import Checks, Run

run = Run(sys.argv[1])
check = Checks()

check(run.ended_normally(), "claude ended the run normally", run.result)
state = run.state_json("loop.json") or {}
check.equal(state.get("status"), "COMPLETED", "the loop completed")
check.equal(state.get("iteration"), 2, "after two follow-ups")
check.contains(run.new_text(1), "iteration 1/20", "the first follow-up reached the model")
check.finish()
