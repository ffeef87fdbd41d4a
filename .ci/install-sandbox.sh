#!/usr/bin/env bash
# Installs what Claude Code's sandbox needs on Linux (bubblewrap and socat),
# for the sandbox-mode tests (`ralph-hooks install --sandbox`) and the e2e
# scenarios that run the real CLI with the sandbox on. Idempotent; runs as
# root on a possibly fresh Debian machine (CI=true) or as a developer.
set -euo pipefail

log() { printf 'install-sandbox: %s\n' "$*"; }
have() { command -v "$1" >/dev/null 2>&1; }

missing=()
have bwrap || missing+=(bubblewrap)
have socat || missing+=(socat)
if [ "${#missing[@]}" = 0 ]; then
  log "bubblewrap and socat are there"
  exit 0
fi
if ! have apt-get; then
  log "no apt-get: install ${missing[*]} by hand"
  exit 0
fi
as_root() {
  if [ "$(id -u)" = 0 ]; then "$@"; elif have sudo; then sudo "$@"; else
    log "cannot run as root: $*"; return 1
  fi
}
log "installing ${missing[*]}"
as_root apt-get update -qq
DEBIAN_FRONTEND=noninteractive as_root apt-get install -y -qq --no-install-recommends "${missing[@]}"
