# The plugin route, as a user takes it: this repository is the marketplace;
# `claude plugin marketplace add` + `claude plugin install` at project scope,
# non-interactively. The plugin's hooks run the binaries on PATH (the built
# ones here; pipx, uv tool, npm or cargo for a user). `ralph-hooks install`
# must then refuse to register the same hooks again, and `doctor` must name
# the plugin route.
repo=$(cd "$E2E_SCENARIO/../../../.." && pwd)
"$E2E_CLAUDE" plugin validate --strict "$repo" > "$E2E_OUT/validate.txt" 2>&1
"$E2E_CLAUDE" plugin marketplace add "$repo" --scope project --json > "$E2E_OUT/marketplace-add.json"
"$E2E_CLAUDE" plugin install ralph-hooks@ralph-hooks --scope project --json > "$E2E_OUT/plugin-install.json"
if ralph-hooks install --project "$E2E_PROJECT" > "$E2E_OUT/install-refused.txt" 2>&1; then
  echo "ralph-hooks install registered the hooks a second time"
  exit 1
fi
ralph-hooks doctor > "$E2E_OUT/doctor.txt" 2>&1 || true
