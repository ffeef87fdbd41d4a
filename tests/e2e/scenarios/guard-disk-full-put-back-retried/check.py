"""Plain mode, issue class 6 (attack finding F7): a command deletes the
loop's state and fills the disk. The put-back fails; Claude is told it
could NOT be put back (never that it was restored). The running loop's
kept copy is then linked back into place by the next hook that reads it
(no free space needed; attack finding G5), so the Stops block from the
loop itself, and it completes on its promise."""

import subprocess
import sys

from e2e_check import Checks, Run

run = Run(sys.argv[1])
check = Checks()
try:
    check(run.ended_normally(), "claude ended the run normally", run.result)
    check.equal(len(run.calls), 5, "five main-loop calls: both premature stops were blocked")
    state = run.state_json("loop.json") or {}
    check.equal(state.get("goal"), "E2E-GOAL: fix the build", "the loop is the user's")
    check.equal(state.get("status"), "COMPLETED", "it completed on its promise")
finally:
    subprocess.run(["umount", run.project + "/.claude"], check=False)
check.finish()
