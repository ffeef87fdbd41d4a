//! OpenTelemetry export against real OTLP receivers on loopback, in this
//! process: an OTLP/HTTP endpoint (protobuf decoded with the
//! `opentelemetry-proto` definitions, JSON read as the OTLP JSON encoding)
//! and a tonic gRPC collector. The hooks and the CLI run as processes with
//! the standard variables; the exporter they start ships `events.jsonl`.

use std::collections::BTreeMap;
use std::io::{BufRead, BufReader, Read, Write};
use std::net::{SocketAddr, TcpListener, TcpStream};
use std::path::Path;
use std::process::{Command, Output};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use opentelemetry_proto::tonic::collector::logs::v1::logs_service_server::{
    LogsService, LogsServiceServer,
};
use opentelemetry_proto::tonic::collector::logs::v1::{
    ExportLogsServiceRequest, ExportLogsServiceResponse,
};
use opentelemetry_proto::tonic::collector::metrics::v1::metrics_service_server::{
    MetricsService, MetricsServiceServer,
};
use opentelemetry_proto::tonic::collector::metrics::v1::{
    ExportMetricsServiceRequest, ExportMetricsServiceResponse,
};
use opentelemetry_proto::tonic::collector::trace::v1::trace_service_server::{
    TraceService, TraceServiceServer,
};
use opentelemetry_proto::tonic::collector::trace::v1::{
    ExportTraceServiceRequest, ExportTraceServiceResponse,
};
use opentelemetry_proto::tonic::common::v1::{AnyValue, KeyValue, any_value};
use prost::Message;
use serde_json::{Value, json};

use crate::util::{self, TempDir};

// ---------------------------------------------------------------- receivers

#[derive(Clone, Copy, PartialEq, Eq, Debug)]
enum Mode {
    Accept,
    /// 503 with a body.
    Refuse,
    /// Not HTTP at all, then the connection is closed.
    Garbage,
}

/// What a receiver got: the signal (`logs`, `traces`, `metrics`), the
/// encoding (`protobuf`, `json`) and the body.
#[derive(Clone, Debug)]
struct Received {
    signal: String,
    encoding: &'static str,
    body: Vec<u8>,
}

#[derive(Default)]
struct Shared {
    received: Mutex<Vec<Received>>,
    mode: Mutex<Option<Mode>>,
}

struct Collector {
    addr: SocketAddr,
    shared: Arc<Shared>,
}

impl Collector {
    fn set_mode(&self, mode: Mode) {
        *self.shared.mode.lock().unwrap() = Some(mode);
    }

    fn received(&self) -> Vec<Received> {
        self.shared.received.lock().unwrap().clone()
    }

    fn logs(&self) -> Vec<Log> {
        self.received()
            .iter()
            .filter(|r| r.signal == "logs")
            .flat_map(decode_logs)
            .collect()
    }

    fn spans(&self) -> Vec<Span> {
        self.received()
            .iter()
            .filter(|r| r.signal == "traces")
            .flat_map(decode_spans)
            .collect()
    }

    fn metric_names(&self) -> Vec<String> {
        self.received()
            .iter()
            .filter(|r| r.signal == "metrics")
            .flat_map(decode_metric_names)
            .collect()
    }

    /// Waits (at most 15 s) until the logs satisfy `done`.
    fn wait_for_logs(&self, what: &str, done: impl Fn(&[Log]) -> bool) -> Vec<Log> {
        let deadline = Instant::now() + Duration::from_secs(15);
        loop {
            let logs = self.logs();
            if done(&logs) {
                return logs;
            }
            assert!(
                Instant::now() < deadline,
                "timed out waiting for {what}; got {} log record(s): {:#?}",
                logs.len(),
                logs.iter().map(|l| &l.body).collect::<Vec<_>>()
            );
            std::thread::sleep(Duration::from_millis(50));
        }
    }
}

/// A free loopback port, for a collector that is down at first.
fn free_port() -> u16 {
    TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port()
}

/// An OTLP/HTTP receiver on `port` (0: any), answering per its mode.
fn http_collector(port: u16) -> Collector {
    // A port found free earlier may be held for a moment by another test's
    // socket (CI saw `AddrInUse` once): tried again for a while.
    let deadline = Instant::now() + Duration::from_secs(20);
    let listener = loop {
        match TcpListener::bind(("127.0.0.1", port)) {
            Ok(listener) => break listener,
            Err(error)
                if error.kind() == std::io::ErrorKind::AddrInUse && Instant::now() < deadline =>
            {
                std::thread::sleep(Duration::from_millis(100));
            }
            Err(error) => panic!("cannot listen on 127.0.0.1:{port}: {error}"),
        }
    };
    let addr = listener.local_addr().unwrap();
    let shared = Arc::new(Shared::default());
    let state = shared.clone();
    std::thread::spawn(move || {
        for stream in listener.incoming().flatten() {
            let state = state.clone();
            std::thread::spawn(move || serve_http(stream, &state));
        }
    });
    Collector { addr, shared }
}

