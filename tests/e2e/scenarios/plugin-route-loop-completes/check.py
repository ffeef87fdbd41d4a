"""The plugin route end to end: this repository added as a marketplace and
the ralph-hooks plugin installed at project scope by the real CLI, a Ralph
loop then runs to completion through the plugin's hooks (none registered in
settings.json by `ralph-hooks install`, which refused), and doctor names the
plugin as the active route."""

import json
import os
import sys

from e2e_check import Checks, Run

run = Run(sys.argv[1])
check = Checks()


def out_file(name):
    with open(os.path.join(run.out, name), encoding="utf-8") as file:
        return file.read()


check.contains(out_file("validate.txt"), "Validation passed", "`claude plugin validate --strict` passes on the repository")
added = json.loads(out_file("marketplace-add.json"))
check.equal((added.get("outcome"), added.get("marketplace")), ("ok", "ralph-hooks"), "the repository was added as the marketplace ralph-hooks")
installed = json.loads(out_file("plugin-install.json"))
check.equal((installed.get("outcome"), installed.get("scope")), ("ok", "project"), "the plugin was installed at project scope")

settings = json.loads(run.project_file(".claude/settings.json") or "{}")
check.equal(settings.get("enabledPlugins"), {"ralph-hooks@ralph-hooks": True}, "the project's settings enable the plugin")
check("hooks" not in settings, "no hooks of ours in settings.json: they are the plugin's", settings)
refused = out_file("install-refused.txt")
check.contains(refused, "refusing to register", "`ralph-hooks install` refused to register the hooks twice")
check.contains(refused, "ralph-hooks@ralph-hooks", "the refusal names the plugin")
check.contains(out_file("doctor.txt"), "ok    plugin: the plugin ralph-hooks@ralph-hooks", "doctor reports the plugin route")

check(run.ended_normally(), "claude ended the run normally", run.result)
check.equal(len(run.calls), 4, "four main-loop calls: start the loop, stop, fix, stop")
check.contains(run.new_text(2), "Stop hook feedback", "the first stop was blocked by the plugin's Stop hook")
check.contains(run.new_text(2), "E2E-CHECK-FAILING: done.txt is missing", "the follow-up prompt carries the failing check's output")

stops = [hook for hook in run.hook_runs("Stop") if not hook["command"].endswith("--rewake")]
check.equal([(stop["command"], stop.get("plugin"), stop["status"]) for stop in stops],
            [("ralph-stop-loop-controller", "ralph-hooks@ralph-hooks", 0)] * 2,
            "the plugin's Stop hook (its command as hooks-config/hooks/hooks.json has it) ran twice and exited 0")
starts = run.hook_runs("SessionStart")
check.equal([(hook["command"], hook.get("plugin")) for hook in starts], [("ralph-session-start", "ralph-hooks@ralph-hooks")],
            "the plugin's SessionStart hook ran once")
check.equal([hook for hook in run.hook_runs() if "ralph-" in hook["command"] and hook.get("plugin") != "ralph-hooks@ralph-hooks"], [],
            "every hook of ours that ran was the plugin's")

state = run.state_json("loop.json") or {}
check.equal(state.get("status"), "COMPLETED", "loop.json says COMPLETED")
check.equal(state.get("completion_reason"), "conditions_met", "the completion reason is conditions_met")
check.equal(run.project_file("done.txt"), "done\n", "the model's fix is on disk")
check.finish()
