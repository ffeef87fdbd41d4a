# The plugin installed at project scope, then uninstalled with the real CLI.
# A loop is running (started from a shell), so any Stop hook of ours that
# still ran would block the stop and ask the mock for a turn it does not have.
repo=$(cd "$E2E_SCENARIO/../../../.." && pwd)
"$E2E_CLAUDE" plugin marketplace add "$repo" --scope project --json > "$E2E_OUT/marketplace-add.json"
"$E2E_CLAUDE" plugin install ralph-hooks@ralph-hooks --scope project --json > "$E2E_OUT/plugin-install.json"
"$E2E_CLAUDE" plugin uninstall ralph-hooks@ralph-hooks --scope project --json > "$E2E_OUT/plugin-change.json"
ralph-hooks loop start "E2E-GOAL: must not be enforced" --promise "NEVER" --max-iterations 3
