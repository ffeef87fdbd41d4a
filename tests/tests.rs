//! Integration tests: they drive the real binaries.

// Temp dirs, clean environments, wildcard comparison.
mod util;
// fixtures/golden/<binary>/<case>/: stdin in, stdout and state out.
mod golden;
// The diagnostics hook against the scripted fake language server.
mod lsp_fake;
// The diagnostics hook against the real language servers.
mod lsp_real;
// Diagnostics and the Ralph loop: blocking edits, the Stop condition.
mod diagnostics;
