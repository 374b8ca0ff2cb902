//! OpenTelemetry traces: the process's tracer and its OTLP/HTTP JSON exporter.
//! Any layer may use it; it imports none of them (only `config`, `clock`, `ids`,
//! `http_client` and `logging` beside it; it tells `logging` where the current
//! trace id is).
//!
//! - `context`: trace and span ids, W3C `traceparent`/`tracestate`;
//! - `span`: [`Span`], started under a parent or the task's current span, ended
//!   (and queued for export) when dropped;
//! - `export`: the bounded queue and the batch exporter thread;
//! - `otlp`: the JSON encoding of a batch;
//! - `http`: trace context in and out of HTTP headers and MCP `_meta`, and the
//!   span of a request the hub serves.
//!
//! [`install`] starts it once (`serve`, `mcp --stdio`) when `[telemetry]
//! otlp_endpoint` is set; without it every span is inert and costs one atomic
//! load. The span a task is working in is a task-local ([`current`], set by
//! [`within`]): a span started without an explicit parent is its child. Work
//! moved to another task or thread carries its context explicitly.
//!
//! Sampling is parent-based with a ratio for new traces (`telemetry.sample_ratio`,
//! compared with the trace id's low 8 bytes as the W3C random flag suggests):
//! every replica decides the same for the same trace.

mod context;
mod export;
mod http;
mod otlp;
mod span;

pub use context::{SpanContext, SpanId, TraceId};
pub(crate) use http::{from_meta, inject, into_meta, server_span};
pub(crate) use span::{Kind, Span};

use crate::config::TelemetryConfig;
use std::future::Future;
use std::sync::OnceLock;
use std::time::Duration;

/// The installed tracer.
pub(crate) struct Telemetry {
    queue: export::Queue,
    /// New traces with a trace id whose low 8 bytes are at most this are recorded.
    sample_below: Option<u64>,
    capture_content: bool,
    max_content_bytes: usize,
    /// `[audit] redact_fields`, lowercase: redacted in captured JSON content.
    redact: Vec<String>,
    /// `telemetry.forward_baggage`: the baggage keys third parties get.
    forward_baggage: Vec<String>,
    storage_wait: Duration,
}

static INSTALLED: OnceLock<Telemetry> = OnceLock::new();
static COUNTERS: export::Counters = export::Counters {
    exported: std::sync::atomic::AtomicU64::new(0),
    dropped_queue_full: std::sync::atomic::AtomicU64::new(0),
    dropped_export_failed: std::sync::atomic::AtomicU64::new(0),
    dropped_collector_down: std::sync::atomic::AtomicU64::new(0),
    export_requests_failed: std::sync::atomic::AtomicU64::new(0),
    collector_down: std::sync::atomic::AtomicBool::new(false),
};

tokio::task_local! {
    static CURRENT: Option<SpanContext>;
}

/// Why the tracer did not start.
#[derive(Debug)]
pub(crate) enum TelemetryError {
    /// The exporter thread or its runtime could not start.
    Start(std::io::Error),
}

impl std::fmt::Display for TelemetryError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            TelemetryError::Start(e) => write!(f, "cannot start the OTLP exporter thread: {e}"),
        }
    }
}

impl std::error::Error for TelemetryError {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        match self {
            TelemetryError::Start(e) => Some(e),
        }
    }
}

/// Starts the tracer and its exporter when `config.otlp_endpoint` is set (once per
/// process; a second call changes nothing); captured content has the fields named
/// in `redact` (`[audit] redact_fields`) redacted.
pub(crate) fn install(config: &TelemetryConfig, redact: &[String]) -> Result<(), TelemetryError> {
    crate::logging::configure(config.log_format == crate::config::LogFormat::Json, || {
        current_trace_id().map(|t| t.0)
    });
    let Some(endpoint) = config.otlp_endpoint.as_deref() else {
        return Ok(());
    };
    if INSTALLED.get().is_some() {
        return Ok(());
    }
    let queue = export::start(config, endpoint, &COUNTERS).map_err(TelemetryError::Start)?;
    let _ = INSTALLED.set(Telemetry {
        queue,
        sample_below: threshold(config.sample_ratio),
        capture_content: config.capture_content,
        max_content_bytes: config.max_content_bytes,
        redact: redact.iter().map(|f| f.to_ascii_lowercase()).collect(),
        forward_baggage: config.forward_baggage.clone(),
        storage_wait: Duration::from_millis(config.storage_wait_ms),
    });
    crate::info!(
        "telemetry: exporting traces to {endpoint}/v1/traces (OTLP/HTTP JSON, sample_ratio {})",
        config.sample_ratio
    );
    Ok(())
}

