//! Integration tests: they drive the real binaries.

// Temp dirs, clean environments, wildcard comparison.
mod util;
// fixtures/golden/<binary>/<case>/: stdin in, stdout and state out.
mod golden;
// Orchestrator file schemas: seed examples and mutations (issue 5).
mod schema;
// Seed 000 command state, resume, render and path (issue 5).
mod resume;
