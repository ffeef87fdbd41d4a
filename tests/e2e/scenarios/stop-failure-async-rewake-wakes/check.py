"""Claude Code 2.1.330: a turn that failed on a 429 fires StopFailure; an
asyncRewake StopFailure hook runs in the background and its exit 2 wakes a
stream-json session with a <task-notification> turn carrying its stderr.
(Plain `claude -p` has ended by then and kills the background hook, which is
why the recording StopFailure hook is an ordinary one.)"""

import sys

from e2e_check import Checks, Run

run = Run(sys.argv[1])
check = Checks()
check.equal(len(run.calls), 2, "the failed call and the woken one")
check.contains(run.new_text(1), "E2E-WAKE-AFTER-LIMIT", "the woken turn carries the hook's stderr")
ours = [hook for hook in run.hook_runs("StopFailure") if hook["command"].endswith("ralph-stop-loop-controller")]
check(len(ours) == 1 and ours[0]["status"] == 0, "our StopFailure hook ran and exited 0", run.hook_runs("StopFailure"))
check.finish()
