# A --rewake loop: the asyncRewake Stop hook lets each turn end and wakes
# the session with the follow-up, so Claude Code's block cap (8) never ends it.
git init -q
ralph-hooks loop start "E2E-GOAL: ship the widget" --promise "WIDGET SHIPPED" --max-iterations 20 --no-diagnostics --rewake
