//! Streaming a model call: upstream SSE events read under the idle timeout, the sink
//! UI chunks go to (SSE towards a client, with keepalives and a bounded buffer),
//! and [`Llm::run_step`], one model call as one UI step.
//!
//! Cancellation is by drop: when the client goes away the sink's `closed()` fires,
//! the step returns [`Closed`], and dropping the upstream body closes the upstream
//! connection at once.

use super::Llm;
use super::client::ResponseBody;
use super::providers::Route;
use super::stream_error::StreamError;
use super::transform::{StepOptions, StepSummary, StepTransformer};
use super::ui::UiChunk;
use super::upstream;
use crate::race::{Race, race};
use crate::sse::{self, OwnedEvent};
use bytes::Bytes;
use http::HeaderMap;
use serde_json::Value;
use std::collections::VecDeque;
use std::future::Future;
use std::time::Duration;
use tokio::sync::mpsc;

/// Largest frame handed to the client body. With the body channel's bounded
/// capacity this bounds the bytes buffered per stream (capacity x 64 KiB), even
/// when one upstream event is megabytes long.
pub(crate) const MAX_FRAME: usize = 64 * 1024;
/// Largest upstream error body read to build an error message.
const MAX_ERROR_BODY: usize = 1 << 20;

/// Upstream SSE events from a response body.
pub struct EventReader {
    body: ResponseBody,
    parser: sse::Parser,
    queue: VecDeque<OwnedEvent>,
    ended: bool,
}

impl EventReader {
    /// Reads `body`; an event larger than `max_event` bytes is an error.
    pub fn new(body: ResponseBody, max_event: usize) -> EventReader {
        EventReader {
            body,
            parser: sse::Parser::new(max_event),
            queue: VecDeque::new(),
            ended: false,
        }
    }

    /// The next event; `None` at the end of the body. Cancel-safe: dropping the
    /// future loses nothing, so it can be raced against timers.
    pub async fn next(&mut self) -> Result<Option<OwnedEvent>, StreamError> {
        loop {
            if let Some(event) = self.queue.pop_front() {
                return Ok(Some(event));
            }
            if self.ended {
                return Ok(None);
            }
            let queue = &mut self.queue;
            match self.body.chunk().await.map_err(StreamError::Body)? {
                Some(bytes) => self.parser.feed(&bytes, &mut |e| queue.push_back(e.to_owned())),
                None => {
                    self.ended = true;
                    self.parser.finish(&mut |e| queue.push_back(e.to_owned()))
                }
            }
            .map_err(StreamError::Parse)?;
        }
    }
}

/// The receiving side is gone (the client disconnected).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Closed;

/// Where a step's UI chunks go. [`SseSink`] writes them to a client; the agent loop
/// may wrap it to also record what it sends.
pub trait UiSink: Send {
    /// Delivers `chunks`, in order; `Closed` once the receiver is gone.
    fn send(&mut self, chunks: &[UiChunk]) -> impl Future<Output = Result<(), Closed>> + Send;
    /// Tells the client the stream is alive while the upstream is silent.
    fn keepalive(&mut self) -> impl Future<Output = Result<(), Closed>> + Send;
    /// Resolves once the receiving side is gone.
    fn closed(&self) -> impl Future<Output = ()> + Send;
    /// The parts sent since the step's `start-step` belong to an attempt that was
    /// given up (its target failed mid-stream; the next target answers the same
    /// step): a sink that records the message drops them. The client already saw
    /// them, so a client sink does nothing.
    fn retract_attempt(&mut self) {}
}

/// SSE frames into a bounded body channel (see `surfaces::body::Body::channel`).
pub struct SseSink {
    tx: mpsc::Sender<Bytes>,
    buf: Vec<u8>,
}

impl SseSink {
    /// A sink writing SSE frames into `tx` (the sender of a body channel).
    pub fn new(tx: mpsc::Sender<Bytes>) -> SseSink {
        SseSink { tx, buf: Vec::new() }
    }

    /// Sends already-encoded SSE bytes, cut into frames of at most [`MAX_FRAME`].
    pub async fn send_raw(&mut self, bytes: Bytes) -> Result<(), Closed> {
        let mut rest = bytes;
        while !rest.is_empty() {
            let frame = rest.split_to(rest.len().min(MAX_FRAME));
            self.tx.send(frame).await.map_err(|_| Closed)?;
        }
        Ok(())
    }

    /// Sends one event (`event:`/`id:` kept when present) with its data unchanged.
    pub async fn send_event(&mut self, event: &OwnedEvent) -> Result<(), Closed> {
        self.buf.clear();
        let name = (event.event != "message").then_some(event.event.as_str());
        sse::write_event(&mut self.buf, name, event.id.as_deref(), &event.data);
        let bytes = Bytes::copy_from_slice(&self.buf);
        self.send_raw(bytes).await
    }

    /// Sends one JSON value as a `data:` frame.
    pub async fn send_json(&mut self, value: &Value) -> Result<(), Closed> {
        self.buf.clear();
        sse::write_json(&mut self.buf, value);
        let bytes = Bytes::copy_from_slice(&self.buf);
        self.send_raw(bytes).await
    }

