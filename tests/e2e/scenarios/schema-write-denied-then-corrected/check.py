"""A Write of a seed 001 test-result.yaml with a wrong enum (`result:
passed`) is denied by ralph-pre-tool-stop-guard with the exact error and the
schema to regenerate it from, so nothing lands; the corrected Write passes
both hooks silently and the file on disk validates."""

import os
import subprocess
import sys

from e2e_check import Checks, Run

run = Run(sys.argv[1])
check = Checks()

check(run.ended_normally(), "claude ended the run normally", run.result)
check.equal(len(run.calls), 3, "three main-loop calls")

denied = run.tool_results(1)
check.equal(len(denied), 1, "the first Write got one tool result")
if denied:
    is_error, text = denied[0]
    check(is_error, "the first Write was refused as an error", text)
    check.contains(text, 'execution.result: "passed" is not one of: pass, fail', "the refusal names the wrong enum with its place")

passed = run.tool_results(2)
check(passed and not any(is_error for is_error, _ in passed), "the corrected Write succeeded", passed)

guard_runs = run.hook_runs("PreToolUse:Write")
check.equal(len(guard_runs), 2, "the guard ran for both Writes")
check(all(hook.get("status") == 0 for hook in guard_runs), "the guard exited 0 both times", guard_runs)
post_runs = run.hook_runs("PostToolUse:Write")
check.equal(len(post_runs), 1, "the post-edit hook ran once: the denied Write never happened")

relative = os.path.join("sessions", os.environ["E2E_PROJECT_HASH"], "contracts", "R1", "T1", "T1-S2", "test-result.yaml")
path = os.path.join(run.state_root, relative)
text = open(path, encoding="utf-8").read() if os.path.exists(path) else None
check(text is not None and 'result: "pass"' in text, "the corrected file is on disk", text)
validate = subprocess.run([os.path.join(os.environ["E2E_BIN_DIR"], "ralph-hooks"), "validate", path],
                          capture_output=True, text=True)
check(validate.returncode == 0, "ralph-hooks validate accepts the file on disk", validate.stdout + validate.stderr)
check.finish()
