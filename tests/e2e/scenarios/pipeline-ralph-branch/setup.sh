# A git repository with one commit and a test that fails until greet.py exists.
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
