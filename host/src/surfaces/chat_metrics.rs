//! The design's chat-stream metrics on `/metrics`, per `surface` and `provider`:
//! requests, errors, time to first byte and turn duration histograms, aborts by
//! the client and by the server, unknown upstream events. A [`ChatStream`]
//! follows one answer: it sees every batch of UI chunks written to the client
//! (or is told by a surface that relays upstream events as they are) and is ended
//! once, when the answer is over or the client went away. [`Metered`] wraps a
//! surface's UI sink so that it follows the chunks through it and ends when the
//! sink is dropped.
//!
//! Surfaces: `chat` (`POST /api/chat`), `chat_resume` (`GET /api/chat/{id}/stream`),
//! `openai` (`POST /v1/chat/completions`, relayed or answered by an agent),
//! `ui_completions` (`POST /api/ui/chat/completions`), `anthropic`
//! (`POST /v1/messages`), `agents` (`POST /v1/agents/{name}`).
//!
//! - `wasmhub_chat_requests_total{surface,provider}`: streams answered;
//! - `wasmhub_chat_errors_total{surface,provider}`: streams that carried an
//!   `error` chunk (a provider that failed, a storage failure);
//! - `wasmhub_chat_time_to_first_byte_seconds{surface,provider}`: from the
//!   request to the first chunk of model output (text, reasoning or a tool input);
//! - `wasmhub_chat_turn_duration_seconds{surface,provider}`: from the request to
//!   the end of the stream;
//! - `wasmhub_chat_aborts_total{surface,provider,by}`: `by="server"` when the
//!   stream carried an `abort` chunk (a stop, a detached turn timing out),
//!   `by="client"` when the client left before the end otherwise;
//! - `wasmhub_chat_unknown_upstream_events_total{surface,provider}`: upstream
//!   events the hub could not read and skipped, counted by `llm::terminal`: here
//!   for the surfaces that run the model call themselves (`openai` relayed,
//!   `ui_completions`, `anthropic` with client tools), by the agent loop for each
//!   step of a turn (the surface that asked for the turn, `subagent` for an
//!   `agents.NAME` call).
//!
//! A non-streamed answer of an agent (`agents` without `stream`, the JSON answers
//! of `openai` and `anthropic`) is counted by [`ChatStream::answered`] once its
//! task is over: no time to first byte (its first byte is its end).
//!
//! `provider` is the one the surface routed to, or the one the `finish` chunk
//! names (`unknown` when neither is known: a stream its client left, or a turn
//! stopped before its end).

use crate::llm::{Closed, UiChunk, UiSink};
use crate::prom::{Counters, Histograms, escape};
use crate::surfaces::agents::turn::AnswerSink;
use std::sync::OnceLock;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

#[derive(Default)]
struct Families {
    requests: Counters,
    errors: Counters,
    aborts: Counters,
    first_byte: Histograms,
    duration: Histograms,
}

fn families() -> &'static Families {
    static FAMILIES: OnceLock<Families> = OnceLock::new();
    FAMILIES.get_or_init(Families::default)
}

/// One streamed chat answer being watched.
pub(crate) struct ChatStream {
    /// The span of a resume (`resume_turn`), ended with the stream.
    span: Option<crate::telemetry::Span>,
    surface: &'static str,
    started: Instant,
    first_byte: Option<Duration>,
    provider: Option<String>,
    error: bool,
    aborted: bool,
    unknown_events: u64,
}

impl ChatStream {
    /// A stream of `surface` whose request started at `started`.
    pub(crate) fn new(surface: &'static str, started: Instant) -> ChatStream {
        ChatStream {
            span: None,
            surface,
            started,
            first_byte: None,
            provider: None,
            error: false,
            aborted: false,
            unknown_events: 0,
        }
    }

    /// The provider the surface sends the request to (a `finish` chunk naming
    /// another one wins).
    pub(crate) fn provider(&mut self, name: &str) {
        self.provider = Some(name.to_string());
    }

    /// The first byte of model output reached the client now (surfaces that relay
    /// upstream events as they are).
    pub(crate) fn first_byte(&mut self) {
        if self.first_byte.is_none() {
            self.first_byte = Some(self.started.elapsed());
        }
    }

    /// The answer failed: an upstream that refused or broke, an error frame.
    pub(crate) fn error(&mut self) {
        self.error = true;
    }

    /// `n` upstream events the hub skipped (it could not read them).
    pub(crate) fn unknown_events(&mut self, n: u64) {
        self.unknown_events += n;
    }

    /// The model call to `route` (sent at `call_started`) was refused or failed
    /// before any answer: the stream ends with an error, and the call is counted
    /// in the GenAI client metrics as an `upstream_error`.
    pub(crate) fn refused(mut self, route: &crate::llm::Route, call_started: Instant) {
        let provider = &route.provider.config.name;
        self.provider(provider);
        self.error();
        self.ended(false);
        crate::llm::client_metrics::record(
            provider,
            &route.model,
            call_started.elapsed(),
            None,
            Some("upstream_error"),
        );
    }

