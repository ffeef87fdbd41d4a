//! The OpenTelemetry side: the OTLP exporters of `opentelemetry-otlp` (gRPC
//! over tonic, HTTP with protobuf or JSON over hyper), built from the
//! standard variables, and the conversion of [`records`](super::records)
//! plans into the SDK's log records, spans and metric instruments.
//!
//! The exporters are called directly, one batch at a time, so the caller
//! learns whether the collector accepted it and moves its cursor only then
//! (the SDK's batch processors would drop a batch that failed).
//! Metrics go through a meter provider with a manual reader that the
//! exporter's own loop collects every `OTEL_METRIC_EXPORT_INTERVAL`.

use std::borrow::Cow;
use std::sync::{Arc, Weak};
use std::time::{Duration, SystemTime};

use opentelemetry::logs::{AnyValue, LogRecord as _, Logger as _, LoggerProvider as _, Severity};
use opentelemetry::metrics::{Counter, Histogram, MeterProvider as _};
use opentelemetry::trace::{
    SpanContext, SpanId, SpanKind, Status, TraceFlags, TraceId, TraceState,
};
use opentelemetry::{InstrumentationScope, Key, KeyValue, StringValue, Value};
use opentelemetry_otlp::WithExportConfig as _;
use opentelemetry_sdk::Resource;
use opentelemetry_sdk::error::OTelSdkResult;
use opentelemetry_sdk::logs::{
    LogBatch, LogExporter as _, SdkLogRecord, SdkLogger, SdkLoggerProvider,
};
use opentelemetry_sdk::metrics::data::ResourceMetrics;
use opentelemetry_sdk::metrics::exporter::PushMetricExporter as _;
use opentelemetry_sdk::metrics::reader::MetricReader;
use opentelemetry_sdk::metrics::{
    InstrumentKind, ManualReader, Pipeline, SdkMeterProvider, Temporality,
};
use opentelemetry_sdk::trace::{SpanData, SpanExporter as _};

use super::records::{Attr, Attrs, Level, LogPlan, Point, SpanEnd, SpanPlan};
use crate::telemetry::sources::{Protocol, Signal, SignalKind};

/// What the exporter knows about the project, on every record.
pub struct ProjectInfo {
    pub name: String,
    pub root: String,
    /// `OTEL_RESOURCE_ATTRIBUTES`, already parsed.
    pub extra: Vec<(String, String)>,
}

/// `OTEL_RESOURCE_ATTRIBUTES`: `key=value,key=value`, values percent-decoded.
pub fn parse_resource_attributes(text: &str) -> Vec<(String, String)> {
    text.split(',')
        .filter_map(|pair| {
            let (key, value) = pair.split_once('=')?;
            let key = key.trim();
            (!key.is_empty()).then(|| (key.to_string(), percent_decode(value.trim())))
        })
        .collect()
}

fn percent_decode(text: &str) -> String {
    let bytes = text.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut index = 0;
    while index < bytes.len() {
        if bytes[index] == b'%'
            && index + 2 < bytes.len()
            && let Some(byte) = std::str::from_utf8(&bytes[index + 1..index + 3])
                .ok()
                .and_then(|hex| u8::from_str_radix(hex, 16).ok())
        {
            out.push(byte);
            index += 3;
            continue;
        }
        out.push(bytes[index]);
        index += 1;
    }
    String::from_utf8_lossy(&out).into_owned()
}

/// `service.name` is always `ralph-hooks` (beside Claude Code's
/// `claude-code`), whatever `OTEL_SERVICE_NAME` says for Claude Code.
pub fn resource(info: &ProjectInfo) -> Resource {
    let host = std::fs::read_to_string("/proc/sys/kernel/hostname")
        .map(|name| name.trim().to_string())
        .unwrap_or_default();
    let mut attributes: Vec<KeyValue> = info
        .extra
        .iter()
        .filter(|(key, _)| key != "service.name")
        .map(|(key, value)| KeyValue::new(key.clone(), value.clone()))
        .collect();
    attributes.push(KeyValue::new("service.version", env!("CARGO_PKG_VERSION")));
    attributes.push(KeyValue::new("ralph.project.name", info.name.clone()));
    attributes.push(KeyValue::new("ralph.project.root", info.root.clone()));
    if !host.is_empty() {
        attributes.push(KeyValue::new("host.name", host));
    }
    Resource::builder_empty()
        .with_service_name("ralph-hooks")
        .with_attributes(attributes)
        .build()
}

fn scope() -> InstrumentationScope {
    InstrumentationScope::builder("ralph-hooks")
        .with_version(env!("CARGO_PKG_VERSION"))
        .build()
}

