//! Sandbox mode's settings: what `ralph-hooks install --sandbox` merges into
//! `<project>/.claude/settings.json` so that Claude Code runs every Bash
//! command in its OS sandbox (bubblewrap on Linux, Seatbelt on macOS) with
//! the supervision read-only inside it, and the record of what it changed,
//! so that `--uninstall` takes back exactly that; plus the soundness check
//! `doctor` prints.
//!
//! Pure: settings in, settings and a record out. The caller reads and
//! writes the files.

use serde::{Deserialize, Serialize};
use serde_json::{Map, Value, json};

/// The paths the agent must not change besides the state root (see
/// [`crate::hook::sandbox::PROTECTED`]).
pub use crate::hook::sandbox::PROTECTED;

/// The file tools the permission deny rules keep off the protected paths
/// (Claude Code's permission rules hold even in `bypassPermissions`).
pub const FILE_TOOLS: &[&str] = &["Write", "Edit", "MultiEdit", "NotebookEdit"];

/// Package registries the sandbox's network proxy lets through, so that
/// installs work inside it without a prompt each time.
pub const REGISTRIES: &[&str] = &[
    "pypi.org",
    "files.pythonhosted.org",
    "registry.npmjs.org",
    "registry.yarnpkg.com",
    "crates.io",
    "index.crates.io",
    "static.crates.io",
    "proxy.golang.org",
    "sum.golang.org",
];

/// Scalars install sets, and whether it overrides a value the user set: the
/// two that keep the agent inside the sandbox always win; the
/// auto-approval of sandboxed commands only fills a gap.
const SCALARS: &[(&[&str], bool, bool)] = &[
    (&["sandbox", "enabled"], true, true),
    // A Bash call with `dangerouslyDisableSandbox` still runs sandboxed.
    (&["sandbox", "allowUnsandboxedCommands"], false, true),
    // No bubblewrap, no session: never a silent run without the wall.
    (&["sandbox", "failIfUnavailable"], true, true),
    (&["sandbox", "autoAllowBashIfSandboxed"], true, false),
];

/// What install changed: enough for uninstall to take back exactly it.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct Record {
    /// Scalars install set, with the value before (`None`: there was none).
    #[serde(default)]
    pub set: Vec<SetScalar>,
    /// Array entries install added (an entry the user had is not listed).
    #[serde(default)]
    pub added: Vec<Added>,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct SetScalar {
    pub key: Vec<String>,
    pub value: Value,
    pub before: Option<Value>,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Added {
    pub key: Vec<String>,
    pub value: String,
}

impl crate::state::Versioned for Record {
    const VERSION: u64 = 1;
}

/// `./<path>` for a path in the project, the absolute path otherwise:
/// how Claude Code's sandbox paths name a place.
fn sandbox_path(relative: &str) -> String {
    let trimmed = relative.trim_end_matches('/');
    if trimmed.starts_with('/') {
        trimmed.to_string()
    } else {
        format!("./{trimmed}")
    }
}

/// The permission rules for one path: `Tool(./dir/**)` for a folder,
/// `Tool(./file)` for a file; an absolute path takes Claude Code's `//`.
fn deny_rules(relative: &str) -> Vec<String> {
    let place = if relative.starts_with('/') {
        format!("/{}", relative.trim_end_matches('/'))
    } else {
        format!("./{}", relative.trim_end_matches('/'))
    };
    let place = if relative.ends_with('/') {
        format!("{place}/**")
    } else {
        place
    };
    FILE_TOOLS
        .iter()
        .map(|tool| format!("{tool}({place})"))
        .collect()
}

/// Every protected path, the state root first (`state_root` relative to the
/// project, ending in `/`, or absolute when it lives elsewhere).
pub fn protected_paths(state_root: &str) -> Vec<String> {
    std::iter::once(state_root.to_string())
        .chain(PROTECTED.iter().map(|p| p.to_string()))
        .collect()
}

/// The array entries sandbox mode needs, by key.
fn wanted_entries(state_root: &str) -> Vec<(Vec<&'static str>, String)> {
    let paths = protected_paths(state_root);
    let mut entries = Vec::new();
    for path in &paths {
        entries.push((
            vec!["sandbox", "filesystem", "denyWrite"],
            sandbox_path(path),
        ));
    }
    for path in &paths {
        for rule in deny_rules(path) {
            entries.push((vec!["permissions", "deny"], rule));
        }
    }
    for domain in REGISTRIES {
        entries.push((
            vec!["sandbox", "network", "allowedDomains"],
            domain.to_string(),
        ));
    }
    entries
}

fn object_at<'a>(settings: &'a mut Value, key: &[&str]) -> &'a mut Map<String, Value> {
    let mut here = settings;
    for part in key {
        if !here.is_object() {
            *here = json!({});
        }
        here = here
            .as_object_mut()
            .expect("just made an object")
            .entry(part.to_string())
            .or_insert_with(|| json!({}));
    }
    if !here.is_object() {
        *here = json!({});
    }
    here.as_object_mut().expect("just made an object")
}

