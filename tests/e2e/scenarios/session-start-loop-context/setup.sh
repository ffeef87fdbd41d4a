# A loop is already running when the session starts, started from a shell
# outside Claude Code, so it belongs to no session yet.
ralph-hooks loop start "E2E-GOAL: ship the widget" --promise "WIDGET SHIPPED" --max-iterations 3
