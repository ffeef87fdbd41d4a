#!/usr/bin/env bash
# Installs the other agent harnesses' CLIs that the harness end-to-end tests
# (tests/harness_e2e.rs) drive offline against a scripted mock of their model
# API on loopback.
#
#   Codex CLI: @openai/codex (override the version: CODEX_VERSION). It reads
#   a custom model provider with a loopback base_url from its config.toml,
#   so it can run with no network at all.
#
#   Gemini CLI: @google/gemini-cli (override: GEMINI_CLI_VERSION). An API key
#   sign-in takes its base URL from GOOGLE_GEMINI_BASE_URL, which may be a
#   loopback one.
#
#   Copilot CLI: @github/copilot (override: COPILOT_CLI_VERSION). Its offline
#   mode (COPILOT_OFFLINE=true) takes a custom model provider from
#   COPILOT_PROVIDER_BASE_URL, with no GitHub sign-in.
#
#   Not installed: Cursor's agent does not install from npm.
#
#   Prefix: $RALPH_HOOKS_HARNESS_PREFIX, default $HOME/.cache/ralph-hooks/harnesses;
#   the binaries end up in <prefix>/node_modules/.bin/, where the tests look
#   when $CODEX_BIN / $GEMINI_BIN / $COPILOT_BIN is not set.
#
# Idempotent: a version already there is kept. Prints each binary's path.
set -euo pipefail

codex_version="${CODEX_VERSION:-0.169.0}"
gemini_version="${GEMINI_CLI_VERSION:-0.61.0}"
copilot_version="${COPILOT_CLI_VERSION:-1.0.102}"
prefix="${RALPH_HOOKS_HARNESS_PREFIX:-${HOME:?HOME is not set}/.cache/ralph-hooks/harnesses}"
codex="$prefix/node_modules/.bin/codex"
gemini="$prefix/node_modules/.bin/gemini"
copilot="$prefix/node_modules/.bin/copilot"

if ! command -v npm >/dev/null 2>&1; then
  echo "install-harnesses: npm is not on PATH; install Node.js and npm first" >&2
  exit 1
fi

mkdir -p "$prefix"
if [ -x "$codex" ] && "$codex" --version 2>/dev/null | grep -q "$codex_version"; then
  echo "codex $codex_version already installed in $prefix" >&2
else
  echo "installing @openai/codex@$codex_version into $prefix" >&2
  npm install --prefix "$prefix" --no-audit --no-fund --loglevel=error \
    --engine-strict=false "@openai/codex@$codex_version" >&2
fi
if [ -x "$gemini" ] && [ "$("$gemini" --version 2>/dev/null)" = "$gemini_version" ]; then
  echo "gemini $gemini_version already installed in $prefix" >&2
else
  echo "installing @google/gemini-cli@$gemini_version into $prefix" >&2
  npm install --prefix "$prefix" --no-audit --no-fund --loglevel=error \
    --engine-strict=false "@google/gemini-cli@$gemini_version" >&2
fi
if [ -x "$copilot" ] && COPILOT_AUTO_UPDATE=false "$copilot" --version 2>/dev/null | grep -q "$copilot_version"; then
  echo "copilot $copilot_version already installed in $prefix" >&2
else
  echo "installing @github/copilot@$copilot_version into $prefix" >&2
  npm install --prefix "$prefix" --no-audit --no-fund --loglevel=error \
    --engine-strict=false "@github/copilot@$copilot_version" >&2
fi
"$codex" --version >&2
"$gemini" --version >&2
COPILOT_AUTO_UPDATE=false "$copilot" --version >&2
echo "$codex"
echo "$gemini"
echo "$copilot"