fn serve_http(stream: TcpStream, shared: &Shared) {
    let mut writer = stream.try_clone().unwrap();
    let mut reader = BufReader::new(stream);
    loop {
        let mut request_line = String::new();
        if reader.read_line(&mut request_line).unwrap_or(0) == 0 {
            return;
        }
        let path = request_line
            .split_whitespace()
            .nth(1)
            .unwrap_or("")
            .to_string();
        let mut length = 0;
        let mut content_type = String::new();
        loop {
            let mut header = String::new();
            if reader.read_line(&mut header).unwrap_or(0) == 0 {
                return;
            }
            let header = header.trim_end();
            if header.is_empty() {
                break;
            }
            let (name, value) = header.split_once(':').unwrap_or((header, ""));
            match name.to_ascii_lowercase().as_str() {
                "content-length" => length = value.trim().parse().unwrap_or(0),
                "content-type" => content_type = value.trim().to_string(),
                _ => {}
            }
        }
        let mut body = vec![0; length];
        if reader.read_exact(&mut body).is_err() {
            return;
        }
        let mode = shared.mode.lock().unwrap().unwrap_or(Mode::Accept);
        match mode {
            Mode::Accept => {
                let encoding = if content_type.contains("json") {
                    "json"
                } else {
                    "protobuf"
                };
                let signal = path.rsplit('/').next().unwrap_or("").to_string();
                shared.received.lock().unwrap().push(Received {
                    signal,
                    encoding,
                    body,
                });
                let reply: &[u8] = if encoding == "json" { b"{}" } else { b"" };
                let head = format!(
                    "HTTP/1.1 200 OK\r\ncontent-type: {content_type}\r\ncontent-length: {}\r\n\r\n",
                    reply.len()
                );
                let _ = writer.write_all(head.as_bytes());
                let _ = writer.write_all(reply);
            }
            Mode::Refuse => {
                let _ = writer.write_all(
                    b"HTTP/1.1 503 Service Unavailable\r\ncontent-length: 8\r\n\r\ngo away\n",
                );
            }
            Mode::Garbage => {
                let _ = writer.write_all(b"\x00\x01garbage\r\n{not http}\r\n\r\n\xff\xfe");
                return;
            }
        }
    }
}

struct Grpc(Arc<Shared>);

fn push(shared: &Shared, signal: &str, body: Vec<u8>) {
    shared.received.lock().unwrap().push(Received {
        signal: signal.into(),
        encoding: "protobuf",
        body,
    });
}

#[tonic::async_trait]
impl LogsService for Grpc {
    async fn export(
        &self,
        request: tonic::Request<ExportLogsServiceRequest>,
    ) -> Result<tonic::Response<ExportLogsServiceResponse>, tonic::Status> {
        push(&self.0, "logs", request.into_inner().encode_to_vec());
        Ok(tonic::Response::new(ExportLogsServiceResponse::default()))
    }
}

#[tonic::async_trait]
impl TraceService for Grpc {
    async fn export(
        &self,
        request: tonic::Request<ExportTraceServiceRequest>,
    ) -> Result<tonic::Response<ExportTraceServiceResponse>, tonic::Status> {
        push(&self.0, "traces", request.into_inner().encode_to_vec());
        Ok(tonic::Response::new(ExportTraceServiceResponse::default()))
    }
}

#[tonic::async_trait]
impl MetricsService for Grpc {
    async fn export(
        &self,
        request: tonic::Request<ExportMetricsServiceRequest>,
    ) -> Result<tonic::Response<ExportMetricsServiceResponse>, tonic::Status> {
        push(&self.0, "metrics", request.into_inner().encode_to_vec());
        Ok(tonic::Response::new(ExportMetricsServiceResponse::default()))
    }
}

/// A gRPC OTLP collector (tonic) on its own runtime thread.
fn grpc_collector() -> Collector {
    let shared = Arc::new(Shared::default());
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    listener.set_nonblocking(true).unwrap();
    let addr = listener.local_addr().unwrap();
    let state = shared.clone();
    std::thread::spawn(move || {
        let runtime = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .unwrap();
        runtime.block_on(async move {
            let listener = tokio::net::TcpListener::from_std(listener).unwrap();
            tonic::transport::Server::builder()
                .add_service(LogsServiceServer::new(Grpc(state.clone())))
                .add_service(TraceServiceServer::new(Grpc(state.clone())))
                .add_service(MetricsServiceServer::new(Grpc(state)))
                .serve_with_incoming(tonic::transport::server::TcpIncoming::from(listener))
                .await
                .unwrap();
        });
    });
    Collector { addr, shared }
}

// ---------------------------------------------------------------- decoding

#[derive(Debug, Clone)]
struct Log {
    body: String,
    attrs: BTreeMap<String, String>,
    resource: BTreeMap<String, String>,
    trace_id: String,
}

#[derive(Debug, Clone)]
struct Span {
    name: String,
    trace_id: String,
    parent: String,
    attrs: BTreeMap<String, String>,
}

