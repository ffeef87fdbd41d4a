#!/usr/bin/env bash
# Installs the language servers (and ast-grep) that the real-server tests of
# the diagnostics hook drive: pyright, ruff, ty, pyrefly,
# typescript-language-server with TypeScript 5 (TypeScript 7 ships no
# tsserver), TypeScript 7 in a cached test project (its own `tsc --lsp`),
# clangd, rust-analyzer, gopls and ast-grep; and the real code the parity
# tests check (the rxjs 7.8.1 npm package's sources). Idempotent and quick
# when everything is already there; runs as root on a possibly fresh Debian
# machine (CI=true) or as a developer.
#
# Tools land in `$HOME/.local/bin` (pip --user), npm's global bin and
# `$HOME/.cargo/bin`; `.ci/run` puts those on PATH after running this.
set -euo pipefail

log() { printf 'install-servers: %s\n' "$*"; }
# One failed install must not stop the others: the tests that need the
# missing tool then fail by name (RALPH_HOOKS_REQUIRE_SERVERS=1), which says
# more than an aborted install step.
try() { "$@" || log "FAILED: $*"; }
have() { command -v "$1" >/dev/null 2>&1; }
export PATH="$HOME/.local/bin:$HOME/.cargo/bin:$PATH"

as_root() {
  if [ "$(id -u)" = 0 ]; then "$@"; elif have sudo; then sudo "$@"; else
    log "cannot run as root: $*"; return 1
  fi
}

apt_updated=0
apt_install() {
  if ! have apt-get; then
    log "no apt-get: install $* by hand"
    return 1
  fi
  if [ "$apt_updated" = 0 ]; then
    as_root apt-get update -qq
    apt_updated=1
  fi
  DEBIAN_FRONTEND=noninteractive as_root apt-get install -y -qq --no-install-recommends "$@"
}

# --- node and npm (pyright, typescript-language-server) ---
if ! have npm; then
  log "installing nodejs and npm"
  apt_install nodejs npm
fi
npm_bin="$(npm prefix -g)/bin"
export PATH="$npm_bin:$PATH"

npm_global_has() {
  # `npm ls -g <pkg>` prints the installed version; grep for the wanted major.
  npm ls -g --depth=0 "$1" 2>/dev/null | grep -q "$1@$2"
}

if have pyright-langserver; then
  log "pyright: present ($(pyright --version 2>/dev/null || echo installed))"
else
  log "installing pyright"
  try npm install -g --no-fund --no-audit pyright
fi

if have typescript-language-server; then
  log "typescript-language-server: present ($(typescript-language-server --version))"
else
  log "installing typescript-language-server"
  try npm install -g --no-fund --no-audit typescript-language-server
fi

# TypeScript 7 is the Go-native compiler and has no tsserver.js, which
# typescript-language-server needs; the tests link this global TypeScript 5
# into their throwaway projects.
if npm_global_has typescript 5.; then
  log "typescript@5: present"
else
  log "installing typescript@5"
  try npm install -g --no-fund --no-audit typescript@5
fi

# tsc (typescript@5's compiler) is the reference of the `ralph-hooks check`
# parity test; the global typescript@5 above puts it in npm's bin.
if have tsc; then
  log "tsc: present ($(tsc --version))"
else
  log "installing typescript@5 for tsc"
  try npm install -g --no-fund --no-audit typescript@5
fi

# --- python tools (ruff, ast-grep) ---
python=""
for candidate in python3 python; do
  if have "$candidate"; then python="$candidate"; break; fi
done
if [ -z "$python" ]; then
  log "installing python3"
  apt_install python3 python3-pip
  python=python3
fi
if ! "$python" -m pip --version >/dev/null 2>&1; then
  log "installing pip"
  apt_install python3-pip
fi
pip_install() {
  # Debian marks its Python as externally managed; a --user install of a
  # self-contained tool binary is what we want here.
  PIP_BREAK_SYSTEM_PACKAGES=1 "$python" -m pip install --user --quiet --disable-pip-version-check "$@"
}

if have ruff; then
  log "ruff: present ($(ruff --version))"
else
  log "installing ruff"
  try pip_install ruff
fi

# ty and pyrefly: Python's fast checkers, each with its language server.
if have ty; then
  log "ty: present ($(ty --version))"
else
  log "installing ty"
  try pip_install ty
fi
if have pyrefly; then
  log "pyrefly: present ($(pyrefly --version))"
else
  log "installing pyrefly"
  try pip_install pyrefly
fi

# `sg` is also shadow-utils' "execute as group"; only `ast-grep` is trusted.
if have ast-grep && ast-grep --version 2>/dev/null | grep -qi ast-grep; then
  log "ast-grep: present ($(ast-grep --version))"
else
  log "installing ast-grep"
  try pip_install ast-grep-cli
fi

# --- clangd ---
if have clangd; then
  log "clangd: present ($(clangd --version | head -n 1))"
else
  log "installing clangd"
  try apt_install clangd
fi

# --- rust-analyzer ---
# `~/.cargo/bin/rust-analyzer` is a rustup proxy that exists even when the
# component is missing, so ask it for its version rather than checking PATH.
if rust-analyzer --version >/dev/null 2>&1; then
  log "rust-analyzer: present ($(rust-analyzer --version))"
elif have rustup; then
  log "installing rust-analyzer"
  try rustup component add rust-analyzer
else
  log "no rustup: install rust-analyzer by hand"
fi

# --- gopls (and the Go toolchain it needs) ---
# Debian's packages: old (Go 1.19, gopls 0.5) but enough for references and
# rename, and a 16 s install instead of building gopls from source.
if have gopls && have go; then
  log "gopls: present"
else
  log "installing golang-go and gopls"
  try apt_install golang-go gopls
fi

# --- TypeScript 7 and the TypeScript corpus, cached for the tests ---
# TypeScript 7 is installed the way a project installs it (a package in the
# project's node_modules), here into a cache folder the tests link into their
# throwaway projects; the rxjs sources are real code for the parity tests
# (tests never touch the network).
cache="${RALPH_HOOKS_TEST_CACHE:-$HOME/.cache/ralph-hooks}"
ts7="$cache/typescript7"
if [ -x "$ts7/node_modules/.bin/tsc" ] && "$ts7/node_modules/.bin/tsc" --version 2>/dev/null | grep -q "Version 7"; then
  log "typescript@7 (test project): present ($("$ts7/node_modules/.bin/tsc" --version))"
else
  log "installing typescript@7 into $ts7"
  mkdir -p "$ts7"
  try npm install --prefix "$ts7" --no-audit --no-fund --loglevel=error typescript@7
fi
rxjs="$cache/corpus/rxjs-7.8.1"
if [ -f "$rxjs/src/index.ts" ]; then
  log "rxjs 7.8.1 sources: present"
else
  log "fetching the rxjs 7.8.1 package (sources for the TypeScript parity tests)"
  mkdir -p "$cache/corpus"
  tmp="$(mktemp -d)"
  if (cd "$tmp" && npm pack --silent rxjs@7.8.1 >/dev/null 2>&1) && tar xzf "$tmp"/rxjs-7.8.1.tgz -C "$tmp"; then
    rm -rf "$rxjs" && mv "$tmp/package" "$rxjs"
  else
    log "FAILED: npm pack rxjs@7.8.1"
  fi
  rm -rf "$tmp"
fi

log "done"
