//! `ralph-hooks install --uninstall [--purge]`: puts the project back as it
//! was before `install`.
//!
//! Install keeps a record of how it found the project
//! ([`super::install_record`], taken at the first install and kept by
//! later ones): which folders and files did not exist yet, and the
//! settings file's bytes. Uninstall then
//! - takes our handlers, status line and sandbox settings out of
//!   `.claude/settings.json`: when what is left is what the file said
//!   before install, the file gets its old bytes back; a file install
//!   created and nothing else uses is removed; otherwise our entries are
//!   cut out of the text in place ([`crate::util::json_splice`]), so the
//!   user's formatting and later edits stay;
//! - removes our slash commands (never a file that is not ours) and the
//!   folders install made once they are empty;
//! - stops the daemon and the telemetry exporter;
//! - removes the state folder when it holds only install's bookkeeping;
//!   with `--purge`, the whole state folder (loops, tasks, logs) and the
//!   guard's watch folder too.

use std::path::{Path, PathBuf};
use std::process::ExitCode;

use anyhow::Context as _;
use serde_json::{Value, json};

use super::install_record::{INSTALL_RECORD, InstallRecord};
use crate::hook::ctx::Ctx;
use crate::util::fsread::{self, Links, limits};
use crate::util::json_splice;

fn settings_path(ctx: &Ctx) -> PathBuf {
    ctx.project_root.join(".claude").join("settings.json")
}

fn read_text(path: &Path) -> anyhow::Result<Option<String>> {
    fsread::read_text(path, limits::CONFIG, Links::Follow)
        .with_context(|| format!("cannot read {}", path.display()))
}

/// What to do with the settings file.
#[derive(Debug, PartialEq)]
pub enum SettingsPlan {
    Keep,
    Write(String),
    Remove,
}

/// The settings file after our parts are taken out of `value` (the parsed
/// `current` text): the bytes from before install when nothing else
/// changed, no file when install made it and nothing else is in it, else
/// the current text with our parts cut out.
pub fn plan_settings(
    current: Option<&str>,
    cleaned: &Value,
    record: Option<&InstallRecord>,
    removed_any: bool,
) -> SettingsPlan {
    let Some(current) = current else {
        return SettingsPlan::Keep;
    };
    // Nothing of ours there: nothing to undo, whatever the file holds (an
    // uninstall in a project never installed into rewrote `{"hooks": {}}`:
    // attack A32N-5).
    if !removed_any && !record.is_some_and(|record| record.settings_created) {
        return SettingsPlan::Keep;
    }
    let empty = cleaned.as_object().is_some_and(|object| object.is_empty());
    if let Some(before) = record.and_then(|r| r.settings_before.as_deref())
        && same_settings(before, cleaned)
    {
        return if before == current {
            SettingsPlan::Keep
        } else {
            SettingsPlan::Write(before.to_string())
        };
    }
    // Made by install (or, with no record, holding nothing but ours).
    let made_by_install = match record {
        Some(record) => record.settings_created,
        None => removed_any,
    };
    if empty && made_by_install {
        return SettingsPlan::Remove;
    }
    let text = json_splice::rewrite(current, cleaned).unwrap_or_else(|| {
        let mut text = serde_json::to_string_pretty(cleaned).unwrap_or_else(|_| "{}".into());
        text.push('\n');
        text
    });
    if text == current {
        SettingsPlan::Keep
    } else {
        SettingsPlan::Write(text)
    }
}

/// Whether the settings text from before install says what `cleaned` says:
/// an empty file is `{}`, and a `hooks` that holds nothing (`null`, `[]`,
/// `{}`, or only events and groups with no handler) is no `hooks` (install
/// filled them with its own; removing ours empties them again).
fn same_settings(before: &str, cleaned: &Value) -> bool {
    let before = if before.trim().is_empty() {
        json!({})
    } else {
        match serde_json::from_str::<Value>(before) {
            Ok(value) => value,
            Err(_) => return false,
        }
    };
    let no_handler = |groups: &Value| {
        groups.as_array().is_some_and(|groups| {
            groups.iter().all(|group| {
                group
                    .get("hooks")
                    .and_then(Value::as_array)
                    .is_some_and(Vec::is_empty)
            })
        })
    };
    let normal = |mut value: Value| {
        if let Some(object) = value.as_object_mut()
            && object.get("hooks").is_some_and(|hooks| {
                hooks.is_null()
                    || hooks.as_array().is_some_and(Vec::is_empty)
                    || hooks
                        .as_object()
                        .is_some_and(|events| events.values().all(no_handler))
            })
        {
            object.remove("hooks");
        }
        value
    };
    normal(before) == normal(cleaned.clone())
}

