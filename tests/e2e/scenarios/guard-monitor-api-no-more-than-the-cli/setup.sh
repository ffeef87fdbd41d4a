# Plain mode: a task with open steps continues unattended, and the user's
# dashboard (`ralph-hooks monitor`) runs on loopback; its token is in the
# state root's monitor.json, which the agent can read. The monitor dies on
# its own after a while, should check.py not get to stop it.
ralph-hooks task start "E2E-GOAL: ship the widget"
ralph-hooks task steps set "write the widget" "test the widget" "ship the widget"
nohup timeout 300 ralph-hooks monitor --port 0 > "$E2E_OUT/monitor.txt" 2>&1 < /dev/null &
for i in $(seq 1 100); do [ -s .claude/orchestrator/monitor.json ] && break; sleep 0.1; done
test -s .claude/orchestrator/monitor.json
