//! The `daemon` section of `.claude/ralph-hooks.json`: whether hooks use the
//! daemon, how long idle servers and the daemon itself live, the restart
//! bound, the memory ceiling, pre-start, and how long a hook waits for it.
//! A broken section is reported and replaced by the defaults.

use std::path::Path;
use std::time::Duration;

use serde::Deserialize;

use crate::hook::config::Config;
use crate::hook::ctx::Ctx;

#[derive(Debug, Clone, Deserialize)]
#[serde(default)]
pub struct DaemonConfig {
    /// Hooks ask the daemon first (`false`: every check starts its server
    /// in the hook, cold). `RALPH_HOOKS_DAEMON=0` turns it off too.
    pub enabled: bool,
    /// A server that answered no check for this long is shut down. Three
    /// minutes, inside the seed's five (AC-LSP-001): while an agent works in
    /// a language its edits and Stops reach the server far more often, so
    /// one idle this long most likely serves a part of the project the work
    /// has left, and its memory (60–215 MB on a small project, far more on
    /// a large one) is better returned; coming back costs one cold start
    /// (about 1 s for pyright, 2 s for typescript-language-server, a
    /// `cargo check` for rust-analyzer).
    pub server_idle_ms: u64,
    /// The daemon exits when no server runs and no request came for this long.
    pub exit_idle_ms: u64,
    /// A file not checked for this long is closed (`didClose`) on its server.
    pub file_idle_ms: u64,
    /// A server that crashed or hung this many times within a minute is not
    /// started again until the minute is over; checks say why meanwhile.
    pub max_restarts_per_minute: u32,
    /// A server that sent nothing at all for this long while a check waited
    /// on it is hung and stopped; one that talks is only slow, and kept (a
    /// whole-project re-analysis may outlast a hook's deadline).
    pub hung_after_ms: u64,
    /// Ceiling for the RSS of the daemon and all its servers; above it the
    /// least recently used server is shut down. 0: no ceiling.
    pub memory_limit_mb: u64,
    /// `ralph-session-start` starts the daemon and the servers this project
    /// used before (nothing when it never used one).
    pub prestart: bool,
    /// With `prestart`, also the servers of the languages the project
    /// contains (marker files, source files near the root), used or not.
    pub prestart_detect: bool,
    /// How long a hook waits to connect and for the daemon's handshake.
    pub connect_timeout_ms: u64,
    /// How long a hook waits for a daemon it just started to answer.
    pub start_timeout_ms: u64,
    /// Time a server gets to exit after `shutdown` before it is killed.
    pub shutdown_grace_ms: u64,
}

impl Default for DaemonConfig {
    fn default() -> DaemonConfig {
        DaemonConfig {
            enabled: true,
            server_idle_ms: 3 * 60 * 1000,
            exit_idle_ms: 10 * 60 * 1000,
            file_idle_ms: 2 * 60 * 1000,
            max_restarts_per_minute: 3,
            hung_after_ms: 30 * 1000,
            memory_limit_mb: 1024,
            prestart: true,
            prestart_detect: true,
            connect_timeout_ms: 200,
            start_timeout_ms: 1500,
            shutdown_grace_ms: 1000,
        }
    }
}

impl DaemonConfig {
    pub fn load(ctx: &Ctx) -> DaemonConfig {
        from_config(ctx.config())
    }

    /// Reads the project's config afresh (the daemon re-reads it when the
    /// file changes).
    pub fn load_from(project_root: &Path) -> DaemonConfig {
        match Config::load(project_root) {
            Ok(config) => from_config(&config),
            Err(_) => DaemonConfig::default(),
        }
    }

    pub fn hung_after(&self) -> Duration {
        Duration::from_millis(self.hung_after_ms)
    }

    pub fn server_idle(&self) -> Duration {
        Duration::from_millis(self.server_idle_ms)
    }

    pub fn exit_idle(&self) -> Duration {
        Duration::from_millis(self.exit_idle_ms)
    }

    pub fn file_idle(&self) -> Duration {
        Duration::from_millis(self.file_idle_ms)
    }

    pub fn connect_timeout(&self) -> Duration {
        Duration::from_millis(self.connect_timeout_ms.max(1))
    }

    pub fn start_timeout(&self) -> Duration {
        Duration::from_millis(self.start_timeout_ms)
    }

    pub fn shutdown_grace(&self) -> Duration {
        Duration::from_millis(self.shutdown_grace_ms)
    }
}

fn from_config(config: &Config) -> DaemonConfig {
    config
        .section::<DaemonConfig>("daemon")
        .unwrap_or_else(|error| {
            eprintln!("ralph-hooks: warning: using default daemon settings: {error:#}");
            DaemonConfig::default()
        })
}

/// `RALPH_HOOKS_DAEMON=0` (or `off`, `false`, `no`) keeps every check in the
/// hook's own process.
pub fn disabled_by_env() -> bool {
    std::env::var("RALPH_HOOKS_DAEMON").is_ok_and(|value| {
        matches!(
            value.trim().to_ascii_lowercase().as_str(),
            "0" | "off" | "false" | "no"
        )
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn defaults_follow_the_seed() {
        let config = DaemonConfig::default();
        // Idle servers stop within the seed's five minutes.
        assert!(config.server_idle() <= Duration::from_secs(300));
        assert_eq!(config.exit_idle(), Duration::from_secs(600));
        assert!(config.enabled);
    }

    #[test]
    fn partial_section_keeps_the_other_defaults() {
        let config: DaemonConfig =
            serde_json::from_value(serde_json::json!({"server_idle_ms": 250})).unwrap();
        assert_eq!(config.server_idle_ms, 250);
        assert_eq!(config.exit_idle_ms, 600_000);
    }
}
