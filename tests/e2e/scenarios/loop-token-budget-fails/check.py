"""A token budget ends a loop: the mock reports the usage of each reply,
Claude Code writes it to the transcript, and the Stop hook counts it. The
first follow-up shows what is left, the second warns at 91 %, and the third
stop ends the loop as FAILED with reason `budget` (no promise was given)."""

import sys

from e2e_check import Checks, Run

run = Run(sys.argv[1])
check = Checks()

check(run.ended_normally(), "claude ended the run normally", run.result)
state = run.state_json("loop.json") or {}
check.equal(state.get("status"), "FAILED", "loop.json says FAILED")
check.equal(state.get("completion_reason"), "budget", "the reason is the budget")
check.contains(state.get("completion_detail") or "", "token budget is exhausted", "the detail names the token budget")
check.equal(state.get("iteration"), 3, "three iterations")
spent = (state.get("spend") or {}).get("tokens") or {}
total = sum(spent.get(key, 0) for key in ("input", "output", "cache_creation", "cache_read"))
check(27_300 <= total < 30_000, "the spend is the three turns' usage (27,360 with the short replies)", total)
history = state.get("history") or []
check(all((entry.get("tokens") or {}).get("input", 0) >= 9000 for entry in history),
      "each iteration records its tokens", history)
check(any((event.get("data") or {}).get("event") == "loop_budget_warning" for event in run.events()),
      "events.jsonl records the 80 % warning", run.events())
check.finish()
