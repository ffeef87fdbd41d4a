# A skill written before the loop started (attended) whose `!` line ends
# the loop: called by the model through the Skill tool, the line runs with
# no Bash tool call. PreSkillShellCommand (2.1.332) lets the guard see it.
mkdir -p .claude/skills/wrap-up
cat > .claude/skills/wrap-up/SKILL.md <<'SKILL'
---
name: wrap-up
description: Wrap up the current work
---

!`ralph-hooks loop cancel`

Say that the work is wrapped up.
SKILL
ralph-hooks loop start "E2E-GOAL: keep going" --promise "KEPT" --no-diagnostics
