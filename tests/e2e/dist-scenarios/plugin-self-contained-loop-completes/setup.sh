# The self-contained plugin folder of `.ci/dist` (target/dist/plugin-<platform>/):
# the runner's --bin-dir is that plugin's bin/, so the marketplace is two
# folders up. Added and installed at project scope with the real CLI; its hook
# commands run "${CLAUDE_PLUGIN_ROOT}/bin/…", the binaries it carries.
market=$(cd "$E2E_BIN_DIR/../.." && pwd)
"$E2E_CLAUDE" plugin validate --strict "$market" > "$E2E_OUT/validate.txt" 2>&1
"$E2E_CLAUDE" plugin marketplace add "$market" --scope project --json > "$E2E_OUT/marketplace-add.json"
"$E2E_CLAUDE" plugin install ralph-hooks@ralph-hooks --scope project --json > "$E2E_OUT/plugin-install.json"
if ralph-hooks install --project "$E2E_PROJECT" > "$E2E_OUT/install-refused.txt" 2>&1; then
  echo "ralph-hooks install registered the hooks a second time"
  exit 1
fi
ralph-hooks doctor > "$E2E_OUT/doctor.txt" 2>&1 || true
