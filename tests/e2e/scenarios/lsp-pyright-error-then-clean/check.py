"""Issue 3 end to end: the model Writes a Python file with a type error; the
next request the mock receives carries pyright's diagnostic from
ralph-post-tool-lsp-diagnostic (marked as introduced by the edit); a
follow-up Edit fixes it and the diagnostics say clean, naming the fix; the
baseline in diagnostics.json ends empty."""

import sys

from e2e_check import Checks, Run

run = Run(sys.argv[1])
check = Checks()

check(run.ended_normally(), "claude ended the run normally", run.result)
check.equal(len(run.calls), 3, "three main-loop calls: write, edit, done")

after_write = run.new_text(1)
check.contains(after_write, "app.py:4:15 error [Pyright reportAssignmentType]", "the pyright error reached the model after the Write")
check.contains(after_write, "Introduced by this edit", "it is marked as introduced by the Write")
after_edit = run.new_text(2)
check.contains(after_edit, "LSP diagnostics for app.py (pyright): clean", "the diagnostics say clean after the Edit")
check.contains(after_edit, "This edit fixed 1 earlier problem(s): 1 error.", "and name what the Edit fixed")

for label in ("PostToolUse:Write", "PostToolUse:Edit"):
    runs = [hook for hook in run.hook_runs(label) if "ralph-post-tool-lsp-diagnostic" in hook["command"]]
    check.equal([hook["status"] for hook in runs], [0], "the diagnostics hook ran once for the %s and exited 0" % label.split(":")[1])

baseline = run.state_json("diagnostics.json") or {}
entry = (baseline.get("files") or {}).get("app.py")
check(entry is not None and entry.get("server") == "pyright" and entry.get("diagnostics") == [],
      "diagnostics.json keeps the clean result as the baseline", baseline)
check.contains(run.project_file("app.py") or "", "result: int = add(1, 2)", "the fix is on disk")
check.finish()
