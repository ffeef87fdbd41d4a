"""An API rate limit ends the turn with StopFailure (never Stop): our
StopFailure hook pauses the loop with reason `usage_limit`, spends no
iteration and logs the event; the next session start tells the user."""

import json
import os
import subprocess
import sys

from e2e_check import Checks, Run

run = Run(sys.argv[1])
check = Checks()

failures = run.hook_runs("StopFailure")
check(len(failures) >= 1, "the StopFailure hook ran", run.hook_runs(""))
check(all(hook["command"].endswith("ralph-stop-loop-controller") for hook in failures), "it was ours", failures)
check(not any(hook["label"] == "Stop" for hook in run.hook_runs("Stop")), "no Stop hook ran", run.hook_runs("Stop"))

# StopFailure is fire-and-forget: the CLI may exit before its hook has
# written (seen once on a loaded CI machine). Wait for the hook's write, a
# few seconds at most; a pause that never lands still fails below.
import time
deadline = time.time() + 10
state = run.state_json("loop.json") or {}
while state.get("status") == "RUNNING" and time.time() < deadline:
    time.sleep(0.1)
    state = run.state_json("loop.json") or {}
check.equal(state.get("status"), "PAUSED", "loop.json says PAUSED")
check.equal(state.get("paused_by"), "usage_limit", "paused by the usage limit")
check.equal(state.get("iteration"), 0, "no iteration was spent")
check.contains(state.get("limit_message") or "", "429", "the limit's text is kept")
def paused_events():
    events = [event.get("data") or {} for event in run.events()]
    return events, any(e.get("event") == "loop_paused" and e.get("by") == "usage_limit" for e in events)
events, logged = paused_events()
while not logged and time.time() < deadline:
    time.sleep(0.1)
    events, logged = paused_events()
check(logged, "events.jsonl records loop_paused by usage_limit", events)

# The next session start tells the user, once.
start = json.dumps({"hook_event_name": "SessionStart", "session_id": run.session_id, "source": "resume",
                    "cwd": run.project})
told = subprocess.run([os.path.join(os.environ["E2E_BIN_DIR"], "ralph-session-start")], input=start,
                      cwd=run.project, capture_output=True, text=True,
                      env=dict(os.environ, CLAUDE_PROJECT_DIR=run.project))
check.equal(told.returncode, 0, "the session start hook ran")
check.contains(told.stdout, "paused at", "it tells the user the loop was paused")
check.contains(told.stdout, "A usage limit paused it", "and tells Claude")
check.finish()
