//! Where the OTLP settings come from, and what they say.
//!
//! Claude Code removes every `OTEL_*` variable from a hook's environment
//! (and from its Bash tool's), so the exporter a hook starts cannot simply
//! inherit them. It gathers the standard variables from, lowest precedence
//! first (a later source wins, as Claude Code's settings `env` wins over the
//! environment it was started in):
//!
//! 1. its own environment (a `ralph-hooks` command run from a shell has them);
//! 2. the environment Claude Code itself was started with,
//!    `/proc/$CLAUDE_PID/environ` (`$CLAUDE_PID` is in every hook's
//!    environment): the shell's `export OTEL_…`;
//! 3. the `env` of Claude Code's settings files: `~/.claude/settings.json`
//!    (or `$CLAUDE_CONFIG_DIR/settings.json`), `.claude/settings.json`,
//!    `.claude/settings.local.json`, and the managed settings file;
//! 4. the `telemetry.env` of `.claude/ralph-hooks.json`.
//!
//! Only `OTEL_*` and `CLAUDE_CODE_ENABLE_TELEMETRY` are taken from any of
//! them.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::time::Duration;

use serde::{Deserialize, Serialize};
use serde_json::Value;

use super::settings::{ENABLE_VAR, TelemetrySection};
use crate::util::fsread::{self, Links, limits};

/// One place variables were found, by a name people recognise.
#[derive(Debug, Clone, Default)]
pub struct Source {
    pub name: String,
    pub vars: Vec<(String, String)>,
}

/// Whether a variable is one the exporter reads.
pub fn relevant(name: &str) -> bool {
    name.starts_with("OTEL_") || name == ENABLE_VAR
}

impl Source {
    pub fn from_pairs(
        name: impl Into<String>,
        pairs: impl IntoIterator<Item = (String, String)>,
    ) -> Source {
        Source {
            name: name.into(),
            vars: pairs.into_iter().filter(|(key, _)| relevant(key)).collect(),
        }
    }
}

/// This process's environment.
pub fn environment() -> Source {
    Source::from_pairs(
        "the environment",
        std::env::vars_os().map(|(key, value)| {
            (
                key.to_string_lossy().into_owned(),
                value.to_string_lossy().into_owned(),
            )
        }),
    )
}

/// The environment process `pid` was started with (`NUL`-separated
/// `KEY=value`); `None` when it is gone or not ours to read.
pub fn process_environment(pid: u32) -> Option<Source> {
    let path = PathBuf::from(format!("/proc/{pid}/environ"));
    let bytes = fsread::read_bytes(&path, limits::CONFIG, Links::Follow).ok()??;
    let pairs = bytes.split(|byte| *byte == 0).filter_map(|entry| {
        let text = String::from_utf8_lossy(entry);
        let (key, value) = text.split_once('=')?;
        Some((key.to_string(), value.to_string()))
    });
    Some(Source::from_pairs(
        format!("Claude Code's environment (pid {pid})"),
        pairs,
    ))
}

/// Claude Code's settings files, lowest precedence first, with the name
/// each is shown by.
pub fn settings_files(project_root: &Path) -> Vec<(String, PathBuf)> {
    let mut files = Vec::new();
    let user_dir = std::env::var_os("CLAUDE_CONFIG_DIR")
        .filter(|dir| !dir.is_empty())
        .map(PathBuf::from)
        .or_else(|| std::env::var_os("HOME").map(|home| PathBuf::from(home).join(".claude")));
    if let Some(dir) = user_dir {
        files.push(dir.join("settings.json"));
    }
    let claude = project_root.join(".claude");
    files.push(claude.join("settings.json"));
    files.push(claude.join("settings.local.json"));
    files.push(PathBuf::from(if cfg!(target_os = "macos") {
        "/Library/Application Support/ClaudeCode/managed-settings.json"
    } else {
        "/etc/claude-code/managed-settings.json"
    }));
    files
        .into_iter()
        .map(|path| (path.display().to_string(), path))
        .collect()
}

/// The `env` object of one settings file: `Ok(None)` when there is no
/// file, `Err` when it cannot be read or is not JSON.
pub fn settings_env(name: &str, path: &Path) -> Result<Option<Source>, String> {
    let text = match fsread::read_text(path, limits::CONFIG, Links::Follow) {
        Ok(Some(text)) => text,
        Ok(None) => return Ok(None),
        Err(error) => return Err(error.reason()),
    };
    let value: Value =
        serde_json::from_str(&text).map_err(|error| format!("{name} is not JSON: {error}"))?;
    let Some(env) = value.get("env").and_then(Value::as_object) else {
        return Ok(None);
    };
    let pairs = env.iter().filter_map(|(key, value)| {
        let text = match value {
            Value::String(text) => text.clone(),
            Value::Number(number) => number.to_string(),
            Value::Bool(flag) => flag.to_string(),
            _ => return None,
        };
        Some((key.clone(), text))
    });
    Ok(Some(Source::from_pairs(name.to_string(), pairs)))
}

