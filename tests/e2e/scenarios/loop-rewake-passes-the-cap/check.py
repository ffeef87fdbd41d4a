"""Rewake mode runs past the block cap: a loop started with --rewake is
answered by the asyncRewake Stop registration, which lets each turn end and
wakes the session (exit 2, the follow-up on stderr) in a stream-json session.
Ten woken iterations in a row of a model that only talks (a plain Stop
block would be overridden at the 9th), then the check passing
completes the loop. The woken turns' prompts (<task-notification>) reset
nothing, and the plain Stop registration stays out of it."""

import sys

from e2e_check import Checks, Run

run = Run(sys.argv[1])
check = Checks()

check(run.ended_normally(), "claude ended the run normally", run.result)
state = run.state_json("loop.json") or {}
check.equal(state.get("status"), "COMPLETED", "the loop completed")
check.equal(state.get("iteration"), 10, "after 10 woken iterations (the cap is 8)")
check(not state.get("capped"), "no turn was capped", state.get("capped"))
woken = [run.new_text(i) for i in range(len(run.calls))]
check(sum("<task-notification>" in text or "Stop hook feedback" in text for text in woken) >= 10,
      "each follow-up came as a wake-up", len(woken))
events = [event.get("data") or {} for event in run.events()]
check.equal(sum(1 for e in events if e.get("event") == "loop_iteration"), 10, "ten loop_iteration events")
check.equal(state.get("completion_reason"), "conditions_met", "completed by its check")
rewakes = [hook for hook in run.hook_runs("Stop") if hook["command"].endswith("--rewake")]
check(len(rewakes) >= 10, "the --rewake registration ran at every stop", len(rewakes))
check.finish()
