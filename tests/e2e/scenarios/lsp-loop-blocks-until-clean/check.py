"""Issue 3 in a loop, end to end: the model starts a loop with --diagnostics=touched;
its Write of a Python file with a type error is blocked by
ralph-post-tool-lsp-diagnostic with pyright's error as the reason; its stop
is blocked while the error remains, with the error in the follow-up prompt;
after the fixing Edit the diagnostics say clean and the next stop completes
the loop, whose history keeps the error counts per file."""

import sys

from e2e_check import Checks, Run

run = Run(sys.argv[1])
check = Checks()

check(run.ended_normally(), "claude ended the run normally", run.result)
check.equal(len(run.calls), 5, "five main-loop calls: start, write, stop, fix, stop")
check.contains(run.new_text(2), "This edit introduced 1 error in app.py", "the Write was blocked with the introduced error")
check.contains(run.new_text(3), "still have 1 error", "the first stop was blocked by the diagnostics condition")
check.contains(run.new_text(4), "clean", "the fix was reported clean")

state = run.state_json("loop.json") or {}
check.equal(state.get("status"), "COMPLETED", "the loop completed")
history = state.get("history") or []
counts = [entry.get("conditions", {}).get("diagnostics", {}).get("files", {}).get("app.py") for entry in history]
check.equal(counts, [{"errors": 1, "warnings": 0}, {"errors": 0, "warnings": 0}], "the history keeps the counts per file")
check(any(path.endswith("/app.py") for path in state.get("touched_files") or []), "app.py is in touched_files", state.get("touched_files"))
posts = [hook for hook in run.hook_runs("PostToolUse") if "ralph-post-tool-lsp-diagnostic" in hook["command"]]
# The same hook also runs after Bash (issue 11): here only for the loop start.
edits = [hook for hook in posts if hook.get("label") != "PostToolUse:Bash"]
bashes = [hook for hook in posts if hook.get("label") == "PostToolUse:Bash"]
check(len(edits) == 2 and all(hook["status"] == 0 for hook in edits), "the diagnostics hook ran for the Write and the Edit, exiting 0", posts)
check(all(hook["status"] == 0 for hook in bashes), "its Bash runs exited 0", bashes)
check.finish()