    /// `data: [DONE]`.
    pub async fn done(&mut self) -> Result<(), Closed> {
        self.send_raw(Bytes::from_static(sse::DONE)).await
    }
}

impl UiSink for SseSink {
    async fn send(&mut self, chunks: &[UiChunk]) -> Result<(), Closed> {
        if chunks.is_empty() {
            return Ok(());
        }
        self.buf.clear();
        for chunk in chunks {
            chunk.write_sse(&mut self.buf);
        }
        let bytes = Bytes::copy_from_slice(&self.buf);
        self.send_raw(bytes).await
    }

    async fn keepalive(&mut self) -> Result<(), Closed> {
        self.send_raw(Bytes::from_static(sse::KEEPALIVE)).await
    }

    async fn closed(&self) {
        self.tx.closed().await
    }
}

/// Awaits `fut`, sending a keepalive to `sink` every `interval` it takes, and gives
/// up (dropping `fut`, which cancels whatever it was doing) when the sink closes.
pub(crate) async fn keepalive_while<S: UiSink, T>(
    sink: &mut S,
    interval: Duration,
    fut: impl Future<Output = T>,
) -> Result<T, Closed> {
    let mut fut = std::pin::pin!(fut);
    loop {
        match race(sink.closed(), tokio::time::timeout(interval, &mut fut)).await {
            Race::First(()) => return Err(Closed),
            Race::Second(Ok(value)) => return Ok(value),
            Race::Second(Err(_quiet)) => sink.keepalive().await?,
        }
    }
}

impl Llm {
    /// Runs one model call as one UI step: sends `body` (already prepared with
    /// [`super::openai::prepare_stream_body`]) to `route`'s provider, streams the
    /// step's UI chunks into `sink`, and returns the step summary. Upstream failures
    /// (error answers, transport errors, timeouts) end the step with an `error`
    /// chunk and are reported in the summary; only a closed sink is an `Err`.
    /// Never sends `[DONE]`: the caller ends the message. [`Llm::run_step_chain`]
    /// does the same over a chain of targets.
    pub async fn run_step<S: UiSink>(
        &self,
        route: &Route,
        body: &Value,
        opts: StepOptions,
        sink: &mut S,
    ) -> Result<StepSummary, Closed> {
        self.run_step_chain(std::slice::from_ref(route), body, |_, _| {}, opts, sink)
            .await
    }

    /// One attempt at a step: sends `body` to `route`'s provider and feeds what
    /// comes back into `t`, sending the UI chunks to `sink` as they come. A failure
    /// is left in `t` ([`StepTransformer::failure`]) for the caller to report or to
    /// try the next target.
    pub(crate) async fn attempt<S: UiSink>(
        &self,
        route: &Route,
        body: &Value,
        t: &mut StepTransformer,
        sink: &mut S,
    ) -> Result<(), Closed> {
        let provider = &route.provider;
        let interval = Duration::from_millis(provider.config.keepalive_ms.max(1));
        let mut out = Vec::new();
        let no_headers = HeaderMap::new();
        let call = self.chat(route, body, &no_headers);
        match keepalive_while(sink, interval, call).await? {
            Err(e) => t.fail(e.to_string(), &mut out),
            Ok(resp) if !resp.status.is_success() => {
                let status = resp.status;
                let message = match keepalive_while(sink, interval, resp.body.collect(MAX_ERROR_BODY)).await?
                {
                    Ok(body) => upstream::error_message(&body),
                    Err(e) => e.to_string(),
                };
                t.fail(
                    format!("provider {:?} answered {status}: {message}", provider.config.name),
                    &mut out,
                );
            }
            Ok(resp) => transform_events(provider, resp.body, t, sink).await?,
        }
        sink.send(&out).await
    }
}

/// Feeds the SSE events of a successful upstream streaming answer `body` to `t`,
/// sending the UI chunks it makes to `sink` as they come (keepalives while the
/// upstream is quiet), until the upstream's stream is over. A broken stream ends
/// the step with an `error` chunk; only a closed sink is an `Err`. The caller
/// begins and finishes `t`.
pub(crate) async fn transform_events<S: UiSink>(
    provider: &super::Provider,
    body: ResponseBody,
    t: &mut StepTransformer,
    sink: &mut S,
) -> Result<(), Closed> {
    let interval = Duration::from_millis(provider.config.keepalive_ms.max(1));
    let max_event = (provider.config.max_event_kb.max(1) as usize).saturating_mul(1024);
    let mut reader = EventReader::new(body, max_event);
    let mut out = Vec::new();
    loop {
        match keepalive_while(sink, interval, reader.next()).await? {
            Ok(Some(event)) => t.feed_data(&event.data, &mut out),
            Ok(None) => return Ok(()),
            Err(e) => t.fail(e.to_string(), &mut out),
        }
        if !out.is_empty() {
            sink.send(&out).await?;
            out.clear();
        }
        if t.is_done() {
            return Ok(());
        }
    }
}
