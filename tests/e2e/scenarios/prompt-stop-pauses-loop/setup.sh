# A loop is running (started from a shell, so no session owns it yet) when
# the user's prompt is "stop".
ralph-hooks loop start "E2E-GOAL: ship the widget" --promise "WIDGET SHIPPED" --max-iterations 5