    /// A task of the agent `name`: its provider is the one the agent asks first
    /// until its answer names the one that answered.
    pub(crate) fn agent_task(mut self, agent: &crate::agent::Agent, name: &str) -> ChatStream {
        self.provider = agent.first_provider(name).or(self.provider);
        self
    }

    /// Counts a non-streamed agent answer (`TaskAnswer`) once its task is over:
    /// an error when it failed or its JSON never complied; a task that could not
    /// start is not an answer (the surface answered 4xx/5xx before any), like a
    /// streamed turn that could not start.
    pub(crate) fn answered(mut self, task: &Result<crate::agent::TaskAnswer, crate::agent::TaskError>) {
        use crate::agent::TaskError;
        match task {
            Err(TaskError::Start(_)) => return,
            Err(TaskError::Failed(_) | TaskError::InvalidOutput(_)) => self.error(),
            Ok(_) => {}
        }
        if let Ok(answer) = task
            && let Some(provider) = &answer.provider
        {
            self.provider(provider);
        }
        self.ended(false);
    }

    /// This stream as a resume of the turn `watch` follows: a `resume_turn` span in
    /// the turn's trace (wherever the turn runs), linked to the resuming request.
    pub(crate) fn resuming(mut self, session: &str, watch: &crate::agent::Watch) -> ChatStream {
        use crate::telemetry::{Kind, Span};
        let mut span = Span::child_of(watch.trace(), Kind::Internal, format_args!("resume_turn"));
        if span.recording() {
            span.set("gen_ai.conversation.id", session);
            if let Some(request) = crate::telemetry::current() {
                span.link(request);
            }
        }
        self.span = Some(span);
        self
    }

    /// The resume's span, to keep while the stream lasts.
    pub(crate) fn span(&mut self) -> Option<crate::telemetry::Span> {
        self.span.take()
    }

    /// Notes a batch written to the client.
    pub(crate) fn saw(&mut self, chunks: &[UiChunk]) {
        for chunk in chunks {
            match chunk {
                UiChunk::TextDelta { .. }
                | UiChunk::ReasoningDelta { .. }
                | UiChunk::ToolInputStart { .. }
                    if self.first_byte.is_none() =>
                {
                    self.first_byte = Some(self.started.elapsed());
                }
                UiChunk::Error { .. } => self.error = true,
                UiChunk::Abort { .. } => self.aborted = true,
                UiChunk::Finish {
                    message_metadata: Some(meta),
                    ..
                } => {
                    if let Some(p) = meta.get("provider").and_then(|p| p.as_str()) {
                        self.provider = Some(p.to_string());
                    }
                }
                _ => {}
            }
        }
    }

    /// Counts the stream: over (`client_left` false) or abandoned by its client.
    pub(crate) fn ended(self, client_left: bool) {
        let f = families();
        let labels = format!(
            "surface=\"{}\",provider=\"{}\"",
            self.surface,
            escape(self.provider.as_deref().unwrap_or("unknown"))
        );
        f.requests.add(labels.clone(), 1);
        if self.error {
            f.errors.add(labels.clone(), 1);
        }
        // An `abort` chunk the client got is the hub's abort, whether or not the
        // client stayed for the stream's last bytes.
        if self.aborted {
            f.aborts.add(format!("{labels},by=\"server\""), 1);
        } else if client_left {
            f.aborts.add(format!("{labels},by=\"client\""), 1);
        }
        let provider = self.provider.as_deref().unwrap_or("unknown");
        crate::llm::terminal::count_skipped(self.surface, provider, self.unknown_events);
        if let Some(first) = self.first_byte {
            f.first_byte.observe(labels.clone(), first);
        }
        f.duration.observe(labels, self.started.elapsed());
    }
}

/// The families' lines for `/metrics`.
pub(crate) fn metrics_text() -> String {
    let f = families();
    let mut out = String::new();
    f.requests.render(
        &mut out,
        "wasmhub_chat_requests_total",
        "Streamed chat answers, by surface and provider.",
    );
    f.errors.render(
        &mut out,
        "wasmhub_chat_errors_total",
        "Streamed chat answers that carried an error chunk.",
    );
    f.aborts.render(
        &mut out,
        "wasmhub_chat_aborts_total",
        "Streamed chat answers abandoned by the client (by=client) or aborted by the hub (by=server).",
    );
    f.first_byte.render(
        &mut out,
        "wasmhub_chat_time_to_first_byte_seconds",
        "From the request to the first chunk of model output.",
    );
    f.duration.render(
        &mut out,
        "wasmhub_chat_turn_duration_seconds",
        "From the request to the end of the stream.",
    );
    out
}

/// A surface's UI sink whose chunks are followed as one chat stream, counted
/// when the sink is dropped (or unwrapped): ended by the client when a write
/// found it gone or the sink saw it leave.
pub(crate) struct Metered<S> {
    inner: S,
    ending: Ending,
}

/// The stream of a [`Metered`] sink, ended when dropped.
struct Ending {
    stream: Option<ChatStream>,
    client_left: AtomicBool,
}