/// The OTLP exporters for the usable signals, and the SDK objects that make
/// their records.
pub struct Exporters {
    pub logs: Option<opentelemetry_otlp::LogExporter>,
    pub spans: Option<opentelemetry_otlp::SpanExporter>,
    pub metrics: Option<Metrics>,
    logger: SdkLogger,
    _logger_provider: SdkLoggerProvider,
    scope: InstrumentationScope,
}

/// The metric instruments and what collects and ships them.
pub struct Metrics {
    exporter: opentelemetry_otlp::MetricExporter,
    reader: Arc<ManualReader>,
    provider: SdkMeterProvider,
    loops_started: Counter<u64>,
    loops_ended: Counter<u64>,
    iterations: Histogram<u64>,
    problems_fixed: Counter<u64>,
    check_duration: Histogram<f64>,
    check_files: Histogram<u64>,
    guard_denials: Counter<u64>,
    step_changes: Counter<u64>,
}

/// The meter provider owns its reader; the loop needs to collect from it
/// too, so both hold this shared one.
#[derive(Debug, Clone)]
struct SharedReader(Arc<ManualReader>);

impl MetricReader for SharedReader {
    fn register_pipeline(&self, pipeline: Weak<Pipeline>) {
        self.0.register_pipeline(pipeline)
    }
    fn collect(&self, rm: &mut ResourceMetrics) -> OTelSdkResult {
        self.0.collect(rm)
    }
    fn force_flush(&self) -> OTelSdkResult {
        self.0.force_flush()
    }
    fn shutdown_with_timeout(&self, timeout: Duration) -> OTelSdkResult {
        self.0.shutdown_with_timeout(timeout)
    }
    fn temporality(&self, kind: InstrumentKind) -> Temporality {
        self.0.temporality(kind)
    }
}

fn build_error(signal: SignalKind, error: impl std::fmt::Display) -> String {
    format!("cannot set up the {} exporter: {error}", signal.as_str())
}

impl Exporters {
    /// Builds one exporter per usable signal (inside the tokio runtime:
    /// tonic needs it). A signal whose exporter cannot be built is left out
    /// and named in the returned problems.
    pub fn build(signals: &[Signal], resource: &Resource) -> (Exporters, Vec<String>) {
        let mut problems = Vec::new();
        let mut logs = None;
        let mut spans = None;
        let mut metrics = None;
        for signal in signals.iter().filter(|s| s.usable()) {
            let protocol = signal.protocol.unwrap_or(Protocol::HttpProtobuf);
            match signal.kind {
                SignalKind::Logs => match log_exporter(protocol) {
                    Ok(mut exporter) => {
                        opentelemetry_sdk::logs::LogExporter::set_resource(&mut exporter, resource);
                        logs = Some(exporter);
                    }
                    Err(error) => problems.push(build_error(signal.kind, error)),
                },
                SignalKind::Traces => match span_exporter(protocol) {
                    Ok(mut exporter) => {
                        opentelemetry_sdk::trace::SpanExporter::set_resource(
                            &mut exporter,
                            resource,
                        );
                        spans = Some(exporter);
                    }
                    Err(error) => problems.push(build_error(signal.kind, error)),
                },
                SignalKind::Metrics => match metric_exporter(protocol) {
                    Ok(exporter) => metrics = Some(Metrics::new(exporter, resource)),
                    Err(error) => problems.push(build_error(signal.kind, error)),
                },
            }
        }
        let logger_provider = SdkLoggerProvider::builder()
            .with_resource(resource.clone())
            .build();
        let logger = logger_provider.logger_with_scope(scope());
        (
            Exporters {
                logs,
                spans,
                metrics,
                logger,
                _logger_provider: logger_provider,
                scope: scope(),
            },
            problems,
        )
    }

    pub fn is_empty(&self) -> bool {
        self.logs.is_none() && self.spans.is_none() && self.metrics.is_none()
    }

    /// Ships one batch of log records and spans; `Err` with the collector's
    /// (or the transport's) reason when any configured signal was refused.
    pub async fn ship(&self, logs: &[LogPlan], spans: &[SpanPlan]) -> Result<(), String> {
        if let Some(exporter) = &self.logs
            && !logs.is_empty()
        {
            let records: Vec<SdkLogRecord> =
                logs.iter().map(|plan| self.log_record(plan)).collect();
            let pairs: Vec<(&SdkLogRecord, &InstrumentationScope)> =
                records.iter().map(|record| (record, &self.scope)).collect();
            exporter
                .export(LogBatch::new(&pairs))
                .await
                .map_err(|error| format!("logs: {error}"))?;
        }
        if let Some(exporter) = &self.spans
            && !spans.is_empty()
        {
            let batch: Vec<SpanData> = spans.iter().map(|plan| self.span_data(plan)).collect();
            exporter
                .export(batch)
                .await
                .map_err(|error| format!("traces: {error}"))?;
        }
        Ok(())
    }

