ralph-hooks loop start "E2E-GOAL: subagents too" --promise "SUBAGENTS DONE" --no-diagnostics
# A probe hook logs every payload Claude Code sends to tool and prompt hooks.
cat > "$E2E_OUT/probe-hook.sh" <<PROBE
#!/bin/sh
cat >> "$E2E_OUT/payloads.jsonl"
echo >> "$E2E_OUT/payloads.jsonl"
PROBE
chmod +x "$E2E_OUT/probe-hook.sh"
python3 "$E2E_SCENARIO/../../add_probe_hook.py" "$E2E_OUT/probe-hook.sh"
