"""The block cap, seen: the 9th Stop block in a row of a plain
loop is overridden and the turn ends. Nothing in a hook input says so; the
user's next prompt ("continue", over stream-json input) makes
ralph-user-prompt-submit read the cap's transcript row: the loop records a
capped turn (count, time, event), tells the user once, and carries on; it
is not taken for a completion, and the check passing then completes it."""

import sys

from e2e_check import Checks, Run

run = Run(sys.argv[1])
check = Checks()

check(run.ended_normally(), "claude ended the run normally", run.result)
state = run.state_json("loop.json") or {}
check.equal(state.get("capped"), 1, "loop.json counts one capped turn")
check(bool(state.get("capped_at")), "and when", state)
check(any(entry.get("capped_at") for entry in state.get("history") or []),
      "the overridden block's history entry is marked", state.get("history"))
check.equal(state.get("status"), "COMPLETED", "the loop carried on and completed")
events = [event.get("data") or {} for event in run.events()]
check(any(e.get("event") == "loop_capped" for e in events), "events.jsonl records loop_capped", events)
told = [event for event in run.stream if "block cap stopped it" in str(event)]
check(len(told) >= 1, "the user was told why the turn ended", [e for e in run.stream if e.get("type") == "system"][-5:])
check.finish()
