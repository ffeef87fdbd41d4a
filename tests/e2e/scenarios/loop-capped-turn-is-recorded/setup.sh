# A plain loop whose model only talks: Claude Code counts Stop blocks in a
# row without a tool call between them, and overrides the 9th (its cap, 8).
# The check appends to a file, so the loop never looks stagnant (no change
# between iterations) before the cap is met.
git init -q
ralph-hooks loop start "E2E-GOAL: ship the widget" --check "echo x >> stamp.txt; test -f shipped.txt" --max-iterations 20 --no-diagnostics
