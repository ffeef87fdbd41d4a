# Plain mode. Claude Code runs with CLAUDE_CONFIG_DIR, so the user settings
# it reads are $CLAUDE_CONFIG_DIR/settings.json (not ~/.claude/settings.json).
mkdir -p "$HOME/cc-config"
echo '{}' > "$HOME/cc-config/settings.json"
ralph-hooks loop start "E2E-GOAL: tidy the docs" --promise "DOCS TIDY" --no-diagnostics