/// Sends the spans still queued and waits up to `wait` (at shutdown).
pub(crate) fn flush(wait: Duration) {
    if let Some(t) = installed() {
        t.queue.flush(wait);
    }
}

pub(crate) fn installed() -> Option<&'static Telemetry> {
    INSTALLED.get()
}

/// The largest trace id low half a new trace is recorded with, for a share
/// `ratio` of new traces; `None`: none.
fn threshold(ratio: f64) -> Option<u64> {
    match ratio {
        r if r <= 0.0 => None,
        r if r >= 1.0 => Some(u64::MAX),
        r => Some((r * u64::MAX as f64) as u64),
    }
}

/// Parent-based ratio sampling: a span of a trace with a parent follows the
/// parent's sampled flag; a new trace (`trace_id`) is recorded when its id's low
/// half is at most `sample_below`.
fn sampled(parent: Option<&SpanContext>, sample_below: Option<u64>, trace_id: &TraceId) -> bool {
    match parent {
        Some(p) => p.sampled,
        None => sample_below.is_some_and(|below| trace_id.low() <= below),
    }
}

impl Telemetry {
    /// Whether a span under `parent` (of the trace `trace_id`) is recorded.
    fn samples(&self, parent: Option<&SpanContext>, trace_id: &TraceId) -> bool {
        sampled(parent, self.sample_below, trace_id)
    }

    fn finished(&self, span: Box<span::SpanData>) {
        self.queue.push(span, &COUNTERS);
    }
}

/// Whether a sampled span starting now records (the collector is not known down;
/// counted as dropped otherwise).
fn accepting() -> bool {
    COUNTERS.accepting()
}

/// The span the current task works in.
pub(crate) fn current() -> Option<SpanContext> {
    CURRENT.try_with(|c| c.clone()).ok().flatten()
}

/// Runs `fut` with `context` as its current span.
pub(crate) fn within<F: Future>(context: Option<SpanContext>, fut: F) -> impl Future<Output = F::Output> {
    CURRENT.scope(context, fut)
}

/// `fut` with the current task's span as its current span: what a spawned task
/// runs, so its spans stay in the request's trace.
pub(crate) fn carry<F: Future>(fut: F) -> impl Future<Output = F::Output> {
    within(current(), fut)
}

/// The current trace id, for log lines.
pub(crate) fn current_trace_id() -> Option<TraceId> {
    CURRENT
        .try_with(|c| c.as_ref().map(|c| c.trace_id))
        .ok()
        .flatten()
}

/// `text` for a content attribute when the operator opted in
/// (`telemetry.capture_content`), cut at `telemetry.max_content_bytes`; `None`
/// otherwise. The caller passes text already redacted.
pub(crate) fn content(text: impl FnOnce() -> String) -> Option<String> {
    let t = installed().filter(|t| t.capture_content)?;
    let mut text = text();
    if text.len() > t.max_content_bytes {
        let mut cut = t.max_content_bytes;
        while !text.is_char_boundary(cut) {
            cut -= 1;
        }
        text.truncate(cut);
        text.push('…');
    }
    Some(text)
}

/// Whether content is captured (`telemetry.capture_content`): what gathers text
/// for a content attribute asks first, so it gathers nothing otherwise.
pub(crate) fn capturing() -> bool {
    installed().is_some_and(|t| t.capture_content)
}

/// `value` as a JSON content attribute when the operator opted in
/// (`telemetry.capture_content`); `None` otherwise. Redacted as the audit log
/// redacts (the fields of `[audit] redact_fields`, at any depth), bearer tokens in
/// its strings too, and bounded by `telemetry.max_content_bytes`: its longest
/// strings are cut, each saying so, keeping it JSON (`redact::fit_json`).
pub(crate) fn content_json(value: impl FnOnce() -> serde_json::Value) -> Option<String> {
    let t = installed().filter(|t| t.capture_content)?;
    let mut value = crate::redact::redact(&value(), &t.redact);
    crate::redact::bearer_tokens(&mut value);
    Some(crate::redact::fit_json(
        value,
        t.max_content_bytes,
        "telemetry.max_content_bytes",
    ))
}