fn get<'a>(settings: &'a Value, key: &[String]) -> Option<&'a Value> {
    key.iter().try_fold(settings, |here, part| here.get(part))
}

/// Merges sandbox mode into `settings` (an object), keeping every other key;
/// `previous` is the record of an earlier install, whose entries stay ours.
/// Returns the record of everything ours now.
pub fn add(settings: &mut Value, state_root: &str, previous: Option<&Record>) -> Record {
    let mut record = Record::default();
    for (key, value, overrides) in SCALARS {
        let key_owned: Vec<String> = key.iter().map(|k| k.to_string()).collect();
        let earlier = previous.and_then(|p| p.set.iter().find(|s| s.key == key_owned));
        let current = get(settings, &key_owned).cloned();
        let wanted = json!(value);
        let (parent, last) = key.split_at(key.len() - 1);
        match (&current, earlier) {
            // Ours from before, still as we left it.
            (Some(now), Some(earlier)) if *now == earlier.value => {
                record.set.push(earlier.clone());
                if *now != wanted && *overrides {
                    object_at(settings, parent).insert(last[0].into(), wanted.clone());
                }
            }
            (Some(now), _) if *now == wanted || !overrides => {}
            _ => {
                object_at(settings, parent).insert(last[0].into(), wanted.clone());
                record.set.push(SetScalar {
                    key: key_owned,
                    value: wanted,
                    before: current,
                });
            }
        }
    }
    for (key, value) in wanted_entries(state_root) {
        let (parent, last) = key.split_at(key.len() - 1);
        let key_owned: Vec<String> = key.iter().map(|k| k.to_string()).collect();
        let was_ours = previous.is_some_and(|p| {
            p.added
                .iter()
                .any(|a| a.key == key_owned && a.value == value)
        });
        let object = object_at(settings, parent);
        let array = object
            .entry(last[0].to_string())
            .or_insert_with(|| json!([]));
        if !array.is_array() {
            *array = json!([]);
        }
        let array = array.as_array_mut().expect("just made an array");
        let present = array.iter().any(|v| v.as_str() == Some(value.as_str()));
        if !present {
            array.push(json!(value));
        }
        if !present || was_ours {
            record.added.push(Added {
                key: key_owned,
                value,
            });
        }
    }
    record
}

/// Takes back what `record` says install added; values the user changed
/// since stay as they are. Objects left empty by it go too.
pub fn remove(settings: &mut Value, record: &Record) {
    for added in &record.added {
        let Some(array) = get_mut(settings, &added.key).and_then(Value::as_array_mut) else {
            continue;
        };
        array.retain(|v| v.as_str() != Some(added.value.as_str()));
    }
    for set in &record.set {
        let Some((last, parent)) = set.key.split_last() else {
            continue;
        };
        if get(settings, &set.key) != Some(&set.value) {
            continue;
        }
        let Some(object) = get_mut(settings, parent).and_then(Value::as_object_mut) else {
            continue;
        };
        match &set.before {
            Some(before) => object.insert(last.clone(), before.clone()),
            None => object.remove(last),
        };
    }
    for key in [
        &["sandbox", "filesystem", "denyWrite"][..],
        &["sandbox", "network", "allowedDomains"],
        &["sandbox", "filesystem"],
        &["sandbox", "network"],
        &["sandbox"],
        &["permissions", "deny"],
        &["permissions"],
    ] {
        prune_empty(settings, key);
    }
}

fn get_mut<'a>(settings: &'a mut Value, key: &[String]) -> Option<&'a mut Value> {
    key.iter()
        .try_fold(settings, |here, part| here.get_mut(part.as_str()))
}

/// Removes `key` when it holds an empty array or object and only our keys
/// created it (an empty value the user wrote is indistinguishable; it is
/// rare and harmless to drop).
fn prune_empty(settings: &mut Value, key: &[&str]) {
    let key: Vec<String> = key.iter().map(|k| k.to_string()).collect();
    let empty = get(settings, &key).is_some_and(|v| {
        v.as_array().is_some_and(Vec::is_empty) || v.as_object().is_some_and(Map::is_empty)
    });
    if !empty {
        return;
    }
    if let Some((last, parent)) = key.split_last()
        && let Some(object) = get_mut(settings, parent).and_then(Value::as_object_mut)
    {
        object.remove(last);
    }
}

/// One line of `doctor`'s sandbox section.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Finding {
    pub problem: bool,
    pub text: String,
}

