"""The user's arguments to /ralph-loop reach `ralph-hooks loop start` as
text: an apostrophe does not break the command, `$(…)` and backticks are
neither run nor cut the flags off (the command file hands them over through
a quoted here-document, never through the shell's parser), also in
Claude Code's default permission mode."""

import os
import sys

from e2e_check import Checks, Run

run = Run(sys.argv[1])
check = Checks()

check(run.ended_normally(), "claude ended the run normally", run.result)
state = run.state_json("loop.json") or {}
check.equal(state.get("goal"), "fix the user's login page $(touch pwned.txt) and `touch ticked.txt`",
            "the goal arrived as typed")
check.equal(state.get("promise"), "E2E-ARGS-DONE", "--promise after a backtick was not cut off")
check.equal(state.get("max_iterations"), 3, "--max-iterations was passed through")
check.equal(state.get("status"), "COMPLETED", "the loop completed on the promise")
for name in ("pwned.txt", "ticked.txt"):
    check(not os.path.exists(os.path.join(run.project, name)), f"nothing in the arguments ran ({name} absent)")
check.finish()