/// What of `context`'s baggage a third party gets (`telemetry.forward_baggage`):
/// nothing unless the operator named its keys.
pub(crate) fn forwarded_baggage(context: &SpanContext) -> Option<String> {
    context.baggage_allowed(&installed()?.forward_baggage)
}

/// A span `name` for a storage wait that began at `started` and ends now, under
/// the current span, when it took at least `telemetry.storage_wait_ms`; shorter
/// waits record nothing.
pub(crate) fn storage_wait(name: &'static str, started: std::time::Instant) {
    let Some(t) = installed() else {
        return;
    };
    let waited = started.elapsed();
    if waited < t.storage_wait {
        return;
    }
    let mut span = Span::start(Kind::Internal, format_args!("{name}"));
    span.began_before(waited);
    span.set("wasmhub.wait_ms", waited.as_millis() as u64);
}

/// The exporter's counters on `/metrics`.
pub(crate) fn metrics_text() -> String {
    use std::sync::atomic::Ordering::Relaxed;
    let c = &COUNTERS;
    format!(
        "# HELP wasmhub_telemetry_spans_exported_total Spans the OTLP collector took.\n\
         # TYPE wasmhub_telemetry_spans_exported_total counter\n\
         wasmhub_telemetry_spans_exported_total {}\n\
         # HELP wasmhub_telemetry_spans_dropped_total Spans dropped: the queue was full, their export failed, or they started while the collector was down.\n\
         # TYPE wasmhub_telemetry_spans_dropped_total counter\n\
         wasmhub_telemetry_spans_dropped_total{{reason=\"queue_full\"}} {}\n\
         wasmhub_telemetry_spans_dropped_total{{reason=\"export_failed\"}} {}\n\
         wasmhub_telemetry_spans_dropped_total{{reason=\"collector_down\"}} {}\n\
         # HELP wasmhub_telemetry_export_failures_total Export requests that failed (down, slow or refusing collector).\n\
         # TYPE wasmhub_telemetry_export_failures_total counter\n\
         wasmhub_telemetry_export_failures_total {}\n",
        c.exported.load(Relaxed),
        c.dropped_queue_full.load(Relaxed),
        c.dropped_export_failed.load(Relaxed),
        c.dropped_collector_down.load(Relaxed),
        c.export_requests_failed.load(Relaxed),
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sampling_follows_the_parent_and_keeps_the_ratio_of_new_traces() {
        let quarter = threshold(0.25);
        let ids: Vec<TraceId> = (0..20_000).map(|_| TraceId::random()).collect();
        let kept = ids.iter().filter(|id| sampled(None, quarter, id)).count();
        let share = kept as f64 / ids.len() as f64;
        assert!(
            (0.22..0.28).contains(&share),
            "{share} of new traces kept at ratio 0.25"
        );
        // Every replica decides the same for the same trace.
        assert!(
            ids.iter()
                .all(|id| sampled(None, quarter, id) == sampled(None, quarter, id))
        );
        assert!(ids.iter().all(|id| sampled(None, threshold(1.0), id)));
        assert!(!ids.iter().any(|id| sampled(None, threshold(0.0), id)));
        // A parent's flag wins over the ratio, both ways.
        let parent = |flag| SpanContext {
            trace_id: ids[0],
            span_id: SpanId::random(),
            sampled: flag,
            state: None,
            baggage: None,
        };
        assert!(sampled(Some(&parent(true)), threshold(0.0), &ids[0]));
        assert!(!sampled(Some(&parent(false)), threshold(1.0), &ids[0]));
        let below = TraceId([[0; 8], 1u64.to_be_bytes()].concat().try_into().unwrap());
        let above = TraceId([[0xff; 8], u64::MAX.to_be_bytes()].concat().try_into().unwrap());
        assert!(sampled(None, threshold(0.001), &below));
        assert!(!sampled(None, threshold(0.999), &above));
    }
}