/// Whether sandbox mode in `settings` is on and sound: on, the agent cannot
/// step outside, no command is let out, every protected path is read-only
/// and off-limits to the file tools.
pub fn assess(settings: &Value, state_root: &str) -> Vec<Finding> {
    let ok = |text: String| Finding {
        problem: false,
        text,
    };
    let bad = |text: String| Finding {
        problem: true,
        text,
    };
    let sandbox = settings.get("sandbox");
    if sandbox
        .and_then(|s| s.get("enabled"))
        .and_then(Value::as_bool)
        != Some(true)
    {
        return vec![bad(
            "off: Bash commands can write the loop's state; run `ralph-hooks install --sandbox`"
                .into(),
        )];
    }
    let mut findings = vec![ok(
        "on: every Bash command runs in Claude Code's sandbox".into()
    )];
    let sandbox = sandbox.expect("checked above");
    match sandbox.get("allowUnsandboxedCommands").and_then(Value::as_bool) {
        Some(false) => findings.push(ok(
            "allowUnsandboxedCommands false: dangerouslyDisableSandbox still runs sandboxed"
                .into(),
        )),
        _ => findings.push(bad(
            "allowUnsandboxedCommands is not false: a Bash call with dangerouslyDisableSandbox runs outside the sandbox"
                .into(),
        )),
    }
    if let Some(excluded) = sandbox
        .get("excludedCommands")
        .and_then(Value::as_array)
        .filter(|list| !list.is_empty())
    {
        let names: Vec<String> = excluded
            .iter()
            .map(|v| {
                v.as_str()
                    .map(String::from)
                    .unwrap_or_else(|| v.to_string())
            })
            .collect();
        findings.push(bad(format!(
            "excludedCommands run outside the sandbox and can write the state: {}",
            crate::util::text::escape_controls(&names.join(", "))
        )));
    }
    if sandbox
        .get("network")
        .and_then(|n| n.get("allowAllUnixSockets"))
        .and_then(Value::as_bool)
        == Some(true)
    {
        findings.push(bad(
            "network.allowAllUnixSockets is true: a command can reach any local socket (a Docker daemon is a way out)"
                .into(),
        ));
    }
    let deny_write: Vec<&str> = sandbox
        .get("filesystem")
        .and_then(|f| f.get("denyWrite"))
        .and_then(Value::as_array)
        .map(|list| list.iter().filter_map(Value::as_str).collect())
        .unwrap_or_default();
    let present_rules: Vec<&str> = settings
        .get("permissions")
        .and_then(|p| p.get("deny"))
        .and_then(Value::as_array)
        .map(|list| list.iter().filter_map(Value::as_str).collect())
        .unwrap_or_default();
    let paths = protected_paths(state_root);
    let missing_write: Vec<&String> = paths
        .iter()
        .filter(|p| !deny_write.contains(&sandbox_path(p).as_str()))
        .collect();
    if missing_write.is_empty() {
        findings.push(ok(format!(
            "read-only to Bash: {}",
            paths
                .iter()
                .map(|p| p.trim_end_matches('/'))
                .collect::<Vec<_>>()
                .join(", ")
        )));
    } else {
        findings.push(bad(format!(
            "writable from Bash (not in sandbox.filesystem.denyWrite): {}",
            missing_write
                .iter()
                .map(|p| p.trim_end_matches('/'))
                .collect::<Vec<_>>()
                .join(", ")
        )));
    }
    let missing_rules: Vec<String> = paths
        .iter()
        .flat_map(|p| deny_rules(p))
        .filter(|rule| !present_rules.contains(&rule.as_str()))
        .collect();
    if missing_rules.is_empty() {
        findings.push(ok(
            "permission deny rules keep Write, Edit, MultiEdit and NotebookEdit off them".into(),
        ));
    } else {
        findings.push(bad(format!(
            "missing permission deny rules: {}",
            missing_rules.join(", ")
        )));
    }
    findings
}

