//! The plugin route: whether Claude Code already runs our hooks through an
//! enabled ralph-hooks plugin (`claude plugin install ralph-hooks@…`), so that
//! `ralph-hooks install` does not register the same hooks a second time (each
//! would then run twice per event, and two Stop hooks would each count an
//! iteration) and `doctor` can say which route is active.
//!
//! What Claude Code reads, in its order of precedence (later wins):
//! `enabledPlugins` in `<config>/settings.json` (user), then
//! `<project>/.claude/settings.json` (project), then
//! `<project>/.claude/settings.local.json` (local); `<config>` is
//! `$CLAUDE_CONFIG_DIR`, else `~/.claude`. An enabled plugin's files are
//! where `<config>/plugins/installed_plugins.json` says it was installed; its
//! hooks are in `hooks/hooks.json` there. A plugin counts as ours when one of
//! its hooks runs one of our hook binaries, or, when its files cannot be
//! found, when it is named `ralph-hooks`.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use serde_json::Value;

use super::hook_commands::is_ours;
use crate::util::fsread::{self, Links, limits};

/// The plugin name the repository's marketplace lists us under.
pub const PLUGIN_NAME: &str = "ralph-hooks";

/// An enabled plugin that runs our hooks.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ActivePlugin {
    /// `<name>@<marketplace>`, as in `enabledPlugins`.
    pub id: String,
    /// The settings file whose `enabledPlugins` turned it on.
    pub enabled_in: PathBuf,
    /// Where Claude Code keeps its files, when recorded.
    pub install_path: Option<PathBuf>,
    /// Our hook commands it registers (empty when its files were not found).
    pub hook_commands: Vec<String>,
}

impl ActivePlugin {
    /// The command that removes it, with the scope it was enabled at:
    /// `claude plugin uninstall` without `--scope` looks at the user's
    /// scope only and fails for a project's plugin (attack A32N-2).
    pub fn uninstall_command(&self) -> String {
        let scope = match self.enabled_in.file_name().and_then(|name| name.to_str()) {
            Some("settings.local.json") => " --scope local",
            Some("settings.json")
                if self
                    .enabled_in
                    .parent()
                    .is_some_and(|folder| folder.ends_with(".claude"))
                    && claude_config_dir()
                        .is_none_or(|config| self.enabled_in != config.join("settings.json")) =>
            {
                " --scope project"
            }
            _ => "",
        };
        format!("claude plugin uninstall {}{scope}", self.id)
    }

    /// One line for people: which plugin, from where, running what.
    pub fn describe(&self) -> String {
        let files = match &self.install_path {
            Some(path) => format!("files in {}", path.display()),
            None => "its files not found in installed_plugins.json".to_string(),
        };
        format!(
            "the plugin {} (enabled in {}; {files}; {} of our hook command(s))",
            self.id,
            self.enabled_in.display(),
            self.hook_commands.len()
        )
    }
}

/// Claude Code's configuration folder: `$CLAUDE_CONFIG_DIR`, else `~/.claude`.
pub fn claude_config_dir() -> Option<PathBuf> {
    let nonempty = |name: &str| std::env::var_os(name).filter(|value| !value.is_empty());
    nonempty("CLAUDE_CONFIG_DIR")
        .map(PathBuf::from)
        .or_else(|| nonempty("HOME").map(|home| PathBuf::from(home).join(".claude")))
}

/// The enabled plugins in `project` that run our hooks, read from disk now.
pub fn active_plugins(project: &Path) -> Vec<ActivePlugin> {
    let config = claude_config_dir();
    let mut layers = Vec::new();
    if let Some(config) = &config {
        layers.push(config.join("settings.json"));
    }
    layers.push(project.join(".claude").join("settings.json"));
    layers.push(project.join(".claude").join("settings.local.json"));
    let layers: Vec<(PathBuf, Value)> = layers
        .into_iter()
        .map(|path| {
            let value = read_json(&path).unwrap_or(Value::Null);
            (path, value)
        })
        .collect();
    let installed = config
        .map(|config| config.join("plugins").join("installed_plugins.json"))
        .and_then(|path| read_json(&path))
        .unwrap_or(Value::Null);
    ours_among(
        &enabled_plugins(&layers),
        &installed,
        project,
        &|install_path| plugin_hooks(install_path),
    )
}

