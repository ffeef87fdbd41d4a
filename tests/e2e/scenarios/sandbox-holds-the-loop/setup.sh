# Sandbox mode on, a git project whose `origin` is a local bare repository,
# a loop running unattended and a task with two steps.
ralph-hooks install --sandbox
git init -q -b main
git -c user.name=e2e -c user.email=e2e@example.com add app.py test_app.py
git -c user.name=e2e -c user.email=e2e@example.com commit -q -m start
git init -q --bare "$E2E_OUT/origin.git"
git remote add origin "$E2E_OUT/origin.git"
git push -q origin main
git rev-parse origin/main > "$E2E_OUT/origin-before.txt"
ralph-hooks loop start "E2E-GOAL: tidy the project" --promise "TIDY" --check "python3 check_tidy.py" --max-iterations 6 --no-diagnostics
ralph-hooks task start "tidy the project"
ralph-hooks task steps set "look around" "tidy up"
# What the agent must not change, as it is before the session.
cp .claude/settings.json "$E2E_OUT/settings-before.json"
cp "$E2E_STATE/loop.json" "$E2E_OUT/loop-before.json"