/// Every source for a project, lowest precedence first, and the problems met
/// (a settings file that is not JSON is skipped and named).
pub fn gather(
    project_root: &Path,
    claude_pid: Option<u32>,
    section: &TelemetrySection,
    config_name: &str,
) -> (Vec<Source>, Vec<String>) {
    let mut sources = vec![environment()];
    let mut problems = Vec::new();
    if let Some(source) = claude_pid.and_then(process_environment) {
        sources.push(source);
    }
    for (name, path) in settings_files(project_root) {
        match settings_env(&name, &path) {
            Ok(Some(source)) => sources.push(source),
            Ok(None) => {}
            Err(problem) => problems.push(problem),
        }
    }
    sources.push(Source::from_pairs(
        format!("{config_name} (telemetry.env)"),
        section.env.clone(),
    ));
    (sources, problems)
}

/// The merged variables, each with the source it came from.
#[derive(Debug, Clone, Default, Serialize, Deserialize)]
pub struct Resolved {
    pub vars: BTreeMap<String, Setting>,
}

#[derive(Debug, Clone, Serialize, Deserialize, PartialEq, Eq)]
pub struct Setting {
    pub value: String,
    pub source: String,
}

/// Later sources win; an empty value counts as unset, as in Claude Code.
pub fn merge(sources: &[Source]) -> Resolved {
    let mut vars = BTreeMap::new();
    for source in sources {
        for (key, value) in &source.vars {
            if value.is_empty() {
                vars.remove(key);
                continue;
            }
            vars.insert(
                key.clone(),
                Setting {
                    value: value.clone(),
                    source: source.name.clone(),
                },
            );
        }
    }
    Resolved { vars }
}

/// The three OpenTelemetry signals.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum SignalKind {
    Logs,
    Metrics,
    Traces,
}

impl SignalKind {
    pub const ALL: [SignalKind; 3] = [SignalKind::Logs, SignalKind::Metrics, SignalKind::Traces];

    pub fn as_str(self) -> &'static str {
        match self {
            SignalKind::Logs => "logs",
            SignalKind::Metrics => "metrics",
            SignalKind::Traces => "traces",
        }
    }

    /// `OTEL_LOGS_EXPORTER` and its kin: a comma-separated list of exporters.
    fn exporter_var(self) -> &'static str {
        match self {
            SignalKind::Logs => "OTEL_LOGS_EXPORTER",
            SignalKind::Metrics => "OTEL_METRICS_EXPORTER",
            SignalKind::Traces => "OTEL_TRACES_EXPORTER",
        }
    }

    fn upper(self) -> &'static str {
        match self {
            SignalKind::Logs => "LOGS",
            SignalKind::Metrics => "METRICS",
            SignalKind::Traces => "TRACES",
        }
    }
}

/// The OTLP transports.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub enum Protocol {
    #[serde(rename = "grpc")]
    Grpc,
    #[serde(rename = "http/protobuf")]
    HttpProtobuf,
    #[serde(rename = "http/json")]
    HttpJson,
}

impl Protocol {
    pub fn parse(text: &str) -> Option<Protocol> {
        match text.trim() {
            "grpc" => Some(Protocol::Grpc),
            "http/protobuf" => Some(Protocol::HttpProtobuf),
            "http/json" => Some(Protocol::HttpJson),
            _ => None,
        }
    }

    pub fn as_str(self) -> &'static str {
        match self {
            Protocol::Grpc => "grpc",
            Protocol::HttpProtobuf => "http/protobuf",
            Protocol::HttpJson => "http/json",
        }
    }
}

/// One signal an OTLP exporter is configured for: where it goes, or why it
/// cannot go anywhere.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Signal {
    pub kind: SignalKind,
    pub protocol: Option<Protocol>,
    pub endpoint: String,
    /// Set when the signal is asked for but cannot be sent.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub problem: Option<String>,
}

impl Signal {
    pub fn usable(&self) -> bool {
        self.problem.is_none() && self.protocol.is_some()
    }
}

impl Resolved {
    pub fn get(&self, key: &str) -> Option<&str> {
        self.vars.get(key).map(|setting| setting.value.as_str())
    }

    /// `"CLAUDE_CODE_ENABLE_TELEMETRY=1 from …"`-style origin of a variable.
    pub fn origin(&self, key: &str) -> Option<String> {
        self.vars
            .get(key)
            .map(|setting| format!("{key}={} from {}", setting.value, setting.source))
    }

