"""The plugin route switched off: after `claude plugin uninstall` (project
scope), a session runs none of our hooks although a loop is running, and
`ralph-hooks doctor` no longer sees an active plugin."""

import json
import os
import subprocess
import sys

from e2e_check import Checks, Run

run = Run(sys.argv[1])
check = Checks()

with open(os.path.join(run.out, "plugin-change.json"), encoding="utf-8") as file:
    changed = json.load(file)
check.equal((changed.get("command"), changed.get("outcome")), ("uninstall", "ok"), "`claude plugin uninstall` succeeded")
check(run.ended_normally(), "claude ended the run normally", run.result)
check.equal(len(run.calls), 1, "one main-loop call: no Stop hook blocked the stop")
ours = [hook for hook in run.hook_runs() if "ralph-" in hook["command"]]
check.equal(ours, [], "no hook of ours ran")

settings = json.loads(run.project_file(".claude/settings.json") or "{}")
check(settings.get("enabledPlugins", {}).get("ralph-hooks@ralph-hooks") in (None, False), "the plugin is not enabled", settings)
state = run.state_json("loop.json") or {}
check.equal((state.get("status"), state.get("iteration")), ("RUNNING", 0), "the loop was left alone: still running, no iteration counted")

doctor = subprocess.run(["ralph-hooks", "doctor"], cwd=run.project, capture_output=True, text=True,
                        env=dict(os.environ, HOME=run.home)).stdout
check.contains(doctor, "no route active", "doctor sees no active route")
check.finish()