fn text_of(value: &Option<AnyValue>) -> String {
    match value.as_ref().and_then(|v| v.value.as_ref()) {
        Some(any_value::Value::StringValue(s)) => s.clone(),
        Some(any_value::Value::IntValue(n)) => n.to_string(),
        Some(any_value::Value::BoolValue(b)) => b.to_string(),
        Some(any_value::Value::DoubleValue(x)) => x.to_string(),
        Some(any_value::Value::ArrayValue(list)) => list
            .values
            .iter()
            .map(|v| text_of(&Some(v.clone())))
            .collect::<Vec<_>>()
            .join(","),
        Some(other) => format!("{other:?}"),
        None => String::new(),
    }
}

fn attrs_of(list: &[KeyValue]) -> BTreeMap<String, String> {
    list.iter()
        .map(|kv| (kv.key.clone(), text_of(&kv.value)))
        .collect()
}

/// OTLP JSON: `{"stringValue": …}`, `{"intValue": "7"}` (int64 as text), ….
fn json_text(value: &Value) -> String {
    if let Some(s) = value.get("stringValue").and_then(Value::as_str) {
        return s.to_string();
    }
    if let Some(n) = value.get("intValue") {
        return n
            .as_str()
            .map(str::to_string)
            .unwrap_or_else(|| n.to_string());
    }
    if let Some(b) = value.get("boolValue") {
        return b.to_string();
    }
    if let Some(x) = value.get("doubleValue") {
        return x.to_string();
    }
    if let Some(list) = value
        .get("arrayValue")
        .and_then(|a| a.get("values"))
        .and_then(Value::as_array)
    {
        return list.iter().map(json_text).collect::<Vec<_>>().join(",");
    }
    value.to_string()
}

fn json_attrs(list: Option<&Value>) -> BTreeMap<String, String> {
    list.and_then(Value::as_array)
        .map(|items| {
            items
                .iter()
                .map(|kv| {
                    (
                        kv["key"].as_str().unwrap_or("").to_string(),
                        json_text(&kv["value"]),
                    )
                })
                .collect()
        })
        .unwrap_or_default()
}

fn decode_logs(received: &Received) -> Vec<Log> {
    let mut logs = Vec::new();
    if received.encoding == "json" {
        let value: Value = serde_json::from_slice(&received.body).expect("OTLP JSON");
        for resource_logs in value["resourceLogs"].as_array().unwrap() {
            let resource = json_attrs(resource_logs["resource"].get("attributes"));
            for scope in resource_logs["scopeLogs"].as_array().unwrap() {
                for record in scope["logRecords"].as_array().unwrap() {
                    logs.push(Log {
                        body: json_text(&record["body"]),
                        attrs: json_attrs(record.get("attributes")),
                        resource: resource.clone(),
                        trace_id: record
                            .get("traceId")
                            .and_then(Value::as_str)
                            .unwrap_or("")
                            .to_string(),
                    });
                }
            }
        }
        return logs;
    }
    let request = ExportLogsServiceRequest::decode(&received.body[..]).expect("OTLP protobuf");
    for resource_logs in request.resource_logs {
        let resource = attrs_of(
            &resource_logs
                .resource
                .map(|r| r.attributes)
                .unwrap_or_default(),
        );
        for scope in resource_logs.scope_logs {
            for record in scope.log_records {
                logs.push(Log {
                    body: text_of(&record.body),
                    attrs: attrs_of(&record.attributes),
                    resource: resource.clone(),
                    trace_id: hex(&record.trace_id),
                });
            }
        }
    }
    logs
}

fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

fn decode_spans(received: &Received) -> Vec<Span> {
    let mut spans = Vec::new();
    if received.encoding == "json" {
        let value: Value = serde_json::from_slice(&received.body).unwrap();
        for resource_spans in value["resourceSpans"].as_array().unwrap() {
            for scope in resource_spans["scopeSpans"].as_array().unwrap() {
                for span in scope["spans"].as_array().unwrap() {
                    spans.push(Span {
                        name: span["name"].as_str().unwrap().to_string(),
                        trace_id: span["traceId"].as_str().unwrap().to_string(),
                        parent: span
                            .get("parentSpanId")
                            .and_then(Value::as_str)
                            .unwrap_or("")
                            .to_string(),
                        attrs: json_attrs(span.get("attributes")),
                    });
                }
            }
        }
        return spans;
    }
    let request = ExportTraceServiceRequest::decode(&received.body[..]).unwrap();
    for resource_spans in request.resource_spans {
        for scope in resource_spans.scope_spans {
            for span in scope.spans {
                spans.push(Span {
                    name: span.name.clone(),
                    trace_id: hex(&span.trace_id),
                    parent: hex(&span.parent_span_id),
                    attrs: attrs_of(&span.attributes),
                });
            }
        }
    }
    spans
}