    /// Each signal whose `OTEL_<SIGNAL>_EXPORTER` lists `otlp`, with the
    /// protocol and endpoint the standard variables give it (the same rules
    /// as `opentelemetry-otlp`: a signal's own endpoint is used as it is;
    /// the shared one gets `/v1/<signal>` appended for HTTP).
    pub fn signals(&self) -> Vec<Signal> {
        let mut signals = Vec::new();
        for kind in SignalKind::ALL {
            let wanted = self
                .get(kind.exporter_var())
                .is_some_and(|list| list.split(',').any(|name| name.trim() == "otlp"));
            if !wanted {
                continue;
            }
            let own = |suffix: &str| format!("OTEL_EXPORTER_OTLP_{}_{suffix}", kind.upper());
            let protocol_text = self
                .get(&own("PROTOCOL"))
                .or_else(|| self.get("OTEL_EXPORTER_OTLP_PROTOCOL"))
                .unwrap_or("http/protobuf");
            let protocol = Protocol::parse(protocol_text);
            let endpoint = match (
                self.get(&own("ENDPOINT")),
                self.get("OTEL_EXPORTER_OTLP_ENDPOINT"),
            ) {
                (Some(endpoint), _) => endpoint.to_string(),
                (None, Some(shared)) if protocol == Some(Protocol::Grpc) => shared.to_string(),
                (None, Some(shared)) => {
                    format!("{}/v1/{}", shared.trim_end_matches('/'), kind.as_str())
                }
                (None, None) if protocol == Some(Protocol::Grpc) => {
                    "http://localhost:4317".to_string()
                }
                (None, None) => format!("http://localhost:4318/v1/{}", kind.as_str()),
            };
            let problem = if protocol.is_none() {
                Some(format!(
                    "unknown OTLP protocol {protocol_text:?} (grpc, http/protobuf or http/json)"
                ))
            } else if endpoint
                .trim_start()
                .to_ascii_lowercase()
                .starts_with("https://")
            {
                Some(format!(
                    "{endpoint} needs TLS, which ralph-hooks is built without: send to a collector on http:// (a local OpenTelemetry Collector that forwards over TLS)"
                ))
            } else {
                None
            };
            signals.push(Signal {
                kind,
                protocol,
                endpoint,
                problem,
            });
        }
        signals
    }

    /// A duration in milliseconds from the first of `keys` that is set and
    /// a number, else `default_ms`.
    pub fn millis(&self, keys: &[&str], default_ms: u64) -> Duration {
        let ms = keys
            .iter()
            .find_map(|key| self.get(key).and_then(|v| v.trim().parse::<u64>().ok()))
            .unwrap_or(default_ms);
        Duration::from_millis(ms.max(1))
    }

    /// How often new events are shipped: Claude Code's
    /// `OTEL_LOGS_EXPORT_INTERVAL`, else the SDK's `OTEL_BLRP_SCHEDULE_DELAY`
    /// (5 s, Claude Code's default).
    pub fn batch_interval(&self) -> Duration {
        self.millis(
            &["OTEL_LOGS_EXPORT_INTERVAL", "OTEL_BLRP_SCHEDULE_DELAY"],
            5_000,
        )
    }

    /// `OTEL_METRIC_EXPORT_INTERVAL` (60 s).
    pub fn metric_interval(&self) -> Duration {
        self.millis(&["OTEL_METRIC_EXPORT_INTERVAL"], 60_000)
    }

