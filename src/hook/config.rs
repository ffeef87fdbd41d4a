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

use crate::util::fsread::{self, Links, limits};

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
        // A repository can commit this file as a FIFO or a link to
        // /dev/zero: the shared reader refuses those at once.
        let Some(text) = fsread::read_text(&path, limits::CONFIG, Links::Follow)? else {
            return Ok(Config::default());
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
