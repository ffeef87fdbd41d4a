#!/usr/bin/env bash
# Installs the real Claude Code CLI that the end-to-end tests (tests/e2e/)
# drive offline against a scripted mock of the Messages API.
#
#   Version: @anthropic-ai/claude-code@2.1.332 (override: CLAUDE_CODE_VERSION).
#   Prefix:  $RALPH_HOOKS_CLAUDE_PREFIX, default $HOME/.cache/ralph-hooks/claude-code;
#            the binary ends up at <prefix>/node_modules/.bin/claude, which is
#            where tests/e2e.rs looks when $CLAUDE_BIN is not set.
#
# Idempotent: when the right version is already there it prints the path and
# returns at once. Prints the binary's path on its last line.
#
# Node 20 is enough: from 2.1.198 on the package declares engines node>=22,
# but the CLI is a native binary shipped in a platform package
# (@anthropic-ai/claude-code-linux-x64 and friends) and never runs under Node,
# so npm's EBADENGINE warning is harmless (engine-strict is turned off here in
# case a user config turned it on). The package's postinstall links the
# platform binary over bin/claude.exe; when install scripts are disabled
# (ignore-scripts), the .bin/claude link is pointed at the platform binary
# directly.
set -euo pipefail

version="${CLAUDE_CODE_VERSION:-2.1.332}"
prefix="${RALPH_HOOKS_CLAUDE_PREFIX:-${HOME:?HOME is not set}/.cache/ralph-hooks/claude-code}"
bin="$prefix/node_modules/.bin/claude"

installed_version() {
  "$1" --version 2>/dev/null | awk 'NR == 1 { print $1 }'
}

if [ -x "$bin" ] && [ "$(installed_version "$bin")" = "$version" ]; then
  echo "claude $version already installed in $prefix" >&2
  echo "$bin"
  exit 0
fi

if ! command -v npm >/dev/null 2>&1; then
  # A fresh Debian machine may lack npm; Debian's own is enough, since npm
  # only unpacks the package here.
  if [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null 2>&1; then
    echo "npm is missing: installing Debian's npm" >&2
    apt-get update -qq >&2
    DEBIAN_FRONTEND=noninteractive apt-get install -y -qq npm >&2
  else
    echo "install-claude: npm is not on PATH; install Node.js and npm first" >&2
    exit 1
  fi
fi

mkdir -p "$prefix"
echo "installing @anthropic-ai/claude-code@$version into $prefix" >&2
npm install --prefix "$prefix" --no-audit --no-fund --loglevel=error \
  --engine-strict=false "@anthropic-ai/claude-code@$version" >&2

if [ "$(installed_version "$bin")" != "$version" ]; then
  # The postinstall did not run (scripts disabled) or could not link the
  # native binary: point .bin/claude at the platform package's binary.
  linked=""
  for candidate in "$prefix"/node_modules/@anthropic-ai/claude-code-*/claude; do
    if [ -x "$candidate" ] && [ "$(installed_version "$candidate")" = "$version" ]; then
      mkdir -p "$(dirname "$bin")"
      ln -sfn "$candidate" "$bin"
      linked="$candidate"
      break
    fi
  done
  if [ -z "$linked" ]; then
    echo "install-claude: no working claude $version binary in $prefix (is this platform supported?)" >&2
    exit 1
  fi
  echo "install scripts did not link the binary; linked $linked" >&2
fi

echo "installed claude $(installed_version "$bin") in $prefix" >&2
echo "$bin"
