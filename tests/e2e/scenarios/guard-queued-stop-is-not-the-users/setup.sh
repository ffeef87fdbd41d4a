# Plain mode (no sandbox): a loop runs unattended with a promise not yet given.
ralph-hooks loop start "E2E-GOAL: fix the parser" --promise "PARSER FIXED" --no-diagnostics
