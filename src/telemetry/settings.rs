//! The `telemetry` section of `.claude/ralph-hooks.json` and the switch.
//!
//! Telemetry is on exactly when Claude Code's own is: the environment says
//! `CLAUDE_CODE_ENABLE_TELEMETRY=1` (Claude Code passes it, and its
//! settings files' `env`, to hooks). `"enabled": false` turns it off for the
//! project whatever the environment says; `"enabled": true` turns it on
//! without the variable. Being on only starts the exporter: it sends
//! nothing unless an OTLP exporter is configured (see [`super::sources`]).

use std::collections::BTreeMap;

use serde::Deserialize;

use crate::hook::config::Config;
use crate::hook::ctx::Ctx;

/// Backlog kept for a collector that is away: past this many bytes of
/// `events.jsonl` not yet accepted, the oldest events are dropped.
pub const DEFAULT_MAX_BACKLOG_BYTES: u64 = 8 * 1024 * 1024;
/// The exporter exits after this long without a new event (the daemon's
/// `exit_idle_ms` too), so nothing is left running after the work ended.
pub const DEFAULT_EXIT_IDLE_MS: u64 = 600_000;

/// The `telemetry` config section; every key optional.
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(default)]
pub struct TelemetrySection {
    /// `Some(false)`: off for this project; `Some(true)`: on without
    /// `CLAUDE_CODE_ENABLE_TELEMETRY`; `None`: follow the variable.
    pub enabled: Option<bool>,
    /// Standard `OTEL_*` variables that win over every other source, for a
    /// project whose collector is configured nowhere else.
    pub env: BTreeMap<String, String>,
    pub max_backlog_bytes: Option<u64>,
    pub exit_idle_ms: Option<u64>,
}

impl TelemetrySection {
    pub fn from_config(config: &Config) -> anyhow::Result<TelemetrySection> {
        config.section("telemetry")
    }

    pub fn max_backlog_bytes(&self) -> u64 {
        self.max_backlog_bytes.unwrap_or(DEFAULT_MAX_BACKLOG_BYTES)
    }

    pub fn exit_idle_ms(&self) -> u64 {
        self.exit_idle_ms.unwrap_or(DEFAULT_EXIT_IDLE_MS)
    }
}

/// Whether telemetry is on, and why (for status lines and `[DEBUG]`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Switch {
    On(String),
    Off(String),
}

impl Switch {
    pub fn is_on(&self) -> bool {
        matches!(self, Switch::On(_))
    }

    pub fn why(&self) -> &str {
        match self {
            Switch::On(why) | Switch::Off(why) => why,
        }
    }
}

/// The variable Claude Code turns its own telemetry on with.
pub const ENABLE_VAR: &str = "CLAUDE_CODE_ENABLE_TELEMETRY";

/// Claude Code's reading of a boolean variable.
pub fn truthy(value: &str) -> bool {
    matches!(
        value.trim().to_ascii_lowercase().as_str(),
        "1" | "true" | "yes" | "on"
    )
}

/// The decision, pure: the section's `enabled`, else the variable's value
/// (found in `where_found`).
pub fn decide(section: &TelemetrySection, enable: Option<(&str, &str)>) -> Switch {
    match section.enabled {
        Some(false) => Switch::Off("\"telemetry\": {\"enabled\": false}".into()),
        Some(true) => Switch::On("\"telemetry\": {\"enabled\": true}".into()),
        None => match enable {
            Some((value, where_found)) if truthy(value) => {
                Switch::On(format!("{ENABLE_VAR}={value} {where_found}"))
            }
            Some((value, where_found)) => {
                Switch::Off(format!("{ENABLE_VAR}={value} {where_found}"))
            }
            None => Switch::Off(format!("{ENABLE_VAR} is not set")),
        },
    }
}

/// The switch as a hook or CLI command sees it: its own environment (where
/// Claude Code put the variable) and the project config. A section that does
/// not parse means off: a typo must not start sending.
pub fn switch_for(ctx: &Ctx) -> Switch {
    // Read quietly: a broken config is the feature's own business to report
    // (the hook already did, or will), not a second warning from us.
    let section = match Config::load(&ctx.project_root)
        .and_then(|config| TelemetrySection::from_config(&config))
    {
        Ok(section) => section,
        Err(error) => return Switch::Off(format!("{error:#}")),
    };
    let value = std::env::var(ENABLE_VAR).ok();
    decide(
        &section,
        value.as_deref().map(|value| (value, "in the environment")),
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    fn section(enabled: Option<bool>) -> TelemetrySection {
        TelemetrySection {
            enabled,
            ..TelemetrySection::default()
        }
    }

    #[test]
    fn the_variable_decides_unless_the_section_does() {
        assert!(decide(&section(None), Some(("1", "here"))).is_on());
        assert!(decide(&section(None), Some(("true", "here"))).is_on());
        assert!(!decide(&section(None), Some(("0", "here"))).is_on());
        assert!(!decide(&section(None), None).is_on());
        assert!(!decide(&section(Some(false)), Some(("1", "here"))).is_on());
        assert!(decide(&section(Some(true)), None).is_on());
    }

    #[test]
    fn the_section_parses_with_every_key_optional() {
        let section: TelemetrySection = serde_json::from_value(serde_json::json!({
            "env": {"OTEL_LOGS_EXPORTER": "otlp"}, "exit_idle_ms": 5
        }))
        .unwrap();
        assert_eq!(section.enabled, None);
        assert_eq!(section.env["OTEL_LOGS_EXPORTER"], "otlp");
        assert_eq!(section.exit_idle_ms(), 5);
        assert_eq!(section.max_backlog_bytes(), DEFAULT_MAX_BACKLOG_BYTES);
    }
}
