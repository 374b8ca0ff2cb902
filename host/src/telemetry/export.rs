//! The batch exporter: finished spans go into a bounded queue that never waits
//! (full: the span is dropped and counted), and one thread (`wasmhub-otlp`, its
//! own single-threaded runtime, off every request's path) gathers them into
//! batches of `telemetry.batch_spans` or `telemetry.flush_ms`, whichever comes
//! first, and POSTs each as OTLP/HTTP JSON to `{otlp_endpoint}/v1/traces` over the
//! one outbound client (`http_client`), keeping the connection between batches.
//! A batch the collector does not take within `telemetry.export_timeout_ms` (down,
//! slow, or answering an error) is dropped and counted: spans are never retried.
//!
//! After a failed batch the collector counts as down ([`Counters::collector_down`]):
//! spans starting then record nothing (no attributes, no queueing, no encoding;
//! one counter moves, `reason="collector_down"`), and the thread probes the
//! collector with a connection attempt, first after `telemetry.flush_ms`, then at
//! doubling intervals up to `telemetry.probe_max_ms`, until one connects. So a
//! collector that is away costs the hub next to nothing.

use super::span::SpanData;
use crate::config::TelemetryConfig;
use crate::http_client::{self, ConnectError, DocumentUrl};
use bytes::Bytes;
use http::{Request, StatusCode, header};
use http_body_util::{BodyExt, Full, Limited};
use std::fmt;
use std::net::SocketAddr;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::mpsc::{Receiver, RecvTimeoutError, SyncSender, TrySendError};
use std::time::{Duration, Instant};

/// The most of a collector's answer read (its `partialSuccess`); the rest is not.
const MAX_ANSWER: usize = 64 * 1024;

/// What the exporter thread receives.
pub(super) enum Message {
    Span(Box<SpanData>),
    /// Export everything queued before this now, then answer.
    Flush(SyncSender<()>),
}

/// Spans exported, and dropped by reason (`/metrics`); and whether the collector
/// is down, which spans check as they start.
#[derive(Default)]
pub(super) struct Counters {
    pub exported: AtomicU64,
    pub dropped_queue_full: AtomicU64,
    pub dropped_export_failed: AtomicU64,
    /// Spans not recorded at all: they started while the collector was down.
    pub dropped_collector_down: AtomicU64,
    pub export_requests_failed: AtomicU64,
    /// Set by the exporter thread from a failed batch until a probe connects.
    pub collector_down: AtomicBool,
}

impl Counters {
    /// Whether a span starting now may record: the collector is not known down.
    /// When it is, the span is counted as dropped here.
    pub(super) fn accepting(&self) -> bool {
        if self.collector_down.load(Ordering::Relaxed) {
            self.dropped_collector_down.fetch_add(1, Ordering::Relaxed);
            return false;
        }
        true
    }
}

/// The queue's sending end.
pub(super) struct Queue {
    tx: SyncSender<Message>,
}

impl Queue {
    /// Hands a finished span to the exporter, or drops it (counted) when the queue
    /// is full; never waits.
    pub(super) fn push(&self, span: Box<SpanData>, counters: &Counters) {
        match self.tx.try_send(Message::Span(span)) {
            Ok(()) => {}
            Err(TrySendError::Full(_)) | Err(TrySendError::Disconnected(_)) => {
                counters.dropped_queue_full.fetch_add(1, Ordering::Relaxed);
            }
        }
    }

    /// Asks the exporter to send what is queued and waits up to `wait` for it.
    pub(super) fn flush(&self, wait: Duration) {
        let (done, answered) = std::sync::mpsc::sync_channel(1);
        // A full queue is being exported already; the flush waits its turn.
        if self.tx.send(Message::Flush(done)).is_ok() {
            let _ = answered.recv_timeout(wait);
        }
    }
}

/// Where batches go: the collector's address and the request target.
struct Target {
    tls: bool,
    host: String,
    port: u16,
    authority: String,
    path: String,
}

impl Target {
    fn of(endpoint: &str) -> Option<Target> {
        let url = DocumentUrl::parse(endpoint, true).ok()?;
        Some(Target {
            tls: url.tls,
            host: url.host.to_string(),
            port: url.port,
            authority: url.authority.to_string(),
            path: format!("{}/v1/traces", url.target.trim_end_matches('/')),
        })
    }
}

/// How the thread batches and sends.
struct Settings {
    service_name: String,
    batch_spans: usize,
    flush: Duration,
    timeout: Duration,
    probe_max: Duration,
}

