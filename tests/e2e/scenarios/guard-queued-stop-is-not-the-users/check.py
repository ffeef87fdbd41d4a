"""Plain mode (no sandbox). Claude Code 2.1.332 hands the Bash tool its
messaging socket ($CLAUDE_CODE_MESSAGING_SOCKET); a line the agent's own
command writes there comes back mid-turn as a prompt with no `source`, the
same payload as the user's `claude -p` prompt. It said "stop": the loop must
keep RUNNING, the agent's premature "All done." must be blocked, and the
user is told why that stop was not taken (attack finding F1)."""

import sys

from e2e_check import Checks, Run

run = Run(sys.argv[1])
check = Checks()

check(run.ended_normally(), "claude ended the run normally", run.result)
check.equal(len(run.calls), 3, "three main-loop calls: the premature stop was blocked")
check.contains(run.new_text(1), "stop", "the queued message reached the model")
prompts = run.hook_runs("UserPromptSubmit")
check.equal(len(prompts), 2, "the prompt hook ran for the prompt and the queued message")
check.contains(run.new_text(2), "RALPH LOOP", "the Stop hook blocked \"All done.\"")
kinds = [((event.get("data") or {}).get("event"), (event.get("data") or {}).get("by")) for event in run.events()]
check(("loop_paused", "user_prompt") not in kinds, "the queued stop did not pause the loop", kinds)
state = run.state_json("loop.json") or {}
check.equal(state.get("status"), "COMPLETED", "the loop completed on its promise")
check.equal(state.get("completion_reason"), "conditions_met", "by its promise (its only condition)")
check.finish()
