//! What the daemon leaves under the state root, all through the store:
//! `daemon/daemon.json` (its pid, build, socket and the servers it runs, so
//! a successor can clean up after a daemon that was killed),
//! `daemon/servers.json` (the servers this project used, for pre-start) and
//! `daemon/daemon.log`.

use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

use super::paths::{self, Paths};
use super::procs;
use crate::state::{Store, Versioned};

#[derive(Debug, Clone, Default, Serialize, Deserialize)]
pub struct DaemonRecord {
    pub pid: u32,
    pub start_time: u64,
    pub build: String,
    pub socket: PathBuf,
    pub project: PathBuf,
    pub started_at: String,
    #[serde(default)]
    pub servers: Vec<ServerRecord>,
}

impl Versioned for DaemonRecord {
    const VERSION: u64 = 1;
}

/// A running server: enough to find its process group again.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ServerRecord {
    pub name: String,
    pub root: PathBuf,
    pub pid: u32,
    pub start_time: u64,
}

#[derive(Debug, Clone, Default, Serialize, Deserialize)]
pub struct Recent {
    #[serde(default)]
    pub servers: Vec<RecentServer>,
}

impl Versioned for Recent {
    const VERSION: u64 = 1;
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct RecentServer {
    pub name: String,
    pub root: PathBuf,
    pub last_used: String,
}

/// How many servers pre-start remembers.
const MAX_RECENT: usize = 8;

/// Notes that `name` ran for `root`, most recent first.
pub fn remember_server(store: &Store, name: &str, root: &Path) -> anyhow::Result<()> {
    let locked = store.lock(paths::RECENT)?;
    let mut recent = locked.load_json::<Recent>()?.unwrap_or_default();
    recent
        .servers
        .retain(|server| !(server.name == name && server.root == root));
    recent.servers.insert(
        0,
        RecentServer {
            name: name.to_string(),
            root: root.to_path_buf(),
            last_used: chrono::Utc::now().to_rfc3339_opts(chrono::SecondsFormat::Secs, true),
        },
    );
    recent.servers.truncate(MAX_RECENT);
    locked.save_json(&recent)
}

pub fn recent_servers(store: &Store) -> Vec<RecentServer> {
    match store.read_json::<Recent>(paths::RECENT) {
        Ok(Some(recent)) => recent.servers,
        _ => Vec::new(),
    }
}

/// Appends a timestamped line to the daemon's log; a log that cannot be
/// written is not worth failing for.
pub fn log(store: &Store, message: &str) {
    let stamp = chrono::Utc::now().format("%Y-%m-%dT%H:%M:%S%.3fZ");
    let _ = store.append_line(
        paths::LOG,
        &format!("{stamp} [{}] {message}", std::process::id()),
    );
}

/// Keeps the log under `max_bytes` by dropping its older half.
pub fn trim_log(store: &Store, max_bytes: u64) {
    let too_big = std::fs::metadata(store.path(paths::LOG)).is_ok_and(|m| m.len() > max_bytes);
    if !too_big {
        return;
    }
    if let Ok(locked) = store.lock(paths::LOG)
        && let Ok(Some(text)) = locked.load_text()
    {
        let lines: Vec<&str> = text.lines().collect();
        let kept = lines[lines.len() / 2..].join("\n");
        let _ = locked.save_text(&format!("{kept}\n"));
    }
}

/// Cleans up after a daemon that is gone (the caller holds the life lock):
/// kills the leftover process groups of its servers and any process marked
/// as one of this state root's servers, removes its record and its socket.
/// Returns what it did, for messages.
pub fn clean_stale(store: &Store, paths: &Paths) -> Vec<String> {
    let mut done = Vec::new();
    if let Ok(locked) = store.lock(paths::RECORD) {
        if let Ok(Some(record)) = locked.load_json::<DaemonRecord>() {
            for server in &record.servers {
                if procs::kill_leftover_group(server.pid, server.start_time) {
                    done.push(format!(
                        "killed the leftover {} server (process group {}) of daemon {}",
                        server.name, server.pid, record.pid
                    ));
                }
            }
            done.push(format!("removed the record of daemon {}", record.pid));
        }
        let _ = locked.remove();
    }
    // Servers a killed daemon was still starting are in no record; their
    // environment says whose they were.
    let killed = procs::kill_marked(&paths.state_root.to_string_lossy());
    if !killed.is_empty() {
        done.push(format!(
            "killed {} leftover server process(es) of this state root: {killed:?}",
            killed.len()
        ));
    }
    if let Ok(metadata) = std::fs::symlink_metadata(&paths.socket) {
        use std::os::unix::fs::FileTypeExt;
        if metadata.file_type().is_socket() && std::fs::remove_file(&paths.socket).is_ok() {
            done.push(format!(
                "removed the stale socket {}",
                paths.socket.display()
            ));
        }
    }
    done
}
