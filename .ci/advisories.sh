#!/usr/bin/env bash
# Checks the locked dependencies against the RustSec advisory database with
# `cargo deny check advisories` (deny.toml). The database is a git repository;
# when it cannot be reached (a machine without access to it) the check says
# loudly that it did not run, and fails only when RALPH_HOOKS_REQUIRE_ADVISORIES=1.
set -euo pipefail
cd "$(dirname "$0")/.."

db_url=https://github.com/rustsec/advisory-db
if ! timeout 30 git ls-remote --exit-code "$db_url" HEAD >/dev/null 2>&1; then
  echo "ADVISORIES NOT CHECKED: the RustSec database ($db_url) cannot be reached from this machine."
  if [ "${RALPH_HOOKS_REQUIRE_ADVISORIES:-0}" = 1 ]; then
    exit 1
  fi
  exit 0
fi
if ! command -v cargo-deny >/dev/null 2>&1; then
  cargo install --locked cargo-deny
fi
cargo deny --locked check advisories
