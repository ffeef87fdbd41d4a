# /cancel-loop as installed before it was made user-only: the model may
# call it through the Skill tool, so only the guard stands in the way.
sed -i '/^disable-model-invocation: true$/d' .claude/commands/cancel-loop.md
ralph-hooks loop start "E2E-GOAL: keep going" --promise "KEPT" --no-diagnostics
