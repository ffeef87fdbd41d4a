#!/usr/bin/env bash
# Installs what `.ci/dist` and the install-route tests (tests/dist.rs) need,
# from PyPI into one venv, $RALPH_HOOKS_DIST_TOOLS_VENV (default
# ~/.cache/ralph-hooks/dist-tools; its bin/ is where .ci/dist and the tests
# look first):
#   maturin         builds the wheel (the six binaries, `bindings = "bin"`)
#   ziglang         the linker maturin --zig uses for static musl cross builds
#   uv, pipx        the `uv tool install` and `pipx install` routes under test
# and the Rust std of the musl targets (rustup) for the portable builds.
# Idempotent: quick when everything is there.
set -euo pipefail

venv="${RALPH_HOOKS_DIST_TOOLS_VENV:-${HOME:?HOME is not set}/.cache/ralph-hooks/dist-tools}"
packages=(maturin==1.16.0 ziglang==0.17.1 uv==0.13.9 pipx==1.18.4)

if [ ! -x "$venv/bin/python" ]; then
  python3 -m venv "$venv"
fi
if ! "$venv/bin/maturin" --version 2>/dev/null | grep -q '1.16.0' \
  || ! "$venv/bin/python" -m ziglang version >/dev/null 2>&1 \
  || [ ! -x "$venv/bin/uv" ] || [ ! -x "$venv/bin/pipx" ]; then
  "$venv/bin/pip" install --quiet --disable-pip-version-check "${packages[@]}" >&2
fi
"$venv/bin/maturin" --version >&2

# The std of the release targets: without network this fails, which only the
# release build (`.ci/dist` without --quick) needs.
if command -v rustup >/dev/null 2>&1; then
  rustup target add x86_64-unknown-linux-musl aarch64-unknown-linux-musl >&2 \
    || echo "install-dist-tools: could not add the musl targets (only .ci/dist without --quick needs them)" >&2
fi
echo "$venv/bin"
