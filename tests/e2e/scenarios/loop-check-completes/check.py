"""Foundation scenario: a Ralph loop with --check, started by the model
through Bash, blocks the stop while the check fails, then completes once the
model has fixed what the check looks for."""

import sys

from e2e_check import Checks, Run

run = Run(sys.argv[1])
check = Checks()

check(run.ended_normally(), "claude ended the run normally", run.result)
check.equal(len(run.calls), 4, "four main-loop calls: start the loop, stop, fix, stop")
check.equal((run.result or {}).get("result"), "done.txt exists now, so the check passes.", "the final answer is the last scripted text")

# The loop was bound when it started, from $CLAUDE_CODE_SESSION_ID in the Bash
# tool's environment, not claimed later by the first stop.
check.contains(run.new_text(1), "Bound to session %s" % run.session_id, "`loop start` bound the loop to this session")

# What the model was told after its first stop: the follow-up prompt.
follow_up = run.new_text(2)
check.contains(follow_up, "Stop hook feedback", "the first stop was blocked and its reason reached the model")
check.contains(follow_up, "E2E-CHECK-FAILING: done.txt is missing", "the follow-up prompt carries the failing check's output")
check.contains(follow_up, "iteration 1/5", "the follow-up prompt says iteration 1/5")
check.not_contains(run.new_text(3), "Stop hook feedback", "no stop feedback after the fix (the Write's result is all that is new)")

# The plain registration; the --rewake one (asyncRewake) runs beside it and
# leaves loops that were not started with --rewake alone.
stops = [hook for hook in run.hook_runs("Stop") if not hook["command"].endswith("--rewake")]
check.equal([(stop["command"].rsplit("/", 1)[-1], stop["status"]) for stop in stops],
            [("ralph-stop-loop-controller", 0)] * 2, "our Stop hook ran twice and exited 0 both times")

# What the user was told: the Stop hook's systemMessage, each time it ran.
notices = [event.get("content", "") for event in run.stream if event.get("subtype") == "informational"]
check.equal(len(notices), 2, "the Stop hook told the user something both times")
if len(notices) == 2:
    check.contains(notices[0], "iteration 1/5", "the first notice says which iteration failed")
    check.contains(notices[1], "COMPLETED", "the second notice says the loop completed")

state = run.state_json("loop.json") or {}
check.equal(state.get("status"), "COMPLETED", "loop.json says COMPLETED")
check.equal(state.get("completion_reason"), "conditions_met", "the completion reason is conditions_met")
check(state.get("session_id") and state.get("session_id") == run.session_id,
      "loop.json records this session",
      {"loop": state.get("session_id"), "claude": run.session_id})
check.equal(state.get("iteration"), 1, "one failed iteration was counted")
history = state.get("history") or []
check.equal([entry.get("decision") for entry in history], ["block", "complete"], "the history holds the blocked stop, then the completing one")
if history:
    blocked = history[0]
    check.equal(blocked.get("iteration"), 1, "the blocked stop was iteration 1")
    check.equal(blocked.get("stop_hook_active"), False, "the first stop was not a continuation")
    check.equal([run_.get("exit_code") for run_ in blocked.get("checks", [])], [1], "the failing check's exit code is recorded")
    check.contains((blocked.get("checks") or [{}])[0].get("tail"), "E2E-CHECK-FAILING", "the failing check's output tail is recorded")
if len(history) == 2:
    check.equal(history[1].get("failed"), [], "nothing failed at the completing stop")
check.equal(run.project_file("done.txt"), "done\n", "the model's fix is on disk")

kinds = [(event.get("data") or {}).get("event") for event in run.events()]
check("loop_started" in kinds and "loop_completed" in kinds, "events.jsonl records the start and the completion", kinds)
check.finish()
