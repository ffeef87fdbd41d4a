# A loop is running when the API answers 429 (no retries in the e2e runs).
git init -q
ralph-hooks loop start "E2E-GOAL: ship the widget" --promise "WIDGET SHIPPED" --max-iterations 5 --no-diagnostics
