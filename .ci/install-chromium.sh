#!/usr/bin/env bash
# Installs headless Chromium (Debian package `chromium`) for the monitor's
# browser test (tests/monitor_browser.rs drives it over the DevTools
# protocol). Idempotent and quick when it is already there; runs as root on
# a possibly fresh Debian machine (CI=true) or as a developer (sudo).
set -euo pipefail

log() { printf 'install-chromium: %s\n' "$*"; }
have() { command -v "$1" >/dev/null 2>&1; }

if [ -x /usr/bin/chromium ]; then
  log "chromium: present ($(/usr/bin/chromium --version 2>/dev/null | head -1 || echo installed))"
  exit 0
fi
if ! have apt-get; then
  log "no apt-get: install chromium by hand (the browser test fails under RALPH_HOOKS_REQUIRE_SERVERS=1 without it)"
  exit 0
fi
as_root() {
  if [ "$(id -u)" = 0 ]; then "$@"; elif have sudo; then sudo "$@"; else
    log "cannot run as root: $*"; return 1
  fi
}
log "installing chromium"
as_root apt-get update -qq || log "apt-get update failed"
# Fonts: without any, the screenshots show boxes instead of text.
DEBIAN_FRONTEND=noninteractive as_root apt-get install -y -qq --no-install-recommends \
  chromium fonts-dejavu-core || log "FAILED: apt-get install chromium"
