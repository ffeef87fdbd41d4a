# Plain mode. The agent's command leaves a process behind that writes
# `disableAllHooks` into the project's local settings a few seconds later,
# after the command's own check has run.
ralph-hooks loop start "E2E-GOAL: tidy the docs" --promise "DOCS TIDY" --no-diagnostics
