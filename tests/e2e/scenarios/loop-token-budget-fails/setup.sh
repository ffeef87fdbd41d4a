# A loop with a token budget of 20,000; each mock turn reports 9,100 tokens.
git init -q
ralph-hooks loop start "E2E-GOAL: ship the widget" --promise "WIDGET SHIPPED" --max-tokens 20000 --max-iterations 10 --no-diagnostics