/// `enabledPlugins` merged over the layers (later wins): each enabled id with
/// the file that enabled it, in a stable order.
pub fn enabled_plugins(layers: &[(PathBuf, Value)]) -> Vec<(String, PathBuf)> {
    let mut merged: BTreeMap<String, (bool, PathBuf)> = BTreeMap::new();
    for (path, settings) in layers {
        let Some(enabled) = settings.get("enabledPlugins").and_then(Value::as_object) else {
            continue;
        };
        for (id, on) in enabled {
            // `true`, or a non-empty list (of versions or options), means enabled.
            let on = match on {
                Value::Bool(on) => *on,
                Value::Array(items) => !items.is_empty(),
                _ => false,
            };
            merged.insert(id.clone(), (on, path.clone()));
        }
    }
    merged
        .into_iter()
        .filter(|(_, (on, _))| *on)
        .map(|(id, (_, path))| (id, path))
        .collect()
}

/// Which of the enabled plugins run our hooks. `hooks_of` reads a plugin's
/// hooks from its install folder (`None`: not readable).
pub fn ours_among(
    enabled: &[(String, PathBuf)],
    installed: &Value,
    project: &Path,
    hooks_of: &dyn Fn(&Path) -> Option<Value>,
) -> Vec<ActivePlugin> {
    let mut found = Vec::new();
    for (id, enabled_in) in enabled {
        let install_path = install_path(installed, id, project);
        let hooks = install_path.as_deref().and_then(hooks_of);
        let hook_commands = hooks.as_ref().map(our_commands).unwrap_or_default();
        let name = id.split('@').next().unwrap_or(id);
        let ours = !hook_commands.is_empty() || (hooks.is_none() && name == PLUGIN_NAME);
        if ours {
            found.push(ActivePlugin {
                id: id.clone(),
                enabled_in: enabled_in.clone(),
                install_path,
                hook_commands,
            });
        }
    }
    found
}

/// Where `installed_plugins.json` (version 2: `{"plugins": {id: [entry…]}}`)
/// says `id` is installed: the entry for this project, else a user-scope one,
/// else the first.
fn install_path(installed: &Value, id: &str, project: &Path) -> Option<PathBuf> {
    let entries: Vec<Value> = match installed.get("plugins").and_then(|plugins| plugins.get(id)) {
        Some(Value::Array(entries)) => entries.clone(),
        Some(entry @ Value::Object(_)) => vec![entry.clone()],
        _ => return None,
    };
    let for_project = |entry: &&Value| {
        entry
            .get("projectPath")
            .and_then(Value::as_str)
            .is_some_and(|path| Path::new(path) == project)
    };
    let user_scope = |entry: &&Value| entry.get("scope").and_then(Value::as_str) == Some("user");
    let entry = entries
        .iter()
        .find(for_project)
        .or_else(|| entries.iter().find(user_scope))
        .or_else(|| entries.first())?;
    entry
        .get("installPath")
        .and_then(Value::as_str)
        .map(PathBuf::from)
}

/// The commands of a hooks file (`{"hooks": {event: [{"hooks": [handler…]}]}}`)
/// that run one of our binaries.
pub fn our_commands(hooks_file: &Value) -> Vec<String> {
    let Some(events) = hooks_file.get("hooks").and_then(Value::as_object) else {
        return Vec::new();
    };
    events
        .values()
        .filter_map(Value::as_array)
        .flatten()
        .filter_map(|group| group.get("hooks").and_then(Value::as_array))
        .flatten()
        .filter(|handler| is_ours(handler))
        .filter_map(|handler| handler.get("command").and_then(Value::as_str))
        .map(str::to_string)
        .collect()
}

/// A plugin's hooks: the file its `plugin.json` names under `hooks`, else
/// `hooks/hooks.json`. `None` when the plugin folder is not there.
fn plugin_hooks(install_path: &Path) -> Option<Value> {
    if !install_path.is_dir() {
        return None;
    }
    let manifest = read_json(&install_path.join(".claude-plugin").join("plugin.json"));
    let relative = manifest
        .as_ref()
        .and_then(|manifest| manifest.get("hooks"))
        .and_then(Value::as_str)
        .unwrap_or("./hooks/hooks.json");
    // A path from the plugin's own manifest stays inside the plugin.
    let relative = Path::new(relative);
    if relative.is_absolute()
        || relative
            .components()
            .any(|part| matches!(part, std::path::Component::ParentDir))
    {
        return Some(Value::Null);
    }
    Some(read_json(&install_path.join(relative)).unwrap_or(Value::Null))
}

/// A JSON file, or `None` when it is missing, unreadable or not JSON: a
/// broken settings file of Claude Code's is Claude Code's to report.
pub fn read_json(path: &Path) -> Option<Value> {
    let text = fsread::read_text(path, limits::CONFIG, Links::Follow)
        .ok()
        .flatten()?;
    serde_json::from_str(&text).ok()
}

