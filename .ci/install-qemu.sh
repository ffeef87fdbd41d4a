#!/usr/bin/env bash
# Installs what the aarch64 tests need on an x86_64 machine: the user-mode
# emulator (Debian's qemu-user-static), and the kernel's hand-over of aarch64
# executables to it (binfmt_misc), so that the aarch64 binaries run as they
# are, the programs they start included (tests/foreign_arch.rs, and the golden
# cases `.ci/run` runs against that build). Idempotent; runs as root on a
# possibly fresh Debian machine (CI=true) or as a developer. Nothing to do on
# an aarch64 machine.
set -euo pipefail

log() { printf 'install-qemu: %s\n' "$*"; }
have() { command -v "$1" >/dev/null 2>&1; }
as_root() {
  if [ "$(id -u)" = 0 ]; then "$@"; elif have sudo; then sudo "$@"; else
    log "cannot run as root: $*"; return 1
  fi
}

if [ "$(uname -m)" = aarch64 ]; then
  log "this machine is aarch64: nothing to emulate"
  exit 0
fi
if ! have qemu-aarch64-static; then
  if ! have apt-get; then
    log "no apt-get: install qemu-user-static by hand"
    exit 0
  fi
  log "installing qemu-user-static"
  as_root apt-get update -qq
  DEBIAN_FRONTEND=noninteractive as_root apt-get install -y -qq --no-install-recommends qemu-user-static
fi

# binfmt_misc: the flag F opens the emulator now, so it serves in every
# mount namespace (bubblewrap's too). Failing here is said, not fatal: the
# step that needs it says so again and fails there.
binfmt=/proc/sys/fs/binfmt_misc
if [ ! -e "$binfmt/register" ]; then
  as_root mount -t binfmt_misc binfmt_misc "$binfmt" 2>/dev/null \
    || log "cannot mount binfmt_misc at $binfmt (a container without the privilege?)"
fi
if [ -e "$binfmt/register" ] && [ ! -e "$binfmt/qemu-aarch64" ]; then
  magic='\x7fELF\x02\x01\x01\x00\x00\x00\x00\x00\x00\x00\x00\x00\x02\x00\xb7\x00'
  mask='\xff\xff\xff\xff\xff\xff\xff\x00\xff\xff\xff\xff\xff\xff\xff\xff\xfe\xff\xff\xff'
  printf '%s' ":qemu-aarch64:M::$magic:$mask:$(command -v qemu-aarch64-static):F" \
    | as_root tee "$binfmt/register" >/dev/null \
    || log "cannot register qemu-aarch64-static with binfmt_misc"
fi
if [ -e "$binfmt/qemu-aarch64" ]; then
  log "aarch64 executables run through $(sed -n 's/^interpreter //p' "$binfmt/qemu-aarch64")"
fi
