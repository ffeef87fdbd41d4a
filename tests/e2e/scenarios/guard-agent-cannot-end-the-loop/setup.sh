# A loop running unattended, started before the session.
ralph-hooks loop start "E2E-GOAL: tidy up" --promise "TIDY" --max-iterations 5 --no-diagnostics