fn decode_metric_names(received: &Received) -> Vec<String> {
    if received.encoding == "json" {
        let value: Value = serde_json::from_slice(&received.body).unwrap();
        let mut names = Vec::new();
        for rm in value["resourceMetrics"].as_array().unwrap() {
            for scope in rm["scopeMetrics"].as_array().unwrap() {
                for metric in scope["metrics"].as_array().unwrap() {
                    names.push(metric["name"].as_str().unwrap().to_string());
                }
            }
        }
        return names;
    }
    let request = ExportMetricsServiceRequest::decode(&received.body[..]).unwrap();
    request
        .resource_metrics
        .into_iter()
        .flat_map(|rm| rm.scope_metrics)
        .flat_map(|scope| scope.metrics)
        .map(|metric| metric.name)
        .collect()
}

// ---------------------------------------------------------------- running

/// The standard variables for a collector, with short intervals.
fn otel_env(endpoint: &str, protocol: &str) -> Vec<(String, String)> {
    [
        ("CLAUDE_CODE_ENABLE_TELEMETRY", "1"),
        ("OTEL_LOGS_EXPORTER", "otlp"),
        ("OTEL_METRICS_EXPORTER", "otlp"),
        ("OTEL_TRACES_EXPORTER", "otlp"),
        ("OTEL_EXPORTER_OTLP_PROTOCOL", protocol),
        ("OTEL_EXPORTER_OTLP_ENDPOINT", endpoint),
        ("OTEL_LOGS_EXPORT_INTERVAL", "100"),
        ("OTEL_METRIC_EXPORT_INTERVAL", "300"),
        ("OTEL_EXPORTER_OTLP_TIMEOUT", "2000"),
        (
            "OTEL_RESOURCE_ATTRIBUTES",
            "team=core,deployment.environment=test",
        ),
    ]
    .iter()
    .map(|(k, v)| (k.to_string(), v.to_string()))
    .collect()
}

/// One of our binaries with a clean environment plus `env` (and no `OTEL_*`
/// from the developer's shell).
fn command(name: &str, project: &Path, env: &[(String, String)]) -> Command {
    let mut command = util::command(name, project);
    for (key, _) in std::env::vars_os() {
        if key.to_string_lossy().starts_with("OTEL_") {
            command.env_remove(key);
        }
    }
    command.envs(env.iter().map(|(k, v)| (k, v)));
    command
}

fn cli(project: &Path, env: &[(String, String)], args: &[&str]) -> Output {
    let output = command("ralph-hooks", project, env)
        .args(args)
        .output()
        .unwrap();
    assert!(
        output.status.success(),
        "ralph-hooks {args:?}: {}",
        String::from_utf8_lossy(&output.stderr)
    );
    output
}

fn hook(name: &str, project: &Path, env: &[(String, String)], input: Value) -> Output {
    util::run_with_stdin(command(name, project, env), input.to_string().as_bytes())
}

fn stop_input(prompt: &str, message: &str) -> Value {
    json!({"hook_event_name": "Stop", "session_id": "sess-otel", "prompt_id": prompt,
           "stop_hook_active": false, "last_assistant_message": message})
}

/// A project whose exporter leaves after a second of quiet.
fn project(label: &str, telemetry: Value) -> TempDir {
    let dir = TempDir::new(label);
    let mut section = json!({"exit_idle_ms": 3000});
    if let (Some(section), Some(extra)) = (section.as_object_mut(), telemetry.as_object()) {
        section.extend(extra.clone());
    }
    util::write_hook_config(dir.path(), json!({"telemetry": section}));
    dir
}

fn status(project: &Path) -> Value {
    let text = std::fs::read_to_string(project.join(".claude/orchestrator/telemetry/status.json"))
        .unwrap_or_default();
    serde_json::from_str(&text).unwrap_or(Value::Null)
}

/// Stops the exporter and checks that its process is gone.
fn stop_exporter(project: &Path, env: &[(String, String)]) {
    let pid = status(project)["pid"].as_u64();
    cli(project, env, &["telemetry", "stop"]);
    if let Some(pid) = pid {
        let deadline = Instant::now() + Duration::from_secs(5);
        while Path::new(&format!("/proc/{pid}")).exists() && !is_zombie(pid) {
            assert!(
                Instant::now() < deadline,
                "exporter {pid} still running after telemetry stop"
            );
            std::thread::sleep(Duration::from_millis(20));
        }
    }
}

fn is_zombie(pid: u64) -> bool {
    std::fs::read_to_string(format!("/proc/{pid}/stat"))
        .map(|stat| {
            stat.rsplit(')')
                .next()
                .unwrap_or("")
                .trim_start()
                .starts_with('Z')
        })
        .unwrap_or(true)
}

