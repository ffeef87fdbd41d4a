"""Issue 13 end to end: the model runs `ralph-hooks rename` through Bash, a
preview first (nothing written), then with --apply; the tool result of each
reaches the next request, and the files on disk carry the new name."""

import sys

from e2e_check import Checks, Run

run = Run(sys.argv[1])
check = Checks()

check(run.ended_normally(), "claude ended the run normally", run.result)
check.equal(len(run.calls), 4, "four main-loop calls: preview, apply, read, done")
check.contains(run.new_text(1), "preview only; nothing written", "the preview reached the model")
check.contains(run.new_text(2), "re-checked the touched files: no errors", "the applied rename was re-checked")
check.contains(run.new_text(3), "print(new_name())", "the next Read shows the renamed call")
check.equal(run.project_file("main.py"), "from utils import new_name\n\nprint(new_name())\n", "main.py on disk")
check.equal(run.project_file("utils.py"), "def new_name() -> int:\n    return 42\n", "utils.py on disk")
check.finish()
