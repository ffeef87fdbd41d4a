# A git project whose `origin` is a local bare repository, one commit
# ahead of it, and a loop running unattended.
git init -q -b main
git -c user.name=e2e -c user.email=e2e@example.com commit -q --allow-empty -m start
git init -q --bare "$E2E_OUT/origin.git"
git remote add origin "$E2E_OUT/origin.git"
git push -q origin main
echo feature > feature.txt
git add feature.txt
git -c user.name=e2e -c user.email=e2e@example.com commit -q -m feature
ralph-hooks loop start "E2E-GOAL: ship it" --promise "SHIPPED" --no-diagnostics