/// A loop from start to completion: `loop start` (CLI, in the session),
/// one blocked Stop, one completing Stop. Returns the loop id.
fn run_a_loop(project: &Path, env: &[(String, String)]) -> String {
    let mut with_session = env.to_vec();
    with_session.push(("CLAUDE_CODE_SESSION_ID".into(), "sess-otel".into()));
    cli(
        project,
        &with_session,
        &[
            "loop",
            "start",
            "ship it",
            "--promise",
            "SHIPPED",
            "--no-diagnostics",
            "--max-iterations",
            "5",
        ],
    );
    let blocked = hook(
        "ralph-stop-loop-controller",
        project,
        env,
        stop_input("prompt-1", "not yet"),
    );
    assert!(String::from_utf8_lossy(&blocked.stdout).contains("\"decision\":\"block\""));
    let done = hook(
        "ralph-stop-loop-controller",
        project,
        env,
        stop_input("prompt-2", "<promise>SHIPPED</promise>"),
    );
    assert!(done.status.success());
    let state: Value = serde_json::from_str(
        &std::fs::read_to_string(project.join(".claude/orchestrator/loop.json")).unwrap(),
    )
    .unwrap();
    assert_eq!(state["status"], "COMPLETED");
    state["id"].as_str().unwrap().to_string()
}

fn by_event<'a>(logs: &'a [Log], event: &str) -> Vec<&'a Log> {
    logs.iter()
        .filter(|l| l.attrs.get("event.name").map(String::as_str) == Some(event))
        .collect()
}

/// Start, iteration and completion arrive with the loop id, the session and
/// the prompt; spans join one trace; the metrics come too.
fn check_a_loop_arrives(collector: &Collector, endpoint: &str, protocol: &str) {
    let dir = project("otel-loop", json!({}));
    let env = otel_env(endpoint, protocol);
    let loop_id = run_a_loop(dir.path(), &env);
    let logs = collector.wait_for_logs("start, iteration and completion", |logs| {
        ["loop_started", "loop_iteration", "loop_completed"]
            .iter()
            .all(|e| !by_event(logs, e).is_empty())
    });
    for event in ["loop_started", "loop_iteration", "loop_completed"] {
        let record = by_event(&logs, event)[0];
        assert_eq!(record.attrs["ralph.loop.id"], loop_id, "{event}");
        assert_eq!(
            record.attrs["session.id"], "sess-otel",
            "{event}: {:?}",
            record.attrs
        );
        assert_eq!(record.body, format!("ralph.{event}"));
        assert_eq!(record.resource["service.name"], "ralph-hooks");
        assert_eq!(
            record.resource["ralph.project.root"],
            dir.path().display().to_string()
        );
        assert_eq!(record.resource["team"], "core", "OTEL_RESOURCE_ATTRIBUTES");
        assert_eq!(record.trace_id.len(), 32, "{event} is in the loop's trace");
    }
    let iteration = by_event(&logs, "loop_iteration")[0];
    assert_eq!(iteration.attrs["prompt.id"], "prompt-1");
    assert_eq!(iteration.attrs["ralph.loop.iteration"], "1");
    assert_eq!(
        by_event(&logs, "loop_completed")[0].attrs["prompt.id"],
        "prompt-2"
    );
    assert_eq!(
        by_event(&logs, "loop_started")[0].attrs["ralph.loop.goal"],
        "ship it"
    );

    let deadline = Instant::now() + Duration::from_secs(10);
    while !(collector.spans().iter().any(|s| s.name == "ralph.loop")
        && collector
            .metric_names()
            .iter()
            .any(|n| n == "ralph.loop.ended"))
    {
        assert!(
            Instant::now() < deadline,
            "spans {:?} metrics {:?}",
            collector.spans(),
            collector.metric_names()
        );
        std::thread::sleep(Duration::from_millis(50));
    }
    let spans = collector.spans();
    let root = spans.iter().find(|s| s.name == "ralph.loop").unwrap();
    assert_eq!(root.attrs["ralph.loop.outcome"], "completed");
    let iterations: Vec<&Span> = spans
        .iter()
        .filter(|s| s.name == "ralph.loop.iteration")
        .collect();
    assert_eq!(iterations.len(), 2, "one span per Stop");
    assert!(
        iterations
            .iter()
            .all(|s| s.trace_id == root.trace_id && !s.parent.is_empty())
    );
    assert_eq!(
        iteration.trace_id, root.trace_id,
        "the log record is in the span's trace"
    );
    let names = collector.metric_names();
    for metric in [
        "ralph.loop.started",
        "ralph.loop.ended",
        "ralph.loop.iterations",
    ] {
        assert!(names.iter().any(|n| n == metric), "{metric} in {names:?}");
    }
    stop_exporter(dir.path(), &env);
}

// ---------------------------------------------------------------- tests

#[test]
fn a_loop_reaches_an_otlp_http_protobuf_collector() {
    let collector = http_collector(0);
    check_a_loop_arrives(
        &collector,
        &format!("http://{}", collector.addr),
        "http/protobuf",
    );
    assert!(
        collector
            .received()
            .iter()
            .all(|r| r.encoding == "protobuf")
    );
}

