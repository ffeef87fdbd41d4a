#!/usr/bin/env bash
# Installs the shells whose completion scripts the CLI tests load: bash, zsh
# and fish (`ralph-hooks completions bash|zsh|fish`), and binutils' `nm`, with
# which the tests read the hook binaries' symbols. Idempotent and quick when
# they are already there; runs as root on a possibly fresh Debian machine
# (CI=true) or as a developer.
set -euo pipefail

log() { printf 'install-shells: %s\n' "$*"; }
have() { command -v "$1" >/dev/null 2>&1; }

as_root() {
  if [ "$(id -u)" = 0 ]; then "$@"; elif have sudo; then sudo "$@"; else
    log "cannot run as root: $*"; return 1
  fi
}

missing=()
for tool in bash zsh fish; do
  have "$tool" || missing+=("$tool")
done
have nm || missing+=(binutils)

if [ "${#missing[@]}" = 0 ]; then
  log "bash, zsh, fish and nm are there"
  exit 0
fi
if ! have apt-get; then
  log "no apt-get: install ${missing[*]} by hand"
  exit 0
fi
log "installing ${missing[*]}"
# A failed install must not stop CI here: the completion tests then fail by
# name (RALPH_HOOKS_REQUIRE_SERVERS=1), which says more.
as_root apt-get update -qq || log "FAILED: apt-get update"
DEBIAN_FRONTEND=noninteractive as_root apt-get install -y -qq --no-install-recommends \
  "${missing[@]}" || log "FAILED: apt-get install ${missing[*]}"
