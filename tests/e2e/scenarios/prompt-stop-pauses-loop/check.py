"""The user stays in charge: a loop is running, the user's prompt is "stop";
ralph-user-prompt-submit pauses the loop and tells the model, the model's
turn ends without a Stop block, and `ralph-hooks loop status` says PAUSED."""

import os
import subprocess
import sys

from e2e_check import Checks, Run

run = Run(sys.argv[1])
check = Checks()

check(run.ended_normally(), "claude ended the run normally", run.result)
check.equal(len(run.calls), 1, "one main-loop call: the stop was not blocked")
check.not_contains(run.new_text(0), "Stop hook feedback", "no Stop block reached the model")

prompts = run.hook_runs("UserPromptSubmit")
check.equal(len(prompts), 1, "the UserPromptSubmit hook ran once")
if prompts:
    check.equal(prompts[0]["status"], 0, "it exited 0")
    check("ralph-user-prompt-submit" in prompts[0]["command"], "it was ours", prompts[0])
stops = run.hook_runs("Stop")
check(len(stops) >= 1, "the Stop hook ran", stops)
check(all(hook["status"] == 0 for hook in stops), "every Stop hook run exited 0", stops)

state = run.state_json("loop.json") or {}
check.equal(state.get("status"), "PAUSED", "loop.json says PAUSED")
check.equal(state.get("iteration"), 0, "no iteration was used")
check.equal(state.get("history"), [], "the Stop hook did not evaluate the paused loop")
check(any((event.get("data") or {}).get("event") == "loop_paused" for event in run.events()),
      "events.jsonl records loop_paused", run.events())

status = subprocess.run([os.path.join(os.environ["E2E_BIN_DIR"], "ralph-hooks"), "loop", "status"],
                        cwd=run.project, capture_output=True, text=True)
check.equal(status.returncode, 0, "ralph-hooks loop status ran")
check.contains(status.stdout, "PAUSED", "loop status says PAUSED")
check.finish()
