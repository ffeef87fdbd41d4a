//! Integration tests: they drive the real binaries.

// Temp dirs, clean environments, wildcard comparison.
mod util;
// fixtures/golden/<binary>/<case>/: stdin in, stdout and state out.
mod golden;
// tests/e2e/scenarios/<name>/: the real Claude Code CLI against a scripted mock API.
mod e2e;