/// The refusal `ralph-hooks install` gives while a plugin runs our hooks.
pub fn double_registration_message(plugins: &[ActivePlugin], settings: &Path) -> String {
    let described: Vec<String> = plugins.iter().map(ActivePlugin::describe).collect();
    let commands: Vec<String> = plugins
        .iter()
        .map(ActivePlugin::uninstall_command)
        .collect();
    format!(
        "refusing to register the hooks in {}: Claude Code already runs them through {}. \
         Both would run every hook twice. Keep the plugin (nothing to do), or remove it first \
         with `{}` (or `claude plugin disable …`) and run install again.",
        settings.display(),
        described.join("; "),
        commands.join("`, `")
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn layer(path: &str, value: Value) -> (PathBuf, Value) {
        (PathBuf::from(path), value)
    }

    #[test]
    fn later_layers_win_and_disabled_plugins_are_left_out() {
        let layers = [
            layer(
                "/u/settings.json",
                json!({"enabledPlugins": {"ralph-hooks@m": true, "other@m": true}}),
            ),
            layer(
                "/p/.claude/settings.json",
                json!({"enabledPlugins": {"ralph-hooks@m": false}}),
            ),
            layer("/p/.claude/settings.local.json", json!("not an object")),
        ];
        let enabled = enabled_plugins(&layers);
        assert_eq!(
            enabled,
            vec![("other@m".to_string(), PathBuf::from("/u/settings.json"))]
        );
    }

    #[test]
    fn a_plugin_is_ours_by_its_hooks_or_by_its_name_when_its_files_are_gone() {
        let installed = json!({"version": 2, "plugins": {
            "renamed@m": [{"scope": "project", "projectPath": "/p", "installPath": "/cache/renamed"}],
            "ralph-hooks@gone": [{"scope": "user", "installPath": "/cache/gone"}],
            "ralph-hooks@empty": [{"scope": "user", "installPath": "/cache/empty"}],
        }});
        let hooks_of = |path: &Path| match path.to_str() {
            Some("/cache/renamed") => Some(json!({"hooks": {"Stop": [{"hooks": [
                {"type": "command", "command": "\"${CLAUDE_PLUGIN_ROOT}/bin/ralph-stop-loop-controller\" --rewake"},
                {"type": "command", "command": "notify-done"}]}]}})),
            Some("/cache/empty") => Some(json!({"hooks": {}})),
            _ => None,
        };
        let enabled = [
            (
                "renamed@m".to_string(),
                PathBuf::from("/p/.claude/settings.json"),
            ),
            (
                "ralph-hooks@gone".to_string(),
                PathBuf::from("/u/settings.json"),
            ),
            (
                "ralph-hooks@empty".to_string(),
                PathBuf::from("/u/settings.json"),
            ),
        ];
        let ours = ours_among(&enabled, &installed, Path::new("/p"), &hooks_of);
        let ids: Vec<&str> = ours.iter().map(|plugin| plugin.id.as_str()).collect();
        assert_eq!(ids, ["renamed@m", "ralph-hooks@gone"]);
        assert_eq!(
            ours[0].hook_commands,
            ["\"${CLAUDE_PLUGIN_ROOT}/bin/ralph-stop-loop-controller\" --rewake"]
        );
        assert_eq!(ours[0].install_path, Some(PathBuf::from("/cache/renamed")));
        assert!(ours[1].hook_commands.is_empty());
    }

    #[test]
    fn the_refusal_names_the_plugin_and_the_way_out() {
        let plugin = ActivePlugin {
            id: "ralph-hooks@ralph-hooks".into(),
            enabled_in: PathBuf::from("/p/.claude/settings.json"),
            install_path: None,
            hook_commands: vec![],
        };
        let message = double_registration_message(&[plugin], Path::new("/p/.claude/settings.json"));
        assert!(message.contains("ralph-hooks@ralph-hooks"), "{message}");
        assert!(
            message.contains("claude plugin uninstall ralph-hooks@ralph-hooks --scope project"),
            "{message}"
        );
        assert!(message.contains("twice"), "{message}");
    }

    #[test]
    fn the_way_out_names_the_scope_the_plugin_was_enabled_at() {
        let at = |enabled_in: &str| {
            ActivePlugin {
                id: "ralph-hooks@m".into(),
                enabled_in: PathBuf::from(enabled_in),
                install_path: None,
                hook_commands: vec![],
            }
            .uninstall_command()
        };
        assert_eq!(
            at("/p/.claude/settings.json"),
            "claude plugin uninstall ralph-hooks@m --scope project"
        );
        assert_eq!(
            at("/p/.claude/settings.local.json"),
            "claude plugin uninstall ralph-hooks@m --scope local"
        );
        if let Some(config) = claude_config_dir() {
            let user = config.join("settings.json");
            assert_eq!(
                at(&user.to_string_lossy()),
                "claude plugin uninstall ralph-hooks@m"
            );
        }
    }
}