#[test]
fn a_loop_reaches_an_otlp_http_json_collector() {
    let collector = http_collector(0);
    check_a_loop_arrives(
        &collector,
        &format!("http://{}", collector.addr),
        "http/json",
    );
    assert!(collector.received().iter().all(|r| r.encoding == "json"));
}

#[test]
fn a_loop_reaches_an_otlp_grpc_collector() {
    let collector = grpc_collector();
    check_a_loop_arrives(&collector, &format!("http://{}", collector.addr), "grpc");
}

#[test]
fn telemetry_off_sends_nothing_and_starts_nothing() {
    let collector = http_collector(0);
    let endpoint = format!("http://{}", collector.addr);
    // Every OTLP variable set, but not Claude Code's switch.
    let mut env = otel_env(&endpoint, "http/protobuf");
    env.retain(|(key, _)| key != "CLAUDE_CODE_ENABLE_TELEMETRY");
    let dir = project("otel-off", json!({}));
    run_a_loop(dir.path(), &env);
    // The switch on, but the project says no.
    let off = project("otel-off-config", json!({"enabled": false}));
    run_a_loop(off.path(), &otel_env(&endpoint, "http/protobuf"));
    std::thread::sleep(Duration::from_millis(1500));
    assert!(
        collector.received().is_empty(),
        "nothing may be sent: {:?}",
        collector.received().len()
    );
    for project in [dir.path(), off.path()] {
        let telemetry = project.join(".claude/orchestrator/telemetry");
        assert!(
            !telemetry.join("status.json").exists(),
            "no exporter ran in {}",
            project.display()
        );
        assert!(
            !project
                .join(".claude/orchestrator/.locks/telemetry%life.lock")
                .exists()
        );
    }
}

#[test]
fn a_collector_that_is_down_costs_the_hooks_nothing_and_loses_nothing() {
    let port = free_port();
    let endpoint = format!("http://127.0.0.1:{port}");
    let env = otel_env(&endpoint, "http/protobuf");
    let dir = project("otel-down", json!({}));
    // The same loop with telemetry off, for the hooks' answers.
    let quiet = project("otel-down-quiet", json!({"enabled": false}));
    let loop_id = run_a_loop(dir.path(), &env);
    run_a_loop(quiet.path(), &env);
    let pause = hook(
        "ralph-user-prompt-submit",
        dir.path(),
        &env,
        json!({"hook_event_name": "UserPromptSubmit", "session_id": "sess-otel", "prompt_id": "prompt-3", "prompt": "hello"}),
    );
    assert!(pause.status.success() && pause.stderr.is_empty());
    // The exporter has tried and failed, and says so.
    let deadline = Instant::now() + Duration::from_secs(10);
    while status(dir.path())["last_failure"].is_null() {
        assert!(
            Instant::now() < deadline,
            "no failure recorded: {}",
            status(dir.path())
        );
        std::thread::sleep(Duration::from_millis(50));
    }
    let lines = String::from_utf8(cli(dir.path(), &env, &["telemetry", "status"]).stdout).unwrap();
    assert!(lines.contains("last export failed"), "{lines}");
    assert!(
        lines.contains(&format!(
            "logs → http://127.0.0.1:{port}/v1/logs (http/protobuf)"
        )),
        "{lines}"
    );
    // The collector comes back on the same port: everything arrives.
    let collector = http_collector(port);
    let logs = collector.wait_for_logs("the events logged while the collector was away", |logs| {
        ["loop_started", "loop_iteration", "loop_completed"]
            .iter()
            .all(|e| !by_event(logs, e).is_empty())
    });
    assert!(
        logs.iter()
            .all(|l| l.attrs.get("ralph.loop.id").is_none_or(|id| *id == loop_id))
    );
    let deadline = Instant::now() + Duration::from_secs(5);
    while status(dir.path())["last_accepted"].is_null() {
        assert!(Instant::now() < deadline);
        std::thread::sleep(Duration::from_millis(50));
    }
    let doctor = String::from_utf8(cli(dir.path(), &env, &["daemon", "status"]).stdout).unwrap();
    assert!(doctor.contains("last batch accepted"), "{doctor}");
    stop_exporter(dir.path(), &env);
}