/// Whether this machine can run Claude Code's sandbox, and if not, why.
pub fn availability() -> Result<String, String> {
    if cfg!(target_os = "macos") {
        return match which::which("sandbox-exec") {
            Ok(path) => Ok(format!("macOS sandbox ({})", path.display())),
            Err(_) => Err("sandbox-exec is missing".into()),
        };
    }
    let bwrap = which::which("bwrap");
    let socat = which::which("socat");
    match (bwrap, socat) {
        (Ok(bwrap), Ok(socat)) => Ok(format!(
            "bubblewrap ({}) and socat ({})",
            bwrap.display(),
            socat.display()
        )),
        (bwrap, socat) => {
            let missing: Vec<&str> = [("bubblewrap", bwrap.is_err()), ("socat", socat.is_err())]
                .into_iter()
                .filter(|(_, missing)| *missing)
                .map(|(name, _)| name)
                .collect();
            Err(format!(
                "{} missing (Debian/Ubuntu: `apt-get install bubblewrap socat`)",
                missing.join(" and ")
            ))
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const ROOT: &str = ".claude/orchestrator/";

    #[test]
    fn add_merges_is_idempotent_and_remove_is_exact() {
        let original = json!({
            "model": "x",
            "permissions": {"allow": ["Bash(ls)"], "deny": ["Read(./.env)", "Edit(./.lsp.json)"]},
            "sandbox": {"autoAllowBashIfSandboxed": false, "allowUnsandboxedCommands": true,
                        "filesystem": {"denyWrite": ["./secrets"]}},
            "zz": 1
        });
        let mut settings = original.clone();
        let record = add(&mut settings, ROOT, None);
        assert_eq!(settings["sandbox"]["enabled"], true);
        assert_eq!(settings["sandbox"]["allowUnsandboxedCommands"], false);
        assert_eq!(settings["sandbox"]["failIfUnavailable"], true);
        assert_eq!(
            settings["sandbox"]["autoAllowBashIfSandboxed"], false,
            "the user's choice stays"
        );
        let deny_write = settings["sandbox"]["filesystem"]["denyWrite"]
            .as_array()
            .unwrap();
        assert_eq!(deny_write[0], "./secrets");
        assert!(deny_write.contains(&json!("./.claude/orchestrator")));
        assert!(deny_write.contains(&json!("./.claude/skills")));
        let deny = settings["permissions"]["deny"].as_array().unwrap();
        assert!(deny.contains(&json!("Write(./.claude/orchestrator/**)")));
        assert!(deny.contains(&json!("NotebookEdit(./.claude/commands/**)")));
        assert!(deny.contains(&json!("MultiEdit(./.claude/settings.json)")));
        assert_eq!(
            deny.iter()
                .filter(|v| **v == json!("Edit(./.lsp.json)"))
                .count(),
            1,
            "no duplicate of the user's rule"
        );
        assert!(
            assess(&settings, ROOT).iter().all(|f| !f.problem),
            "{:?}",
            assess(&settings, ROOT)
        );

        let once = settings.clone();
        let again = add(&mut settings, ROOT, Some(&record));
        assert_eq!(settings, once, "re-running changes nothing");
        assert_eq!(again, record, "and keeps the same record");

        remove(&mut settings, &again);
        assert_eq!(settings, original);
    }

    #[test]
    fn remove_from_nothing_leaves_nothing() {
        let mut settings = json!({});
        let record = add(&mut settings, ROOT, None);
        remove(&mut settings, &record);
        assert_eq!(settings, json!({}));
    }

    #[test]
    fn a_value_the_user_changed_after_install_stays() {
        let mut settings = json!({});
        let record = add(&mut settings, ROOT, None);
        settings["sandbox"]["failIfUnavailable"] = json!(false);
        remove(&mut settings, &record);
        assert_eq!(settings, json!({"sandbox": {"failIfUnavailable": false}}));
    }

    #[test]
    fn assess_names_each_door() {
        assert!(assess(&json!({}), ROOT)[0].text.starts_with("off"));
        let mut settings = json!({});
        add(&mut settings, ROOT, None);
        settings["sandbox"]["allowUnsandboxedCommands"] = json!(true);
        settings["sandbox"]["excludedCommands"] = json!(["docker", "python3"]);
        settings["sandbox"]["network"]["allowAllUnixSockets"] = json!(true);
        settings["sandbox"]["filesystem"]["denyWrite"] = json!(["./.claude/orchestrator"]);
        let problems: Vec<String> = assess(&settings, ROOT)
            .into_iter()
            .filter(|f| f.problem)
            .map(|f| f.text)
            .collect();
        assert_eq!(problems.len(), 4, "{problems:#?}");
        assert!(problems[0].contains("dangerouslyDisableSandbox"));
        assert!(problems[1].contains("docker, python3"));
        assert!(problems[2].contains("allowAllUnixSockets"));
        assert!(problems[3].contains(".claude/skills") && !problems[3].contains("orchestrator"));
    }

    #[test]
    fn a_state_root_elsewhere_is_named_absolutely() {
        let mut settings = json!({});
        add(&mut settings, "/var/state/ralph/", None);
        let deny_write = settings["sandbox"]["filesystem"]["denyWrite"]
            .as_array()
            .unwrap();
        assert!(deny_write.contains(&json!("/var/state/ralph")));
        let deny = settings["permissions"]["deny"].as_array().unwrap();
        assert!(deny.contains(&json!("Write(//var/state/ralph/**)")));
    }
}
