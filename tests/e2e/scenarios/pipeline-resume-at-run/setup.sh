# A pipeline interrupted after its plan phase: the plan saved its result,
# then the session ended before `pipeline next` moved the pipeline on.
git init -q
git config user.email e2e@example.com
git config user.name e2e
printf '.claude/orchestrator/\n' > .gitignore
cat > test_greet.py <<'PY'
from greet import greet
assert greet("Ada") == "Hello, Ada!", greet("Ada")
print("ok")
PY
git add -A
git commit -qm init
ralph-hooks pipeline start "add a greet function" > /dev/null
printf '# SPEC-ADD-GREET-FUNCTION-001\nTest command: python3 test_greet.py\n' > .claude/plans/SPEC-ADD-GREET-FUNCTION-001.md
ralph-hooks resume phase plan --output spec_id=SPEC-ADD-GREET-FUNCTION-001 \
  --output summary="greet(name) returns a greeting" --output test_command="python3 test_greet.py" \
  --output-path plan_file=.claude/plans/SPEC-ADD-GREET-FUNCTION-001.md \
  --file .claude/plans/SPEC-ADD-GREET-FUNCTION-001.md --next run > /dev/null