#[test]
fn errors_and_garbage_from_the_collector_never_reach_the_hooks() {
    for mode in [Mode::Refuse, Mode::Garbage] {
        let collector = http_collector(0);
        collector.set_mode(mode);
        let env = otel_env(&format!("http://{}", collector.addr), "http/protobuf");
        let dir = project("otel-garbage", json!({}));
        let mut with_session = env.clone();
        with_session.push(("CLAUDE_CODE_SESSION_ID".into(), "sess-otel".into()));
        cli(
            dir.path(),
            &with_session,
            &["loop", "start", "g", "--promise", "P", "--no-diagnostics"],
        );
        let deadline = Instant::now() + Duration::from_secs(10);
        while status(dir.path())["last_failure"].is_null() {
            assert!(Instant::now() < deadline, "{mode:?}: no failure recorded");
            std::thread::sleep(Duration::from_millis(50));
        }
        // With the exporter failing, a hook answers exactly as with
        // telemetry off, exit 0, nothing on stderr.
        let on = hook(
            "ralph-stop-loop-controller",
            dir.path(),
            &env,
            stop_input("p", "not yet"),
        );
        let mut off_env = env.clone();
        off_env.retain(|(k, _)| k != "CLAUDE_CODE_ENABLE_TELEMETRY");
        let other = project("otel-garbage-off", json!({}));
        cli(
            other.path(),
            &off_env,
            &["loop", "start", "g", "--promise", "P", "--no-diagnostics"],
        );
        let off = hook(
            "ralph-stop-loop-controller",
            other.path(),
            &off_env,
            stop_input("p", "not yet"),
        );
        let strip =
            |text: &[u8]| String::from_utf8_lossy(text).replace(|c: char| c.is_ascii_digit(), "#");
        assert_eq!(on.status.code(), Some(0));
        assert!(
            on.stderr.is_empty(),
            "{mode:?}: {}",
            String::from_utf8_lossy(&on.stderr)
        );
        let id_on = serde_json::from_str::<Value>(
            &std::fs::read_to_string(dir.path().join(".claude/orchestrator/loop.json")).unwrap(),
        )
        .unwrap()["id"]
            .as_str()
            .unwrap()
            .to_string();
        let id_off = serde_json::from_str::<Value>(
            &std::fs::read_to_string(other.path().join(".claude/orchestrator/loop.json")).unwrap(),
        )
        .unwrap()["id"]
            .as_str()
            .unwrap()
            .to_string();
        assert_eq!(
            strip(&on.stdout).replace(&strip(id_on.as_bytes()), "ID"),
            strip(&off.stdout).replace(&strip(id_off.as_bytes()), "ID"),
            "{mode:?}"
        );
        assert!(collector.received().is_empty());
        stop_exporter(dir.path(), &env);
    }
}

#[test]
fn the_otlp_settings_come_from_claude_codes_environment_and_settings_files() {
    // As under Claude Code: no OTEL_* in the hook's environment; the
    // collector is named in the environment Claude Code was started with
    // (`$CLAUDE_PID`) for one project, in `.claude/settings.local.json`'s
    // `env` for the other.
    let collector = http_collector(0);
    let endpoint = format!("http://{}", collector.addr);
    let full = otel_env(&endpoint, "http/json");
    let stripped: Vec<(String, String)> = full
        .iter()
        .filter(|(k, _)| !k.starts_with("OTEL_"))
        .cloned()
        .collect();
    let mut claude = Command::new("sleep");
    claude
        .arg("30")
        .env_clear()
        .envs(full.iter().map(|(k, v)| (k, v)));
    let mut claude = claude.spawn().unwrap();
    let mut hook_env = stripped.clone();
    hook_env.push(("CLAUDE_PID".into(), claude.id().to_string()));
    let by_pid = project("otel-claude-pid", json!({}));
    run_a_loop(by_pid.path(), &hook_env);
    let by_settings = project("otel-settings", json!({}));
    let settings_env: serde_json::Map<String, Value> = full
        .iter()
        .filter(|(k, _)| k.starts_with("OTEL_"))
        .map(|(k, v)| (k.clone(), json!(v)))
        .collect();
    std::fs::write(
        by_settings.path().join(".claude/settings.local.json"),
        json!({"env": settings_env}).to_string(),
    )
    .unwrap();
    run_a_loop(by_settings.path(), &stripped);
    collector.wait_for_logs("both projects' completions", |logs| {
        let roots: Vec<&String> = by_event(logs, "loop_completed")
            .iter()
            .map(|l| &l.resource["ralph.project.root"])
            .collect();
        roots.contains(&&by_pid.path().display().to_string())
            && roots.contains(&&by_settings.path().display().to_string())
    });
    // doctor exits 1 here (the hooks are not installed): only its telemetry lines matter.
    let doctor = command("ralph-hooks", by_settings.path(), &stripped)
        .arg("doctor")
        .output()
        .unwrap();
    let lines = String::from_utf8_lossy(&doctor.stdout);
    assert!(
        lines.contains("settings.local.json"),
        "doctor names where the endpoint came from:\n{lines}"
    );
    stop_exporter(by_pid.path(), &hook_env);
    stop_exporter(by_settings.path(), &stripped);
    let _ = claude.kill();
    let _ = claude.wait();
}

