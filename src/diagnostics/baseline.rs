//! `diagnostics.json`: the last diagnostics per file, the baseline against
//! which the next edit's diagnostics are classified, plus the not-installed
//! notices already given (one per language and session).
//!
//! An entry records the hash of the text it was computed for, so it is used
//! only when that text is what the next edit started from.

use std::collections::BTreeMap;

use chrono::{DateTime, Utc};
use serde::{Deserialize, Serialize};

use crate::engine::model::Diag;
use crate::hook::ctx::Ctx;
use crate::state::Versioned;
use crate::util::text::fnv1a;

pub const BASELINE_FILE: &str = "diagnostics.json";

/// Files kept; the least recently checked go first.
const MAX_FILES: usize = 500;
/// Diagnostics kept per file.
const MAX_PER_FILE: usize = 200;

#[derive(Debug, Clone, Default, Serialize, Deserialize)]
pub struct Baseline {
    #[serde(default)]
    pub version: u64,
    /// By project-relative path (absolute outside the project).
    #[serde(default)]
    pub files: BTreeMap<String, FileEntry>,
    /// Language → the session that was already told its server is missing.
    #[serde(default)]
    pub notices: BTreeMap<String, String>,
}

impl Versioned for Baseline {
    const VERSION: u64 = 1;
}

#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct FileEntry {
    /// [`content_hash`] of the text these diagnostics describe.
    pub content_hash: String,
    pub checked_at: DateTime<Utc>,
    pub server: String,
    /// Whether ast-grep findings are part of `diagnostics`.
    #[serde(default)]
    pub ast_grep: bool,
    pub diagnostics: Vec<Diag>,
}

pub fn content_hash(text: &str) -> String {
    format!("{:016x}", fnv1a(text.as_bytes()))
}

impl Baseline {
    pub fn record(&mut self, key: &str, mut entry: FileEntry) {
        entry.diagnostics.truncate(MAX_PER_FILE);
        self.files.insert(key.to_string(), entry);
        if self.files.len() > MAX_FILES {
            let mut by_age: Vec<(DateTime<Utc>, String)> = self
                .files
                .iter()
                .map(|(k, e)| (e.checked_at, k.clone()))
                .collect();
            by_age.sort();
            for (_, stale) in by_age.into_iter().take(self.files.len() - MAX_FILES) {
                self.files.remove(&stale);
            }
        }
    }
}

/// The stored entry for `key`, if any (a corrupt file reads as none).
pub fn load_entry(ctx: &Ctx, key: &str) -> Option<FileEntry> {
    match ctx.store().read_json::<Baseline>(BASELINE_FILE) {
        Ok(baseline) => baseline?.files.get(key).cloned(),
        Err(error) => {
            ctx.debug(format_args!("cannot read {BASELINE_FILE}: {error:#}"));
            None
        }
    }
}

/// Saves fresh entries in one locked read-modify-write.
pub fn save_entries(ctx: &Ctx, entries: Vec<(String, FileEntry)>) -> anyhow::Result<()> {
    if entries.is_empty() {
        return Ok(());
    }
    let locked = ctx.store().lock(BASELINE_FILE)?;
    let mut baseline = locked.load_json::<Baseline>()?.unwrap_or_default();
    for (key, entry) in entries {
        baseline.record(&key, entry);
    }
    locked.save_json(&baseline)
}

/// Marks the not-installed notice for `language` as given in this session;
/// `false` when it already was.
pub fn claim_notice(ctx: &Ctx, language: &str) -> anyhow::Result<bool> {
    let session = ctx.session_id.clone().unwrap_or_default();
    let locked = ctx.store().lock(BASELINE_FILE)?;
    let mut baseline = locked.load_json::<Baseline>()?.unwrap_or_default();
    if baseline.notices.get(language) == Some(&session) {
        return Ok(false);
    }
    baseline.notices.insert(language.to_string(), session);
    locked.save_json(&baseline)?;
    Ok(true)
}