pub fn run(ctx: &Ctx, purge: bool) -> anyhow::Result<ExitCode> {
    let project = &ctx.project_root;
    let record = match ctx.store().read_json::<InstallRecord>(INSTALL_RECORD) {
        Ok(record) => record,
        Err(error) => {
            eprintln!("ralph-hooks: warning: {error:#}; uninstalling without it");
            None
        }
    };
    // --purge deletes the state folder: never one that is not ours (a
    // RALPH_HOOKS_STATE_DIR naming a shared folder). Checked before any
    // change, so a refusal leaves everything as it was.
    if purge && let Some(reason) = crate::state::dedicated::not_ours(&ctx.state_root) {
        anyhow::bail!(
            "refusing to purge the state folder {}: {reason}; nothing was changed (remove what is ours there by hand)",
            ctx.state_root.display()
        );
    }
    // Nothing of ours may run on while its files go.
    for line in super::daemon::stop_all(ctx)? {
        println!("{line}");
    }
    if let Some(line) = super::install_checks::stop_monitor(ctx.store()) {
        println!("{line}");
    }

    let path = settings_path(ctx);
    let current = read_text(&path)?;
    let mut settings = match current.as_deref() {
        None => json!({}),
        Some(text) if text.trim().is_empty() => json!({}),
        Some(text) => serde_json::from_str::<Value>(text).with_context(|| {
            format!(
                "{} is not valid JSON; fix it by hand first, nothing was changed",
                path.display()
            )
        })?,
    };
    let removed = super::install::remove_ours(&mut settings);
    let statusline = super::install::remove_statusline(&mut settings);
    let sandbox_record = super::install::read_sandbox_record(ctx)?;
    if let Some(sandbox) = &sandbox_record {
        super::sandbox::remove(&mut settings, sandbox);
    }
    let ours_in_settings = removed > 0 || statusline || sandbox_record.is_some();
    match plan_settings(
        current.as_deref(),
        &settings,
        record.as_ref(),
        ours_in_settings,
    ) {
        SettingsPlan::Keep => {}
        SettingsPlan::Write(text) => super::settings_file::write(&path, text.as_bytes())?,
        SettingsPlan::Remove => std::fs::remove_file(&path)
            .with_context(|| format!("cannot remove {}", path.display()))?,
    }
    if statusline {
        println!("Removed the ralph-hooks status line.");
    }
    if sandbox_record.is_some() {
        ctx.store().lock(super::install::SANDBOX_RECORD)?.remove()?;
        println!(
            "Removed sandbox mode: the sandbox settings, deny rules and allowed registries it added."
        );
    }
    let n_commands = super::install::remove_commands(project)?;
    if current.is_some() {
        println!(
            "Removed {removed} ralph-hooks handler(s) from {} and {n_commands} slash command(s). Other settings are untouched.",
            path.display()
        );
    } else {
        // No settings file to take handlers from (attack A32N-6).
        println!(
            "No {} here, so no ralph-hooks handler to remove; removed {n_commands} slash command(s).",
            path.display()
        );
    }

    // The state folder: all of it with --purge, else only when install's
    // bookkeeping is all there is.
    let _ = ctx
        .store()
        .lock(INSTALL_RECORD)
        .and_then(|locked| locked.remove());
    if purge {
        remove_tree(&ctx.state_root)?;
        if let Some(watch) = crate::state::journal::watch_dir(&ctx.state_root) {
            remove_tree(&watch)?;
            // `ralph-hooks/` itself, when no other project's folder is in
            // it (attack A32N-1: purge left it behind).
            if let Some(parent) = watch.parent() {
                let _ = std::fs::remove_dir(parent);
            }
        }
        // A state folder with a long path has its daemon's socket in the
        // runtime folder instead.
        let paths = crate::daemon::paths::Paths::new(&ctx.state_root);
        if paths.socket_in_runtime_dir() {
            let _ = std::fs::remove_file(&paths.socket);
        }
        println!(
            "Purged the state folder {} (loops, tasks, logs) and the guard's watch folder.",
            ctx.state_root.display()
        );
    } else if only_bookkeeping(&ctx.state_root) {
        remove_tree(&ctx.state_root)?;
    } else if ctx.state_root.exists() {
        println!(
            "Kept the state folder {} (loops, tasks, logs; git ignores it): `ralph-hooks install --uninstall --purge` removes it.",
            ctx.state_root.display()
        );
    }

    let claude = project.join(".claude");
    let made = |created: fn(&InstallRecord) -> bool| record.as_ref().is_none_or(created);
    if made(|r| r.commands_dir_created) {
        remove_if_empty(&claude.join("commands"));
    }
    if made(|r| r.claude_dir_created) {
        remove_if_empty(&claude);
    }
    Ok(ExitCode::SUCCESS)
}

