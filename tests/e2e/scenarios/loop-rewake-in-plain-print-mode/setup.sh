# A --rewake loop in plain `claude -p` (stdin closed): Claude Code does not
# background the asyncRewake Stop hook there, and its exit 2 is an ordinary
# blocking Stop, so the loop still works.
git init -q
ralph-hooks loop start "E2E-GOAL: ship the widget" --check "echo x >> stamp.txt; test -f shipped.txt" --max-iterations 20 --no-diagnostics --rewake
