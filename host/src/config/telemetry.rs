//! `[telemetry]`: OpenTelemetry traces exported over OTLP/HTTP JSON, and the log
//! line format. The tracer and exporter are `telemetry`'s; this is the shape of
//! the file.

use serde::Deserialize;

/// Where spans go, which traces are kept, and the exporter's bounds.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct TelemetryConfig {
    /// The OTLP/HTTP collector's base URL (`http://host:4318`); spans are POSTed
    /// to `{otlp_endpoint}/v1/traces`. No traces when absent.
    pub otlp_endpoint: Option<String>,
    /// `service.name` of the exported spans.
    pub service_name: String,
    /// Share of new traces recorded, 0.0 to 1.0; a trace with a parent follows the
    /// parent's sampled flag.
    pub sample_ratio: f64,
    /// Finished spans waiting for export; past it a span is dropped (counted).
    pub queue_spans: usize,
    /// Spans in one export request.
    pub batch_spans: usize,
    /// Longest a finished span waits for its batch to fill, in milliseconds.
    pub flush_ms: u64,
    /// Longest one export request may take (connect included), in milliseconds;
    /// its spans are dropped (counted) past it.
    pub export_timeout_ms: u64,
    /// While the collector is unreachable spans are dropped as they start (no
    /// encoding, no queueing) and the exporter probes it, first after `flush_ms`,
    /// then at doubling intervals up to this many milliseconds.
    pub probe_max_ms: u64,
    /// Record inputs and outputs (tool inputs and results, model text) on spans,
    /// with the call's secrets and the audit log's redacted keys removed.
    pub capture_content: bool,
    /// The longest content attribute, in bytes; longer ones are cut.
    pub max_content_bytes: usize,
    /// A storage wait (a session's lease, a session save) at least this long, in
    /// milliseconds, becomes a span of its own.
    pub storage_wait_ms: u64,
    /// Log line format: `text` (default) or `json` (one object per line).
    pub log_format: LogFormat,
    /// The W3C baggage keys passed on to third parties (model providers, plugins'
    /// outbound requests, external MCP servers); a client's other baggage stays
    /// in the hub. Empty (default): none is passed on.
    pub forward_baggage: Vec<String>,
}

/// How log lines are written.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize, Default)]
#[serde(rename_all = "lowercase")]
pub enum LogFormat {
    /// `<time> <LEVEL> <target>: <message>`.
    #[default]
    Text,
    /// `{"time", "level", "target", "message", "trace_id"?}`.
    Json,
}

impl Default for TelemetryConfig {
    fn default() -> Self {
        TelemetryConfig {
            otlp_endpoint: None,
            service_name: "wasmhub".into(),
            sample_ratio: 1.0,
            queue_spans: 4096,
            batch_spans: 512,
            flush_ms: 1000,
            export_timeout_ms: 5000,
            probe_max_ms: 30_000,
            capture_content: false,
            max_content_bytes: 4096,
            storage_wait_ms: 50,
            log_format: LogFormat::Text,
            forward_baggage: Vec::new(),
        }
    }
}

impl TelemetryConfig {
    /// The first value that cannot work, said for the operator.
    pub(super) fn mismatch(&self) -> Option<String> {
        if !(0.0..=1.0).contains(&self.sample_ratio) {
            return Some(format!(
                "telemetry.sample_ratio must be between 0.0 and 1.0 (share of new traces recorded), not {}",
                self.sample_ratio
            ));
        }
        for (key, value) in [
            ("queue_spans", self.queue_spans as u64),
            ("batch_spans", self.batch_spans as u64),
            ("flush_ms", self.flush_ms),
            ("export_timeout_ms", self.export_timeout_ms),
            ("probe_max_ms", self.probe_max_ms),
        ] {
            if value == 0 {
                return Some(format!("telemetry.{key} must be greater than 0"));
            }
        }
        if self.batch_spans > self.queue_spans {
            return Some("telemetry.batch_spans must be at most telemetry.queue_spans".into());
        }
        let not_a_key = |k: &String| {
            k.is_empty()
                || !k
                    .bytes()
                    .all(|b| b.is_ascii_graphic() && !b"\"(),/:;<=>?@[\\]{}".contains(&b))
        };
        if let Some(key) = self.forward_baggage.iter().find(|k| not_a_key(k)) {
            return Some(format!(
                "telemetry.forward_baggage: {key:?} is not a baggage key (a W3C token: visible ASCII \
                 without separators such as = , ; or spaces)"
            ));
        }
        if self.service_name.is_empty() {
            return Some("telemetry.service_name must not be empty".into());
        }
        let endpoint = self.otlp_endpoint.as_deref()?;
        match crate::http_client::DocumentUrl::parse(endpoint, true) {
            Ok(_) if endpoint.contains('?') => Some(format!(
                "telemetry.otlp_endpoint {endpoint:?} must not carry a query: the hub appends /v1/traces"
            )),
            Ok(_) => None,
            Err(crate::http_client::UrlProblem::Scheme) => Some(format!(
                "telemetry.otlp_endpoint {endpoint:?} must start with http:// or https://"
            )),
            Err(problem) => Some(format!(
                "telemetry.otlp_endpoint {endpoint:?}: {}",
                problem.rule()
            )),
        }
    }
}