/// Whether the state folder holds nothing but what install itself put
/// there: its `.gitignore`, and lock files.
fn only_bookkeeping(root: &Path) -> bool {
    fn walk(dir: &Path, top: bool) -> bool {
        let Ok(entries) = std::fs::read_dir(dir) else {
            return false;
        };
        entries.flatten().all(|entry| {
            let name = entry.file_name();
            let name = name.to_string_lossy();
            let Ok(kind) = entry.file_type() else {
                return false;
            };
            if kind.is_dir() {
                (top && name == ".locks") && walk(&entry.path(), false)
            } else if top {
                name == ".gitignore"
            } else {
                name.ends_with(".lock")
            }
        })
    }
    root.is_dir() && walk(root, true)
}

fn remove_tree(path: &Path) -> anyhow::Result<()> {
    match std::fs::remove_dir_all(path) {
        Ok(()) => Ok(()),
        Err(error) if error.kind() == std::io::ErrorKind::NotFound => Ok(()),
        Err(error) => Err(error).with_context(|| format!("cannot remove {}", path.display())),
    }
}

/// Removes a folder when it is empty (a folder with anything in it stays).
fn remove_if_empty(path: &Path) {
    let _ = std::fs::remove_dir(path);
}

#[cfg(test)]
mod tests {
    use super::*;

    fn record(before: Option<&str>, created: bool) -> InstallRecord {
        InstallRecord {
            settings_created: created,
            settings_before: before.map(str::to_string),
            ..InstallRecord::default()
        }
    }

    #[test]
    fn the_old_bytes_come_back_when_nothing_else_changed() {
        let before = "{ \"model\" :\"x\" }";
        let current = "{\n  \"model\": \"x\",\n  \"hooks\": {}\n}\n";
        assert_eq!(
            plan_settings(
                Some(current),
                &json!({"model": "x"}),
                Some(&record(Some(before), false)),
                true
            ),
            SettingsPlan::Write(before.into())
        );
    }

    #[test]
    fn a_file_install_made_goes_unless_something_else_is_in_it() {
        let current = "{\n  \"hooks\": {}\n}\n";
        let made = record(None, true);
        assert_eq!(
            plan_settings(Some(current), &json!({}), Some(&made), true),
            SettingsPlan::Remove
        );
        let SettingsPlan::Write(text) = plan_settings(
            Some("{\n  \"hooks\": {},\n  \"model\": \"y\"\n}\n"),
            &json!({"model": "y"}),
            Some(&made),
            true,
        ) else {
            panic!("a later key is kept")
        };
        assert_eq!(text, "{\n  \"model\": \"y\"\n}\n");
    }

    #[test]
    fn later_edits_stay_and_our_parts_are_cut_out() {
        let before = "{\"model\": \"x\"}";
        let current = "{\"model\": \"x\", \"hooks\": {\"Stop\": []}, \"env\": {\"A\": \"1\"}}";
        let plan = plan_settings(
            Some(current),
            &json!({"model": "x", "env": {"A": "1"}}),
            Some(&record(Some(before), false)),
            true,
        );
        assert_eq!(
            plan,
            SettingsPlan::Write("{\"model\": \"x\", \"env\": {\"A\": \"1\"}}".into())
        );
    }
}
