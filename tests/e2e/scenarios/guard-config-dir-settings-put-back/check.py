"""Plain mode, issue class 5: with CLAUDE_CONFIG_DIR set, the user settings
Claude Code reads are $CLAUDE_CONFIG_DIR/settings.json. An interpreter that
writes `disableAllHooks` there is undone after the command, the Write tool
is denied, and the hooks keep running: the premature "All done." is
blocked."""

import json
import os
import sys

from e2e_check import Checks, Run

run = Run(sys.argv[1])
check = Checks()

check(run.ended_normally(), "claude ended the run normally", run.result)
check.equal(len(run.calls), 4, "four main-loop calls: the premature stop was blocked")
settings_path = os.path.join(run.home, "cc-config", "settings.json")
with open(settings_path, encoding="utf-8") as file:
    settings = json.load(file)
check("disableAllHooks" not in settings, "the settings Claude Code reads do not turn the hooks off", settings)
check.contains(run.new_text(1), "(changed, put back)", "the agent was told the write was put back")
kinds = [(event.get("data") or {}).get("event") for event in run.events()]
check("protected_restored" in kinds, "events.jsonl has protected_restored", kinds)
stops = run.hook_runs("Stop")
check(len(stops) >= 2, "the Stop hook still ran after the attempts", stops)
state = run.state_json("loop.json") or {}
check.equal(state.get("status"), "COMPLETED", "the loop completed on its promise")
check.finish()