    fn log_record(&self, plan: &LogPlan) -> SdkLogRecord {
        let mut record = self.logger.create_log_record();
        record.set_timestamp(plan.timestamp);
        record.set_observed_timestamp(SystemTime::now());
        let (number, text) = match plan.level {
            Level::Info => (Severity::Info, "INFO"),
            Level::Warn => (Severity::Warn, "WARN"),
        };
        record.set_severity_number(number);
        record.set_severity_text(text);
        record.set_body(AnyValue::String(plan.body.clone().into()));
        for (key, value) in &plan.attrs {
            record.add_attribute(Key::new(key.clone()), any_value(value));
        }
        if let Some((trace, span)) = plan.trace {
            record.set_trace_context(
                TraceId::from_bytes(trace.to_be_bytes()),
                SpanId::from_bytes(span.to_be_bytes()),
                Some(TraceFlags::SAMPLED),
            );
        }
        record
    }

    fn span_data(&self, plan: &SpanPlan) -> SpanData {
        SpanData {
            span_context: SpanContext::new(
                TraceId::from_bytes(plan.trace_id.to_be_bytes()),
                SpanId::from_bytes(plan.span_id.to_be_bytes()),
                TraceFlags::SAMPLED,
                false,
                TraceState::default(),
            ),
            parent_span_id: plan
                .parent
                .map(|id| SpanId::from_bytes(id.to_be_bytes()))
                .unwrap_or(SpanId::INVALID),
            parent_span_is_remote: false,
            span_kind: SpanKind::Internal,
            name: Cow::Borrowed(plan.name),
            start_time: plan.start,
            end_time: plan.end,
            attributes: key_values(&plan.attrs),
            dropped_attributes_count: 0,
            events: Default::default(),
            links: Default::default(),
            status: match &plan.status {
                SpanEnd::Unset => Status::Unset,
                SpanEnd::Ok => Status::Ok,
                SpanEnd::Error(reason) => Status::error(reason.clone()),
            },
            instrumentation_scope: self.scope.clone(),
        }
    }
}

fn log_exporter(protocol: Protocol) -> Result<opentelemetry_otlp::LogExporter, String> {
    let builder = opentelemetry_otlp::LogExporter::builder();
    match protocol {
        Protocol::Grpc => builder.with_tonic().build(),
        Protocol::HttpProtobuf => builder
            .with_http()
            .with_protocol(opentelemetry_otlp::Protocol::HttpBinary)
            .build(),
        Protocol::HttpJson => builder
            .with_http()
            .with_protocol(opentelemetry_otlp::Protocol::HttpJson)
            .build(),
    }
    .map_err(|error| error.to_string())
}

fn span_exporter(protocol: Protocol) -> Result<opentelemetry_otlp::SpanExporter, String> {
    let builder = opentelemetry_otlp::SpanExporter::builder();
    match protocol {
        Protocol::Grpc => builder.with_tonic().build(),
        Protocol::HttpProtobuf => builder
            .with_http()
            .with_protocol(opentelemetry_otlp::Protocol::HttpBinary)
            .build(),
        Protocol::HttpJson => builder
            .with_http()
            .with_protocol(opentelemetry_otlp::Protocol::HttpJson)
            .build(),
    }
    .map_err(|error| error.to_string())
}

fn metric_exporter(protocol: Protocol) -> Result<opentelemetry_otlp::MetricExporter, String> {
    let builder = opentelemetry_otlp::MetricExporter::builder();
    match protocol {
        Protocol::Grpc => builder.with_tonic().build(),
        Protocol::HttpProtobuf => builder
            .with_http()
            .with_protocol(opentelemetry_otlp::Protocol::HttpBinary)
            .build(),
        Protocol::HttpJson => builder
            .with_http()
            .with_protocol(opentelemetry_otlp::Protocol::HttpJson)
            .build(),
    }
    .map_err(|error| error.to_string())
}

