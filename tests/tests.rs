//! Integration tests: they drive the real binaries.

// Temp dirs, clean environments, wildcard comparison.
mod util;
// fixtures/golden/<binary>/<case>/: stdin in, stdout and state out.
mod golden;
// Task steps: markdown round trip (properties), transcripts, parallel CLI.
mod tasks;
