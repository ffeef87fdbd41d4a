# Sandbox mode on: the state is read-only to every Bash command and slash-command line.
ralph-hooks install --sandbox
ralph-hooks loop start "E2E-GOAL: tidy up" --promise "TIDY" --max-iterations 5 --no-diagnostics