    /// `OTEL_BLRP_MAX_EXPORT_BATCH_SIZE` (512 events per request).
    pub fn batch_size(&self) -> usize {
        self.get("OTEL_BLRP_MAX_EXPORT_BATCH_SIZE")
            .and_then(|v| v.trim().parse::<usize>().ok())
            .filter(|n| *n > 0)
            .unwrap_or(512)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn source(name: &str, pairs: &[(&str, &str)]) -> Source {
        Source::from_pairs(
            name,
            pairs.iter().map(|(k, v)| (k.to_string(), v.to_string())),
        )
    }

    #[test]
    fn later_sources_win_and_only_otel_variables_count() {
        let resolved = merge(&[
            source(
                "env",
                &[
                    ("OTEL_LOGS_EXPORTER", "none"),
                    ("PATH", "/bin"),
                    ("OTEL_SERVICE_NAME", "x"),
                ],
            ),
            source(
                "claude",
                &[("OTEL_LOGS_EXPORTER", "otlp"), (ENABLE_VAR, "1")],
            ),
            source("settings", &[("OTEL_SERVICE_NAME", "")]),
        ]);
        assert_eq!(resolved.get("OTEL_LOGS_EXPORTER"), Some("otlp"));
        assert_eq!(resolved.vars["OTEL_LOGS_EXPORTER"].source, "claude");
        assert_eq!(resolved.get("PATH"), None);
        assert_eq!(resolved.get("OTEL_SERVICE_NAME"), None, "empty unsets");
        assert_eq!(
            resolved.origin(ENABLE_VAR).unwrap(),
            format!("{ENABLE_VAR}=1 from claude")
        );
    }

    #[test]
    fn signals_follow_the_standard_endpoint_rules() {
        let resolved = merge(&[source(
            "s",
            &[
                ("OTEL_LOGS_EXPORTER", "otlp"),
                ("OTEL_METRICS_EXPORTER", "console,otlp"),
                ("OTEL_TRACES_EXPORTER", "otlp"),
                ("OTEL_EXPORTER_OTLP_ENDPOINT", "http://collector:4318/"),
                ("OTEL_EXPORTER_OTLP_TRACES_PROTOCOL", "grpc"),
                ("OTEL_EXPORTER_OTLP_METRICS_ENDPOINT", "http://m:9/custom"),
            ],
        )]);
        let signals = resolved.signals();
        assert_eq!(signals.len(), 3);
        assert_eq!(signals[0].endpoint, "http://collector:4318/v1/logs");
        assert_eq!(signals[0].protocol, Some(Protocol::HttpProtobuf));
        assert_eq!(signals[1].endpoint, "http://m:9/custom");
        assert_eq!(signals[2].protocol, Some(Protocol::Grpc));
        assert_eq!(signals[2].endpoint, "http://collector:4318/");
        assert!(signals.iter().all(Signal::usable));
    }

    #[test]
    fn no_exporter_means_no_signal_and_bad_settings_are_named() {
        assert!(
            merge(&[source("s", &[("OTEL_EXPORTER_OTLP_ENDPOINT", "http://x")])])
                .signals()
                .is_empty()
        );
        let resolved = merge(&[source(
            "s",
            &[
                ("OTEL_LOGS_EXPORTER", "otlp"),
                ("OTEL_EXPORTER_OTLP_PROTOCOL", "udp"),
            ],
        )]);
        let signals = resolved.signals();
        assert!(!signals[0].usable());
        assert!(signals[0].problem.as_deref().unwrap().contains("udp"));
        let tls = merge(&[source(
            "s",
            &[
                ("OTEL_LOGS_EXPORTER", "otlp"),
                ("OTEL_EXPORTER_OTLP_ENDPOINT", "https://x"),
            ],
        )]);
        assert!(tls.signals()[0].problem.as_deref().unwrap().contains("TLS"));
    }

    #[test]
    fn intervals_prefer_claude_codes_variables() {
        let resolved = merge(&[source(
            "s",
            &[
                ("OTEL_LOGS_EXPORT_INTERVAL", "250"),
                ("OTEL_BLRP_SCHEDULE_DELAY", "9000"),
            ],
        )]);
        assert_eq!(resolved.batch_interval(), Duration::from_millis(250));
        assert_eq!(resolved.metric_interval(), Duration::from_secs(60));
        assert_eq!(merge(&[]).batch_interval(), Duration::from_secs(5));
    }

    #[test]
    fn a_settings_files_env_is_read_and_garbage_is_named() {
        let dir =
            std::env::temp_dir().join(format!("ralph-telemetry-settings-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let good = dir.join("settings.json");
        std::fs::write(&good, r#"{"env": {"OTEL_LOGS_EXPORTER": "otlp", "OTHER": "x", "OTEL_METRIC_EXPORT_INTERVAL": 1000}}"#).unwrap();
        let source = settings_env("user", &good).unwrap().unwrap();
        assert_eq!(
            source.vars,
            vec![
                ("OTEL_LOGS_EXPORTER".to_string(), "otlp".to_string()),
                (
                    "OTEL_METRIC_EXPORT_INTERVAL".to_string(),
                    "1000".to_string()
                ),
            ]
        );
        let bad = dir.join("bad.json");
        std::fs::write(&bad, "{").unwrap();
        assert!(settings_env("bad", &bad).is_err());
        assert!(
            settings_env("none", &dir.join("missing.json"))
                .unwrap()
                .is_none()
        );
        std::fs::remove_dir_all(&dir).unwrap();
    }

    #[test]
    fn a_process_environment_is_read_from_proc() {
        let source = process_environment(std::process::id()).expect("our own environ");
        assert!(source.name.contains(&std::process::id().to_string()));
        assert!(source.vars.iter().all(|(key, _)| relevant(key)));
    }
}
