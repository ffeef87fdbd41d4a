"""Task steps end to end: the model sets three steps, finishes one and tries
to stop; the Stop hook hands it the checklist; it tries `task complete` and
the pre-tool guard denies it with the open steps; it finishes the rest,
completes the task, and its last stop is allowed."""

import os
import sys

from e2e_check import Checks, Run

run = Run(sys.argv[1])
check = Checks()

check(run.ended_normally(), "claude ended the run normally", run.result)
check.equal(len(run.calls), 7, "seven main-loop calls")
check.equal((run.result or {}).get("result"), "All three steps are done and the task is complete.",
            "the final answer is the last scripted text")

follow_up = run.new_text(3)
check.contains(follow_up, "Stop hook feedback", "the first stop was blocked")
check.contains(follow_up, "[SELF-DRIVING 1/20]", "the continuation is headed [SELF-DRIVING 1/20]")
check.contains(follow_up, "ralph-hooks task step complete s2", "the rules name the command for the current step")

denied = [text for (is_error, text) in run.tool_results(4) if is_error]
check(denied and "STOP GUARD" in denied[0], "task complete with open steps was denied before it ran", denied)

# The plain registration; the --rewake one (asyncRewake) runs beside it and
# leaves loops that were not started with --rewake alone.
stops = [hook for hook in run.hook_runs("Stop") if not hook["command"].endswith("--rewake")]
check.equal([(stop["command"].rsplit("/", 1)[-1], stop["status"]) for stop in stops],
            [("ralph-stop-loop-controller", 0)] * 2, "our Stop hook ran twice (blocked, then allowed) and exited 0")
guards = [hook for hook in run.hook_runs("PreToolUse:Bash") if "ralph-pre-tool-stop-guard" in hook["command"]]
check.equal(len(guards), 5, "the guard ran before each of the five Bash calls")
check(all(hook["status"] == 0 for hook in guards), "the guard always exited 0", guards)

notices = [event.get("content", "") for event in run.stream if event.get("subtype") == "informational"]
check(any("continuing (1/20)" in notice for notice in notices), "the user was told the stop was continued", notices)

tasks_dir = os.path.join(run.state_root, "tasks")
tasks = [name for name in os.listdir(tasks_dir) if name.endswith(".md")] if os.path.isdir(tasks_dir) else []
check.equal(len(tasks), 1, "one task file")
if tasks:
    with open(os.path.join(tasks_dir, tasks[0]), encoding="utf-8") as file:
        text = file.read()
    check.contains(text, "- **Status:** completed", "the task file says completed")
    check.contains(text, "- **Session:** %s" % run.session_id, "the task is bound to this session")
    for line in ["- [x] (s1) write greet.txt", "- [x] (s2) write farewell.txt", "- [x] (s3) write summary.txt",
                 "- [s1] write greet.txt — done", "- Task completed: greeting feature done"]:
        check.contains(text, line, "the task file has %r" % line)
    check.not_contains(text, "Force completed", "the task was not forced")
check.equal((run.state_json("tasks/active.json") or {}).get("task_id", "missing"), None, "no task is active any more")
check.equal((run.state_json("continuation.json") or {}).get("sessions"), {}, "the continuation counter was cleared at the allowed stop")

events = [(event.get("data") or {}) for event in run.events()]
kinds = [data.get("event") for data in events]
check.equal(kinds.count("step_completed"), 3, "three step_completed events")
triggered = [data for data in events if data.get("event") == "self_driving_triggered"]
check.equal([(d.get("consecutiveCount"), d.get("remainingSteps")) for d in triggered], [(1, 2)],
            "one self_driving_triggered with consecutiveCount 1 and remainingSteps 2")
blocked = [data for data in events if data.get("event") == "stop_guard_blocked"]
check.equal([(d.get("source"), d.get("remainingSteps")) for d in blocked], [("pre_tool_use", 2)],
            "one stop_guard_blocked from the pre-tool guard with 2 remaining steps")
check("steps_set" in kinds and "task_completed" in kinds, "steps_set and task_completed are recorded", kinds)
check.equal(run.project_file("summary.txt"), "both\n", "the last step's work is on disk")
check.finish()