/// Starts the exporter thread for `config` (whose endpoint the config check
/// accepted) and returns its queue.
pub(super) fn start(
    config: &TelemetryConfig,
    endpoint: &str,
    counters: &'static Counters,
) -> std::io::Result<Queue> {
    let target = Target::of(endpoint).ok_or_else(|| {
        std::io::Error::new(
            std::io::ErrorKind::InvalidInput,
            "telemetry.otlp_endpoint is not a URL",
        )
    })?;
    let settings = Settings {
        service_name: config.service_name.clone(),
        batch_spans: config.batch_spans,
        flush: Duration::from_millis(config.flush_ms),
        timeout: Duration::from_millis(config.export_timeout_ms),
        probe_max: Duration::from_millis(config.probe_max_ms),
    };
    let (tx, rx) = std::sync::mpsc::sync_channel(config.queue_spans);
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()?;
    std::thread::Builder::new()
        .name("wasmhub-otlp".into())
        .spawn(move || run(rx, runtime, target, settings, counters))?;
    Ok(Queue { tx })
}

/// The thread: a batch at a time until every sender is gone.
fn run(
    rx: Receiver<Message>,
    runtime: tokio::runtime::Runtime,
    target: Target,
    settings: Settings,
    counters: &Counters,
) {
    let mut sender = None;
    let mut failing = false;
    while let Ok(first) = rx.recv() {
        let mut down = false;
        let mut batch = Vec::new();
        let mut flushes = Vec::new();
        let mut next = Some(first);
        let until = Instant::now() + settings.flush;
        while let Some(m) = next.take() {
            match m {
                Message::Span(s) => batch.push(s),
                Message::Flush(done) => flushes.push(done),
            }
            if flushes.is_empty() && batch.len() < settings.batch_spans {
                match rx.recv_timeout(until.saturating_duration_since(Instant::now())) {
                    Ok(m) => next = Some(m),
                    Err(RecvTimeoutError::Timeout | RecvTimeoutError::Disconnected) => {}
                }
            }
        }
        if !batch.is_empty() {
            let encode = || super::otlp::encode(&settings.service_name, crate::ids::replica_id(), &batch);
            let sent = runtime.block_on(async {
                match tokio::time::timeout(settings.timeout, post(&target, &mut sender, encode)).await {
                    Ok(result) => result,
                    Err(_) => Err(ExportError::Timeout(settings.timeout)),
                }
            });
            down = sent.is_err();
            report(sent, batch.len() as u64, counters, &mut failing, &mut sender);
        }
        for done in flushes {
            let _ = done.send(());
        }
        if down && !probe(&rx, &runtime, &target, &settings, counters, &mut sender) {
            return;
        }
    }
}

/// The collector is down: marks it so (spans stop recording), drops what is
/// queued, and tries to connect with growing pauses until it answers (`true`,
/// `sender` connected) or every sender is gone (`false`).
fn probe(
    rx: &Receiver<Message>,
    runtime: &tokio::runtime::Runtime,
    target: &Target,
    settings: &Settings,
    counters: &Counters,
    sender: &mut Option<Sender>,
) -> bool {
    counters.collector_down.store(true, Ordering::Relaxed);
    let mut pause = settings.flush;
    loop {
        let until = Instant::now() + pause;
        loop {
            match rx.recv_timeout(until.saturating_duration_since(Instant::now())) {
                Ok(Message::Span(_)) => {
                    counters.dropped_collector_down.fetch_add(1, Ordering::Relaxed);
                }
                // Nothing can be sent: the flush is over.
                Ok(Message::Flush(done)) => {
                    let _ = done.send(());
                }
                Err(RecvTimeoutError::Timeout) => break,
                Err(RecvTimeoutError::Disconnected) => return false,
            }
        }
        // The timeout is made inside the runtime (it needs its timer).
        let attempt =
            runtime.block_on(async { tokio::time::timeout(settings.timeout, connect(target)).await });
        if let Ok(Ok(connected)) = attempt {
            *sender = Some(connected);
            counters.collector_down.store(false, Ordering::Relaxed);
            return true;
        }
        pause = (pause * 2).min(settings.probe_max);
    }
}

