# A --rewake loop: the asyncRewake Stop hook lets each turn end and wakes
# the session with the follow-up, so Claude Code's block cap (8 blocks in a
# row without a tool call between them) never ends it. The model only
# talks until the last turn; the check appends to a file so the loop never
# looks stagnant meanwhile.
git init -q
ralph-hooks loop start "E2E-GOAL: ship the widget" --check "echo x >> stamp.txt; test -f shipped.txt" --max-iterations 20 --no-diagnostics --rewake