#[test]
fn events_logged_while_telemetry_was_off_are_never_sent_and_the_backlog_is_bounded() {
    let port = free_port();
    let endpoint = format!("http://127.0.0.1:{port}");
    let env = otel_env(&endpoint, "http/protobuf");
    let mut off = env.clone();
    off.retain(|(k, _)| k != "CLAUDE_CODE_ENABLE_TELEMETRY");
    let dir = project("otel-bound", json!({"max_backlog_bytes": 3000}));
    cli(dir.path(), &off, &["task", "start", "a task"]);
    cli(
        dir.path(),
        &off,
        &["task", "progress", "logged while telemetry was off"],
    );
    // On, with the collector down: 40 step events, far more than 3000 bytes.
    let steps: Vec<String> = (0..40).map(|n| format!("step {n}")).collect();
    let mut args = vec!["task", "steps", "set"];
    args.extend(steps.iter().map(String::as_str));
    cli(dir.path(), &env, &args);
    for n in 1..=20 {
        cli(
            dir.path(),
            &env,
            &["task", "step", "complete", &format!("s{n}")],
        );
    }
    let collector = http_collector(port);
    let logs = collector.wait_for_logs("the newest events and a drop notice", |logs| {
        !by_event(logs, "telemetry_dropped").is_empty()
            && logs
                .iter()
                .any(|l| l.attrs.get("ralph.task.step_id").map(String::as_str) == Some("s20"))
    });
    assert!(
        logs.iter().all(|l| !l
            .attrs
            .values()
            .any(|v| v.contains("logged while telemetry was off"))),
        "an event from the off period was sent"
    );
    let notice = by_event(&logs, "telemetry_dropped")[0];
    let dropped: u64 = notice.attrs["ralph.telemetry.dropped_events"]
        .parse()
        .unwrap();
    assert!(dropped > 0);
    let total = logs
        .iter()
        .filter(|l| l.attrs.contains_key("ralph.task.id"))
        .count() as u64;
    assert!(
        total + dropped >= 22,
        "every event is sent or counted as dropped ({total} + {dropped})"
    );
    assert!(status(dir.path())["dropped_events"].as_u64().unwrap() >= dropped);
    stop_exporter(dir.path(), &env);
}

#[test]
fn the_exporter_leaves_by_itself_when_idle_and_guard_denials_are_exported() {
    let collector = http_collector(0);
    let env = otel_env(&format!("http://{}", collector.addr), "http/protobuf");
    let dir = project("otel-idle", json!({"exit_idle_ms": 500}));
    let mut with_session = env.clone();
    with_session.push(("CLAUDE_CODE_SESSION_ID".into(), "sess-otel".into()));
    cli(
        dir.path(),
        &with_session,
        &["loop", "start", "g", "--promise", "P", "--no-diagnostics"],
    );
    let denied = hook(
        "ralph-pre-tool-stop-guard",
        dir.path(),
        &env,
        json!({"hook_event_name": "PreToolUse",
        "session_id": "sess-otel", "prompt_id": "prompt-9", "tool_name": "Bash", "tool_use_id": "toolu_1",
        "tool_input": {"command": "git push origin main"}}),
    );
    assert!(String::from_utf8_lossy(&denied.stdout).contains("\"permissionDecision\":\"deny\""));
    let logs = collector.wait_for_logs("the denial", |logs| {
        !by_event(logs, "guard_denied").is_empty()
    });
    let denial = by_event(&logs, "guard_denied")[0];
    assert_eq!(denial.attrs["ralph.guard.rule"], "loop_commands");
    assert_eq!(denial.attrs["prompt.id"], "prompt-9");
    assert_eq!(denial.attrs["ralph.guard.tool_use_id"], "toolu_1");
    let pid = status(dir.path())["pid"].as_u64().unwrap();
    let deadline = Instant::now() + Duration::from_secs(10);
    while Path::new(&format!("/proc/{pid}")).exists() && !is_zombie(pid) {
        assert!(
            Instant::now() < deadline,
            "exporter {pid} did not leave when idle"
        );
        std::thread::sleep(Duration::from_millis(50));
    }
    assert!(
        status(dir.path())["stopped_because"]
            .as_str()
            .unwrap()
            .starts_with("idle")
    );
}

#[test]
fn no_hook_binary_links_the_exporter() {
    // The test build keeps symbols: the hooks must not contain one of the
    // OpenTelemetry crates, tonic, hyper or tokio; the CLI must.
    let Some(nm) = util::require_tool("nm", "to list the binaries' symbols") else {
        return;
    };
    let count = |binary: &str, crate_name: &str| -> usize {
        let output = Command::new(&nm)
            .arg("-C")
            .arg(util::bin(binary))
            .output()
            .unwrap();
        String::from_utf8_lossy(&output.stdout)
            .matches(crate_name)
            .count()
    };
    if count("ralph-hooks", "ralph_hooks") == 0 {
        crate::util::skip(
            "the symbol test of the binaries",
            "the binaries are stripped (a release build)",
        );
        return;
    }
    for binary in [
        "ralph-stop-loop-controller",
        "ralph-session-start",
        "ralph-pre-tool-stop-guard",
        "ralph-post-tool-lsp-diagnostic",
        "ralph-user-prompt-submit",
    ] {
        for crate_name in ["opentelemetry", "tonic::", "hyper::", "tokio::"] {
            assert_eq!(count(binary, crate_name), 0, "{binary} links {crate_name}");
        }
    }
    assert!(
        count("ralph-hooks", "opentelemetry_otlp") > 0,
        "the CLI has the exporter"
    );
}
