//! Which commands are ours: the hook binaries' names, and whether a hook
//! handler's command line runs one of them. Install, uninstall, doctor, the
//! plugin route and the other harnesses' installs all ask this.
//!
//! A command line is read as `sh -c` would find its program: leading
//! `NAME=value` assignments, `env` (with its own assignments and `-i`) and
//! `exec` are skipped, and the program word is unquoted the way install
//! quotes it (`'/home/o'\''brien/bin/ralph-session-start'`).

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
    let name = program.rsplit('/').next().unwrap_or(&program);
    HOOK_BINARIES.contains(&name)
}

/// The program of a shell command line, unquoted: its first word after
/// any environment assignments, `env` and `exec`
/// (`RALPH_HOOKS_DEBUG=1 '/a b/ralph-stop-loop-controller' --rewake`).
pub fn program_of(command: &str) -> String {
    let words = crate::util::words::split(
        command,
        crate::util::words::Until {
            operator: true,
            max: 16,
        },
    );
    let mut rest = words.iter().map(String::as_str).peekable();
    let is_assignment = |word: &str| {
        word.split_once('=').is_some_and(|(name, _)| {
            !name.is_empty()
                && !name.starts_with(|c: char| c.is_ascii_digit())
                && name.chars().all(|c| c.is_ascii_alphanumeric() || c == '_')
        })
    };
    while let Some(word) = rest.peek().copied() {
        if is_assignment(word) || word == "exec" || word == "env" || word == "-i" || word == "-" {
            rest.next();
        } else {
            return word.to_string();
        }
    }
    String::new()
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn ours(command: &str) -> bool {
        is_ours(&json!({ "command": command }))
    }

    #[test]
    fn an_env_prefix_or_exec_still_runs_our_binary() {
        assert!(ours(
            "RALPH_HOOKS_DEBUG=1 /x/bin/ralph-stop-loop-controller"
        ));
        assert!(ours("env FOO=1 /x/bin/ralph-session-start"));
        assert!(ours(
            "env -i A=1 B='x y' exec /x/ralph-user-prompt-submit --rewake"
        ));
        assert!(ours("/x/ralph-pre-tool-stop-guard 2>>/tmp/guard.log"));
        assert!(!ours("FOO=/x/ralph-session-start /usr/bin/other"));
        assert!(!ours("echo /x/ralph-session-start"));
        assert!(!ours("ralph-hooks statusline > /tmp/x"));
    }

    #[test]
    fn the_quoting_install_writes_is_read_back() {
        let path = "/tmp/o'brien x/bin/ralph-stop-loop-controller";
        // As install's `shell_quote` writes it.
        let quoted = r"'/tmp/o'\''brien x/bin/ralph-stop-loop-controller'";
        assert_eq!(program_of(&format!("{quoted} --rewake")), path);
        assert!(ours(&format!("{quoted} --rewake")));
        assert_eq!(
            program_of("'/a b/ralph-session-start'"),
            "/a b/ralph-session-start"
        );
        assert_eq!(
            program_of("\"/a \\\"b/ralph-session-start\""),
            "/a \"b/ralph-session-start"
        );
    }
}
