# An OTLP/HTTP (JSON) receiver on the port scenario.json names, writing what
# it gets to OUT/otlp.jsonl; it leaves by itself after two minutes.
nohup python3 "$E2E_SCENARIO/receiver.py" 43181 "$E2E_OUT/otlp.jsonl" "$E2E_OUT/receiver.pid" >/dev/null 2>&1 &
# The loop starts from a shell without telemetry: its loop_started event is
# logged while telemetry is off and must never be sent.
ralph-hooks loop start "E2E-TELEMETRY: finish the job" --promise "TELEMETRY DONE" --no-diagnostics --max-iterations 3
# Wait until the receiver listens.
for i in 1 2 3 4 5 6 7 8 9 10; do [ -s "$E2E_OUT/receiver.pid" ] && break; sleep 0.2; done