impl Metrics {
    fn new(exporter: opentelemetry_otlp::MetricExporter, resource: &Resource) -> Metrics {
        let reader = Arc::new(
            ManualReader::builder()
                .with_temporality(exporter.temporality())
                .build(),
        );
        let provider = SdkMeterProvider::builder()
            .with_resource(resource.clone())
            .with_reader(SharedReader(reader.clone()))
            .build();
        let meter = provider.meter_with_scope(scope());
        Metrics {
            loops_started: meter
                .u64_counter("ralph.loop.started")
                .with_unit("{loop}")
                .with_description("Ralph loops started")
                .build(),
            loops_ended: meter
                .u64_counter("ralph.loop.ended")
                .with_unit("{loop}")
                .with_description("Ralph loops ended, by ralph.loop.outcome and ralph.loop.reason")
                .build(),
            iterations: meter
                .u64_histogram("ralph.loop.iterations")
                .with_unit("{iteration}")
                .with_description("Failed iterations a loop used before it ended")
                .with_boundaries(vec![0.0, 1.0, 2.0, 3.0, 5.0, 8.0, 10.0, 15.0, 20.0, 50.0])
                .build(),
            problems_fixed: meter
                .u64_counter("ralph.loop.problems_fixed")
                .with_unit("{problem}")
                .with_description("Language-server and ast-grep problems fixed between loop checks")
                .build(),
            check_duration: meter
                .f64_histogram("ralph.check.duration")
                .with_unit("s")
                .with_description("Time a loop condition took at Stop, by ralph.check.kind")
                .build(),
            check_files: meter
                .u64_histogram("ralph.check.files")
                .with_unit("{file}")
                .with_description("Files a project check looked at")
                .build(),
            guard_denials: meter
                .u64_counter("ralph.guard.denials")
                .with_unit("{denial}")
                .with_description("PreToolUse calls the guard denied, by ralph.guard.rule")
                .build(),
            step_changes: meter
                .u64_counter("ralph.task.step_changes")
                .with_unit("{change}")
                .with_description("Task step changes, by event.name")
                .build(),
            exporter,
            reader,
            provider,
        }
    }

    /// Adds what one accepted event contributes.
    pub fn record(&self, point: &Point) {
        match point {
            Point::LoopStarted => self.loops_started.add(1, &[]),
            Point::LoopEnded {
                outcome,
                reason,
                iterations,
            } => {
                let attributes = [
                    KeyValue::new("ralph.loop.outcome", *outcome),
                    KeyValue::new("ralph.loop.reason", reason.clone()),
                ];
                self.loops_ended.add(1, &attributes);
                self.iterations.record(*iterations, &attributes[..1]);
            }
            Point::ProblemsFixed(n) => self.problems_fixed.add(*n, &[]),
            Point::Check {
                kind,
                seconds,
                files,
            } => {
                let attributes = [KeyValue::new("ralph.check.kind", kind.clone())];
                self.check_duration.record(*seconds, &attributes);
                if let Some(files) = files {
                    self.check_files.record(*files, &attributes);
                }
            }
            Point::GuardDenied { rule } => self
                .guard_denials
                .add(1, &[KeyValue::new("ralph.guard.rule", rule.clone())]),
            Point::StepChanged { event } => self
                .step_changes
                .add(1, &[KeyValue::new("event.name", event.clone())]),
        }
    }

    /// Collects and ships every metric; `Err` with the reason it was refused.
    pub async fn ship(&self) -> Result<(), String> {
        let mut collected = ResourceMetrics::default();
        self.reader
            .collect(&mut collected)
            .map_err(|error| format!("metrics: {error}"))?;
        self.exporter
            .export(&collected)
            .await
            .map_err(|error| format!("metrics: {error}"))
    }

    pub fn shutdown(&self) {
        let _ = self.provider.shutdown();
    }
}

fn any_value(attr: &Attr) -> AnyValue {
    match attr {
        Attr::Str(text) => AnyValue::String(text.clone().into()),
        Attr::Int(n) => AnyValue::Int(*n),
        Attr::Float(x) => AnyValue::Double(*x),
        Attr::Bool(flag) => AnyValue::Boolean(*flag),
        Attr::List(items) => AnyValue::ListAny(Box::new(items.iter().map(any_value).collect())),
        Attr::Map(fields) => AnyValue::Map(Box::new(
            fields
                .iter()
                .map(|(key, value)| (Key::new(key.clone()), any_value(value)))
                .collect(),
        )),
    }
}

/// Span attributes cannot hold maps or mixed lists: those become text.
fn key_values(attrs: &Attrs) -> Vec<KeyValue> {
    attrs
        .iter()
        .map(|(key, attr)| KeyValue::new(key.clone(), value(attr)))
        .collect()
}

fn value(attr: &Attr) -> Value {
    match attr {
        Attr::Str(text) => Value::String(text.clone().into()),
        Attr::Int(n) => Value::I64(*n),
        Attr::Float(x) => Value::F64(*x),
        Attr::Bool(flag) => Value::Bool(*flag),
        Attr::List(items) if items.iter().all(|i| matches!(i, Attr::Str(_))) => {
            Value::Array(opentelemetry::Array::String(
                items
                    .iter()
                    .map(|item| match item {
                        Attr::Str(text) => StringValue::from(text.clone()),
                        _ => StringValue::from(""),
                    })
                    .collect(),
            ))
        }
        other => Value::String(format!("{other:?}").into()),
    }
}
