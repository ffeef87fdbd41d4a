//! Which commands are ours: the hook binaries' names, and whether a hook
//! handler's command line runs one of them. Install, uninstall, doctor, the
//! plugin route and the other harnesses' installs all ask this.

use serde_json::Value;

/// The hook binaries, by file name.
pub const HOOK_BINARIES: &[&str] = &[
    "ralph-session-start",
    "ralph-pre-tool-stop-guard",
    "ralph-post-tool-lsp-diagnostic",
    "ralph-stop-loop-controller",
    "ralph-user-prompt-submit",
];

/// Whether a handler runs one of our binaries.
pub fn is_ours(handler: &Value) -> bool {
    let Some(command) = handler.get("command").and_then(Value::as_str) else {
        return false;
    };
    let program = program_of(command);
    let name = program.rsplit('/').next().unwrap_or(program);
    HOOK_BINARIES.contains(&name)
}

/// The program of a shell command line: its first word, quoted or not
/// (`'/a b/ralph-stop-loop-controller' --rewake`).
pub fn program_of(command: &str) -> &str {
    let command = command.trim();
    for quote in ['\'', '"'] {
        if let Some(rest) = command.strip_prefix(quote) {
            return rest.split(quote).next().unwrap_or(rest);
        }
    }
    command.split_whitespace().next().unwrap_or(command)
}
