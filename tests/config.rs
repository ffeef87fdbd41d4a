//! The shipped hook registrations stay in step with the installer and the
//! binaries that exist.

use std::path::Path;

use ralph_hooks::cli::install::{HOOK_BINARIES, REGISTRATIONS};
use serde_json::Value;

fn read(relative: &str) -> Value {
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join(relative);
    let text = std::fs::read_to_string(&path)
        .unwrap_or_else(|e| panic!("cannot read {}: {e}", path.display()));
    serde_json::from_str(&text).unwrap_or_else(|e| panic!("{} is not JSON: {e}", path.display()))
}

#[test]
fn hooks_config_matches_the_installer() {
    for file in [
        "hooks-config/settings.json",
        "hooks-config/hooks/hooks.json",
    ] {
        let hooks = &read(file)["hooks"];
        let mut seen = 0;
        for (event, groups) in hooks
            .as_object()
            .unwrap_or_else(|| panic!("{file}: no hooks object"))
        {
            for group in groups.as_array().unwrap() {
                let matcher = group.get("matcher").and_then(Value::as_str);
                for handler in group["hooks"].as_array().unwrap() {
                    let command = handler["command"].as_str().unwrap();
                    let program = command.split_whitespace().next().unwrap_or(command);
                    assert!(
                        HOOK_BINARIES.contains(&program),
                        "{file}: {event} runs {command:?}, not one of our binaries"
                    );
                    let registration = REGISTRATIONS
                        .iter()
                        .find(|r| r.event == event && r.command(r.binary) == command)
                        .unwrap_or_else(|| {
                            panic!("{file}: {event} → {command} is not registered by the installer")
                        });
                    assert_eq!(
                        handler["asyncRewake"].as_bool().unwrap_or(false),
                        registration.async_rewake,
                        "{file}: {event} → {command}: asyncRewake differs from the installer's"
                    );
                    assert_eq!(
                        matcher, registration.matcher,
                        "{file}: {event} matcher differs from the installer's"
                    );
                    assert_eq!(
                        handler["timeout"].as_u64(),
                        Some(registration.timeout),
                        "{file}: {event} timeout"
                    );
                    seen += 1;
                }
            }
        }
        assert_eq!(
            seen,
            REGISTRATIONS.len(),
            "{file}: registers {seen} handlers, the installer {}",
            REGISTRATIONS.len()
        );
    }
}

#[test]
fn every_hook_binary_is_built() {
    for name in HOOK_BINARIES {
        let path = crate::util::bin(name);
        assert!(path.is_file(), "{} is not built", path.display());
    }
}

#[test]
fn plugin_manifest_names_the_plugin() {
    assert_eq!(
        read("hooks-config/.claude-plugin/plugin.json")["name"],
        "ralph-hooks"
    );
}

#[test]
fn slash_commands_call_the_cli() {
    for (name, text) in ralph_hooks::cli::install::COMMANDS {
        assert!(text.starts_with("---\n"), "{name}: no frontmatter");
        assert!(
            text.contains("!`ralph-hooks ") || text.contains("```!\nralph-hooks "),
            "{name}: does not run the CLI"
        );
        // The user's arguments never meet a shell's parser: only as the
        // body of a quoted here-document the CLI reads as plain words.
        let quoted =
            "--args-from-stdin <<'RALPH_HOOKS_ARGUMENTS'\n$ARGUMENTS\nRALPH_HOOKS_ARGUMENTS\n```";
        assert_eq!(
            text.matches("$ARGUMENTS").count(),
            text.matches(quoted).count(),
            "{name}: $ARGUMENTS outside a quoted here-document:\n{text}"
        );
    }
}
