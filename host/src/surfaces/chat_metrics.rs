//! The design's chat-stream metrics on `/metrics`, per `surface` and `provider`:
//! requests, errors, time to first byte and turn duration histograms, aborts by
//! the client and by the server. A [`ChatStream`] follows one streamed answer: it
//! sees every batch of UI chunks written to the client and is ended once, when
//! the stream is over or the client went away.
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
//!   `by="client"` when the client left before the end otherwise.
//!
//! `provider` is the one the `finish` chunk names (`unknown` when none came: a
//! stream its client left, or a turn stopped before its end).

use crate::llm::UiChunk;
use crate::prom::{Counters, Histograms, escape};
use std::sync::OnceLock;
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
        }
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
}
