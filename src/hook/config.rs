//! The optional project config, `<project>/.claude/ralph-hooks.json`.
//!
//! Each feature owns one top-level section (`lsp`, `guard`, `continuation`,
//! `diagnostics`, …) and parses it itself with [`Config::section`], so adding a
//! feature never touches this file. A missing file is the defaults.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use anyhow::Context as _;
use serde::de::DeserializeOwned;
use serde_json::Value;

#[derive(Debug, Default, Clone)]
pub struct Config {
    /// Where it was read from, for messages; `None` when absent.
    pub path: Option<PathBuf>,
    sections: BTreeMap<String, Value>,
}

impl Config {
    pub fn file_path(project_root: &Path) -> PathBuf {
        project_root.join(".claude").join("ralph-hooks.json")
    }

    pub fn load(project_root: &Path) -> anyhow::Result<Config> {
        let path = Config::file_path(project_root);
        let text = match std::fs::read_to_string(&path) {
            Ok(text) => text,
            Err(error) if error.kind() == std::io::ErrorKind::NotFound => {
                return Ok(Config::default());
            }
            Err(error) => {
                return Err(error).with_context(|| format!("cannot read {}", path.display()));
            }
        };
        let sections: BTreeMap<String, Value> = serde_json::from_str(&text)
            .with_context(|| format!("{} is not a JSON object", path.display()))?;
        Ok(Config {
            path: Some(path),
            sections,
        })
    }

    /// The raw JSON of one section, if present.
    pub fn raw(&self, name: &str) -> Option<&Value> {
        self.sections.get(name)
    }

    /// One section parsed into its type; missing means `T::default()`.
    pub fn section<T: DeserializeOwned + Default>(&self, name: &str) -> anyhow::Result<T> {
        match self.sections.get(name) {
            None => Ok(T::default()),
            Some(value) => serde_json::from_value(value.clone()).with_context(|| {
                format!(
                    "section {name:?} of {} is invalid",
                    self.path
                        .as_deref()
                        .map(Path::display)
                        .map(|d| d.to_string())
                        .unwrap_or_default()
                )
            }),
        }
    }
}
