"""The real Claude Code CLI with telemetry on: it strips OTEL_* from the
hooks' environment, so the exporter a hook starts finds the collector in
Claude Code's own environment ($CLAUDE_PID). The loop's iteration and
completion arrive as OTLP log records with the loop id, Claude Code's
session id and the prompt id Claude Code gave the hook; the loop_started
event, logged before telemetry was on, never does."""

import json
import os
import signal
import subprocess
import sys
import time

from e2e_check import Checks, Run

run = Run(sys.argv[1])
check = Checks()
check(run.ended_normally(), "claude ended the run normally", run.result)


def records():
    found = []
    path = os.path.join(run.out, "otlp.jsonl")
    if not os.path.exists(path):
        return found
    for line in open(path, encoding="utf-8"):
        request = json.loads(line)
        if not request["path"].endswith("/v1/logs"):
            continue
        for resource_logs in json.loads(request["body"]).get("resourceLogs", []):
            resource = {a["key"]: a["value"].get("stringValue") for a in resource_logs["resource"].get("attributes", [])}
            for scope in resource_logs.get("scopeLogs", []):
                for record in scope.get("logRecords", []):
                    attrs = {a["key"]: a["value"].get("stringValue", a["value"].get("intValue")) for a in record.get("attributes", [])}
                    found.append((resource, attrs))
    return found


deadline = time.time() + 15
while time.time() < deadline:
    ours = [attrs for resource, attrs in records() if resource.get("service.name") == "ralph-hooks"]
    if {"loop_iteration", "loop_completed"} <= {a.get("event.name") for a in ours}:
        break
    time.sleep(0.2)

ours = [attrs for resource, attrs in records() if resource.get("service.name") == "ralph-hooks"]
events = {a.get("event.name"): a for a in ours}
loop = run.state_json("loop.json") or {}
check("loop_iteration" in events and "loop_completed" in events, "the iteration and the completion reached the collector", sorted(events))
check("loop_started" not in events, "the event logged while telemetry was off was not sent", sorted(events))
for name in ("loop_iteration", "loop_completed"):
    record = events.get(name, {})
    check.equal(record.get("ralph.loop.id"), loop.get("id"), name + " carries the loop id")
    check.equal(record.get("session.id"), run.session_id, name + " carries Claude Code's session id")
    check(bool(record.get("prompt.id")), name + " carries the prompt id Claude Code gave the hook", record)

# Claude Code's own records reach the same collector: the prompt id on ours
# is the prompt.id on its events, so a backend can join them.
theirs = {attrs.get("prompt.id") for resource, attrs in records() if resource.get("service.name") == "claude-code"}
check(events.get("loop_iteration", {}).get("prompt.id") in theirs,
      "the iteration's prompt.id is the prompt.id on Claude Code's own events", sorted(p for p in theirs if p))

# Nothing of ours is left running: stop the exporter, then the receiver.
subprocess.run(["ralph-hooks", "--project", run.project, "telemetry", "stop"], check=False,
               env=dict(os.environ, RALPH_HOOKS_STATE_DIR=run.state_root))
try:
    os.kill(int(open(os.path.join(run.out, "receiver.pid")).read()), signal.SIGTERM)
except (OSError, ValueError):
    pass
check.finish()