/// Counts a batch's fate, and logs when export starts or stops failing (not
/// every batch of a collector that is down).
fn report(
    sent: Result<(), ExportError>,
    spans: u64,
    counters: &Counters,
    failing: &mut bool,
    sender: &mut Option<Sender>,
) {
    match sent {
        Ok(()) => {
            counters.exported.fetch_add(spans, Ordering::Relaxed);
            if std::mem::replace(failing, false) {
                crate::info!("telemetry: the OTLP collector takes spans again");
            }
        }
        Err(e) => {
            *sender = None;
            counters.dropped_export_failed.fetch_add(spans, Ordering::Relaxed);
            counters.export_requests_failed.fetch_add(1, Ordering::Relaxed);
            if !std::mem::replace(failing, true) {
                crate::warn!(
                    "telemetry: exporting spans failed ({e}); dropping them until the collector answers (wasmhub_telemetry_spans_dropped_total)"
                );
            }
        }
    }
}

type Sender = hyper::client::conn::http1::SendRequest<Full<Bytes>>;

/// POSTs one batch, connecting first when there is no open connection; the batch
/// is encoded only once connected (a collector that is down costs no encoding).
/// A kept connection the collector closed while idle fails before any answer:
/// the batch is then sent once more on a new one.
async fn post(
    target: &Target,
    sender: &mut Option<Sender>,
    encode: impl FnOnce() -> Vec<u8>,
) -> Result<(), ExportError> {
    let reused = sender.as_ref().is_some_and(|s| !s.is_closed());
    if !reused {
        *sender = Some(connect(target).await?);
    }
    let body = Bytes::from(encode());
    match send(target, sender, body.clone()).await {
        Err(ExportError::Http(e)) if reused && (e.is_canceled() || e.is_incomplete_message()) => {
            *sender = None;
            send(target, sender, body).await
        }
        other => other,
    }
}

async fn send(target: &Target, sender: &mut Option<Sender>, body: Bytes) -> Result<(), ExportError> {
    if sender.as_ref().is_none_or(|s| s.is_closed()) {
        *sender = Some(connect(target).await?);
    }
    let s = sender.as_mut().expect("connected above");
    s.ready().await.map_err(ExportError::Http)?;
    let request = Request::post(target.path.as_str())
        .header(header::HOST, target.authority.as_str())
        .header(header::CONTENT_TYPE, "application/json")
        .body(Full::new(body))
        .map_err(|_| ExportError::Target)?;
    let response = s.send_request(request).await.map_err(ExportError::Http)?;
    let status = response.status();
    // Read the answer so the connection can carry the next batch.
    let _ = Limited::new(response.into_body(), MAX_ANSWER).collect().await;
    if !status.is_success() {
        return Err(ExportError::Status(status));
    }
    Ok(())
}

async fn connect(target: &Target) -> Result<Sender, ExportError> {
    let addrs: Vec<SocketAddr> = tokio::net::lookup_host((target.host.as_str(), target.port))
        .await
        .map_err(ExportError::Resolve)?
        .collect();
    let tcp = http_client::connect_tcp(addrs)
        .await
        .map_err(ExportError::Connect)?;
    let stream = http_client::wrap(tcp, target.tls.then_some(target.host.as_str()))
        .await
        .map_err(ExportError::Connect)?;
    let (sender, connection) = http_client::handshake(stream).await.map_err(ExportError::Http)?;
    tokio::spawn(connection);
    Ok(sender)
}

/// Why a batch did not reach the collector.
#[derive(Debug)]
enum ExportError {
    Target,
    Resolve(std::io::Error),
    Connect(ConnectError),
    Http(hyper::Error),
    Status(StatusCode),
    Timeout(Duration),
}

impl fmt::Display for ExportError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            ExportError::Target => f.write_str("telemetry.otlp_endpoint makes no valid request target"),
            ExportError::Resolve(e) => write!(f, "resolving the collector's host: {e}"),
            ExportError::Connect(e) => write!(f, "connecting to the collector: {e}"),
            ExportError::Http(e) => write!(f, "HTTP: {e}"),
            ExportError::Status(s) => write!(f, "the collector answered {s}"),
            ExportError::Timeout(d) => write!(
                f,
                "no answer within {} ms (telemetry.export_timeout_ms)",
                d.as_millis()
            ),
        }
    }
}

impl std::error::Error for ExportError {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        match self {
            ExportError::Resolve(e) => Some(e),
            ExportError::Connect(e) => Some(e),
            ExportError::Http(e) => Some(e),
            ExportError::Target | ExportError::Status(_) | ExportError::Timeout(_) => None,
        }
    }
}