impl Drop for Ending {
    fn drop(&mut self) {
        if let Some(stream) = self.stream.take() {
            stream.ended(self.client_left.load(Ordering::Relaxed));
        }
    }
}

impl<S> Metered<S> {
    pub(crate) fn new(inner: S, stream: ChatStream) -> Metered<S> {
        Metered {
            inner,
            ending: Ending {
                stream: Some(stream),
                client_left: AtomicBool::new(false),
            },
        }
    }

    /// The wrapped sink.
    pub(crate) fn inner(&mut self) -> &mut S {
        &mut self.inner
    }

    /// The wrapped sink, the stream counted now.
    pub(crate) fn into_inner(self) -> S {
        self.inner
    }

    /// The stream being followed (to note what the chunks do not say).
    pub(crate) fn stream(&mut self) -> &mut ChatStream {
        self.ending.stream.as_mut().expect("ended only when dropped")
    }

    fn noted<T>(&self, result: Result<T, Closed>) -> Result<T, Closed> {
        if result.is_err() {
            self.ending.client_left.store(true, Ordering::Relaxed);
        }
        result
    }
}

impl<S: UiSink + Sync> UiSink for Metered<S> {
    async fn send(&mut self, chunks: &[UiChunk]) -> Result<(), Closed> {
        self.stream().saw(chunks);
        let sent = self.inner.send(chunks).await;
        self.noted(sent)
    }

    async fn keepalive(&mut self) -> Result<(), Closed> {
        let sent = self.inner.keepalive().await;
        self.noted(sent)
    }

    async fn closed(&self) {
        self.inner.closed().await;
        self.ending.client_left.store(true, Ordering::Relaxed);
    }

    fn retract_attempt(&mut self) {
        self.inner.retract_attempt();
    }
}

impl<S: AnswerSink + Sync> AnswerSink for Metered<S> {
    async fn begin(&mut self) -> Result<(), Closed> {
        let begun = self.inner.begin().await;
        self.noted(begun)
    }

    fn is_ended(&self) -> bool {
        self.inner.is_ended()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn a_stream_is_counted_by_how_it_ended() {
        let started = Instant::now();
        let mut w = ChatStream::new("test_surface", started);
        w.saw(&[UiChunk::TextDelta {
            id: "t".into(),
            delta: "hi".into(),
        }]);
        w.saw(&[
            UiChunk::Error {
                error_text: "boom".into(),
            },
            UiChunk::Finish {
                finish_reason: None,
                message_metadata: Some(json!({"provider": "p1"})),
            },
        ]);
        w.ended(false);
        ChatStream::new("test_surface", started).ended(true);
        let text = metrics_text();
        let ok = "surface=\"test_surface\",provider=\"p1\"";
        let gone = "surface=\"test_surface\",provider=\"unknown\"";
        assert!(
            text.contains(&format!("wasmhub_chat_requests_total{{{ok}}} 1\n")),
            "{text}"
        );
        assert!(text.contains(&format!("wasmhub_chat_errors_total{{{ok}}} 1\n")));
        assert!(text.contains(&format!("wasmhub_chat_aborts_total{{{gone},by=\"client\"}} 1\n")));
        assert!(text.contains(&format!(
            "wasmhub_chat_time_to_first_byte_seconds_count{{{ok}}} 1\n"
        )));
        assert!(text.contains(&format!("wasmhub_chat_turn_duration_seconds_count{{{gone}}} 1\n")));
    }

    /// A client that is gone: every write fails.
    struct Gone;

    impl UiSink for Gone {
        async fn send(&mut self, _: &[UiChunk]) -> Result<(), Closed> {
            Err(Closed)
        }

        async fn keepalive(&mut self) -> Result<(), Closed> {
            Err(Closed)
        }

        async fn closed(&self) {}
    }

    #[tokio::test]
    async fn a_metered_sink_counts_its_stream_once_dropped() {
        let mut stream = ChatStream::new("metered_test", Instant::now());
        stream.provider("p2");
        stream.unknown_events(2);
        let mut sink = Metered::new(Gone, stream);
        let delta = UiChunk::TextDelta {
            id: "t".into(),
            delta: "hi".into(),
        };
        assert_eq!(sink.send(&[delta]).await, Err(Closed));
        let labels = "surface=\"metered_test\",provider=\"p2\"";
        assert!(!metrics_text().contains(&format!("wasmhub_chat_requests_total{{{labels}}}")));
        drop(sink);
        let text = metrics_text();
        assert!(
            text.contains(&format!("wasmhub_chat_requests_total{{{labels}}} 1\n")),
            "{text}"
        );
        assert!(text.contains(&format!(
            "wasmhub_chat_aborts_total{{{labels},by=\"client\"}} 1\n"
        )));
        // Counted by the one counter of skipped events, `llm::terminal`.
        assert!(crate::llm::terminal::metrics_text().contains(&format!(
            "wasmhub_chat_unknown_upstream_events_total{{{labels}}} 2\n"
        )));
        assert!(text.contains(&format!(
            "wasmhub_chat_time_to_first_byte_seconds_count{{{labels}}} 1\n"
        )));
    }
}
