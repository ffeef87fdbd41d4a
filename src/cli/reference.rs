//! The CLI reference, `docs/cli.md`, rendered from the clap grammar itself:
//! every command and subcommand's `--help`, in the order `--help` lists
//! them, so the manual cannot drift from what the binary accepts
//! (`tests/docs.rs` fails when the file is not what this renders).

use std::fmt::Write as _;

/// Terminal width the help is wrapped at in the file: fixed, so the file
/// does not depend on the terminal of whoever renders it.
const WIDTH: usize = 100;

const PREAMBLE: &str = "\
# CLI reference

Every command of `ralph-hooks`, with the help it prints (`ralph-hooks <command> --help`).
This file is generated from the command line's own definition: do not edit it by hand.
After changing a command's help, run

```sh
RALPH_HOOKS_BLESS=1 cargo test --test integration docs::cli_reference_is_current
```

The hook binaries (`ralph-stop-loop-controller`, `ralph-session-start`,
`ralph-pre-tool-stop-guard`, `ralph-post-tool-lsp-diagnostic`, `ralph-user-prompt-submit`)
take no arguments besides `--help`: they read one hook JSON object on stdin (see
[the architecture](architecture.md#calling-a-hook-by-hand)).
";

/// `docs/cli.md` as the current grammar renders it.
pub fn markdown() -> String {
    let mut root = super::parser::command().term_width(WIDTH);
    root.build();
    let mut text = String::from(PREAMBLE);
    let mut commands = Vec::new();
    collect(&root, &mut Vec::new(), &mut commands);

    text.push_str("\n## Contents\n\n");
    for (path, _) in &commands {
        let depth = path.len().saturating_sub(1);
        let title = title(path);
        let _ = writeln!(
            text,
            "{}- [`{title}`](#{})",
            "  ".repeat(depth),
            anchor(&title)
        );
    }
    for (path, help) in &commands {
        let hashes = "#".repeat((path.len() + 1).min(6));
        let _ = write!(text, "\n{hashes} {}\n\n```text\n{help}\n```\n", title(path));
    }
    text
}

/// `ralph-hooks` for the root, `ralph-hooks task step add` below it.
fn title(path: &[String]) -> String {
    path.join(" ")
}

/// GitHub's anchor for a heading made of plain words: lower case, blanks
/// to `-`, nothing else is in these titles.
fn anchor(title: &str) -> String {
    title.to_lowercase().replace(' ', "-")
}

/// Depth first, in declaration order: each command's path and its long help.
fn collect(command: &clap::Command, path: &mut Vec<String>, out: &mut Vec<(Vec<String>, String)>) {
    path.push(command.get_name().to_string());
    let help = command
        .clone()
        .term_width(WIDTH)
        .render_long_help()
        .to_string();
    let help: Vec<&str> = help.lines().map(str::trim_end).collect();
    out.push((path.clone(), help.join("\n").trim_end().to_string()));
    for sub in in_help_order(command, path.len() == 1) {
        collect(sub, path, out);
    }
    path.pop();
}

/// The visible subcommands: at the top in the order of the grouped
/// `--help` (loop, check, code, …), below it as declared.
fn in_help_order(command: &clap::Command, top: bool) -> Vec<&clap::Command> {
    let visible = |sub: &&clap::Command| !sub.is_hide_set() && sub.get_name() != "help";
    let mut subs: Vec<&clap::Command> = command.get_subcommands().filter(visible).collect();
    if top {
        let rank = |name: &str| {
            super::parser::GROUPS
                .iter()
                .flat_map(|(_, names)| names.iter())
                .position(|listed| *listed == name)
                .unwrap_or(usize::MAX)
        };
        subs.sort_by_key(|sub| rank(sub.get_name()));
    }
    subs
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_command_has_a_section_and_a_contents_line() {
        let text = markdown();
        for needle in [
            "## ralph-hooks\n",
            "### ralph-hooks check\n",
            "##### ralph-hooks task step add\n",
            "- [`ralph-hooks loop start`](#ralph-hooks-loop-start)",
        ] {
            assert!(text.contains(needle), "missing {needle:?}");
        }
    }

    #[test]
    fn the_top_commands_come_in_the_order_of_the_grouped_help() {
        let text = markdown();
        let at = |title: &str| text.find(&format!("\n### {title}\n")).unwrap();
        assert!(at("ralph-hooks loop") < at("ralph-hooks check"));
        assert!(at("ralph-hooks check") < at("ralph-hooks monitor"));
    }

    #[test]
    fn rendering_is_the_same_twice_and_has_no_escape_codes() {
        let text = markdown();
        assert_eq!(text, markdown());
        assert!(!text.contains('\u{1b}'));
    }
}
