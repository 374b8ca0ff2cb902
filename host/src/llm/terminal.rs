//! Whether an upstream chat-completions answer arrived whole: the one rule every
//! surface that relays or transforms one applies. The UI stream, the agent loop
//! and the Anthropic surface read it through `transform::StepTransformer`; the
//! OpenAI proxy's relay (`surfaces::openai_proxy`) reads it directly, since it
//! passes events through untransformed.
//!
//! A stream reached its terminal event once it sent `[DONE]` or a choice's
//! `finish_reason` (some providers send no `[DONE]` after it). An event whose data
//! is not a JSON chunk is skipped (logged, counted on `/metrics`: in all, and per
//! chat surface and provider by [`count_skipped`]), unless more than
//! the provider's `max_malformed_chunks` come in a row. Every other way a stream
//! stops is an [`Unfinished`]: a body that ends before the terminal event (the
//! connection closed cleanly mid-answer; on a malformed event, e.g. a torn last
//! one, it is reported as that), too many malformed events in a row, or a body that fails to read
//! (connection lost, the provider's `idle_timeout_ms` passed without a byte, an
//! event over the cap, the hub's shutdown grace ran out: `client`). An upstream error frame
//! is an end too, but one that already carries its error. A non-streamed answer is
//! whole unless its JSON ends early.

use super::client::ResponseBodyError;
use super::openai::ChatChunk;
use super::stream_error::StreamError;
use crate::config::DEFAULT_MAX_MALFORMED_CHUNKS;
use crate::prom::{Counters, escape};
use std::sync::OnceLock;
use std::sync::atomic::{AtomicU64, Ordering};

/// Upstream events skipped because they were not JSON chunks, since start.
static MALFORMED_SKIPPED: AtomicU64 = AtomicU64::new(0);

/// The skipped events of finished answers, per chat surface and provider.
fn skipped_per_surface() -> &'static Counters {
    static COUNTERS: OnceLock<Counters> = OnceLock::new();
    COUNTERS.get_or_init(Counters::default)
}

/// Counts `n` events one answer of chat `surface` from `provider` skipped: the one
/// place `wasmhub_chat_unknown_upstream_events_total` is counted, by the surfaces
/// that run a model call themselves (`surfaces::chat_metrics`) and by the agent
/// loop for each of its steps.
pub(crate) fn count_skipped(surface: &str, provider: &str, n: u64) {
    if n > 0 {
        let labels = format!(
            "surface=\"{}\",provider=\"{}\"",
            escape(surface),
            escape(provider)
        );
        skipped_per_surface().add(labels, n);
    }
}

/// `/metrics` lines: `wasmhub_upstream_malformed_chunks_total` and
/// `wasmhub_chat_unknown_upstream_events_total{surface,provider}`.
pub(crate) fn metrics_text() -> String {
    let mut out = format!(
        "# HELP wasmhub_upstream_malformed_chunks_total Upstream stream events skipped because they were not JSON chunks.\n\
         # TYPE wasmhub_upstream_malformed_chunks_total counter\n\
         wasmhub_upstream_malformed_chunks_total {}\n",
        MALFORMED_SKIPPED.load(Ordering::Relaxed)
    );
    skipped_per_surface().render(
        &mut out,
        "wasmhub_chat_unknown_upstream_events_total",
        "Upstream events the hub could not read and skipped, by chat surface and provider.",
    );
    out
}

/// What one upstream event is, once read by [`Terminal::read`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Read {
    /// `[DONE]`: the stream's terminal event.
    Done,
    /// A JSON chunk (which may be an error frame), parsed into the caller's chunk.
    Chunk,
    /// Not a JSON chunk, but within `max_malformed_chunks` in a row: skip it.
    Skipped,
}

/// How far one upstream stream got: fed every event, asked at the end of the body.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Terminal {
    done: bool,
    finished: bool,
    /// An upstream error frame came: the stream ended with its own error.
    failed: bool,
    /// Malformed events in a row tolerated (the provider's `max_malformed_chunks`).
    limit: u32,
    /// The malformed events since the last good one, and the last of them.
    malformed: u32,
    last_malformed: Option<(String, String)>,
    /// Every event of the stream skipped so far.
    skipped: u64,
}

impl Default for Terminal {
    fn default() -> Terminal {
        Terminal::new(DEFAULT_MAX_MALFORMED_CHUNKS)
    }
}

impl Terminal {
    /// A stream of a provider that may send `limit` malformed events in a row.
    pub(crate) fn new(limit: u32) -> Terminal {
        Terminal {
            done: false,
            finished: false,
            failed: false,
            limit,
            malformed: 0,
            last_malformed: None,
            skipped: 0,
        }
    }

    /// The same rule for the next stream (a retry, the next target of a chain).
    pub(crate) fn restart(&mut self) {
        *self = Terminal::new(self.limit);
    }

    /// Reads the `data` of one event into `chunk` (a default one): `[DONE]` is
    /// recorded here; a chunk's finish reason is recorded by [`Terminal::see`].
    pub(crate) fn read<'a>(&mut self, data: &'a str, chunk: &mut ChatChunk<'a>) -> Result<Read, Unfinished> {
        let data = data.trim_ascii();
        if data == "[DONE]" {
            self.done = true;
            return Ok(Read::Done);
        }
        let reason = match chunk.parse_from(data) {
            Ok(()) => {
                self.malformed = 0;
                self.last_malformed = None;
                return Ok(Read::Chunk);
            }
            Err(e) => e.to_string(),
        };
        let shown: String = data.chars().take(200).collect();
        self.malformed += 1;
        if self.malformed > self.limit {
            return Err(Unfinished::Malformed {
                reason,
                shown,
                in_a_row: self.malformed,
                limit: self.limit,
            });
        }
        MALFORMED_SKIPPED.fetch_add(1, Ordering::Relaxed);
        self.skipped += 1;
        crate::warn!("upstream: skipped an event that is not a JSON chunk ({reason}): {shown}");
        self.last_malformed = Some((reason, shown));
        Ok(Read::Skipped)
    }

    /// The stream's events skipped so far: events the hub could not read (not a
    /// JSON chunk), counted per surface and provider by the chat metrics.
    pub(crate) fn skipped(&self) -> u64 {
        self.skipped
    }

    /// Records what a parsed chunk says about the end: a non-empty `finish_reason`,
    /// or an error frame.
    pub(crate) fn see(&mut self, chunk: &ChatChunk<'_>) {
        if chunk.error_message().is_some() {
            self.failed = true;
        }
        if chunk
            .choice
            .as_ref()
            .and_then(|c| c.finish_reason.as_deref())
            .is_some_and(|r| !r.is_empty())
        {
            self.finished = true;
        }
    }

    /// Whether the stream reached its end: its terminal event (`[DONE]` or a
    /// finish reason), or an error frame that carries its own error.
    pub(crate) fn reached(&self) -> bool {
        self.done || self.finished || self.failed
    }

    /// The verdict at the end of the body: `Err(Cut)` unless the stream reached its
    /// end (`Err(Malformed)` when it stopped on a malformed event: a torn one).
    pub(crate) fn at_end(&self) -> Result<(), Unfinished> {
        match (&self.last_malformed, self.reached()) {
            (_, true) => Ok(()),
            (Some((reason, shown)), false) => Err(Unfinished::Malformed {
                reason: reason.clone(),
                shown: shown.clone(),
                in_a_row: self.malformed,
                limit: self.limit,
            }),
            (None, false) => Err(Unfinished::Cut),
        }
    }
}

/// Whether a non-streamed answer's body is whole: JSON that ends early was cut.
/// (Other JSON errors are the upstream's own answer, relayed as it is.)
pub(crate) fn whole_answer(body: &[u8]) -> Result<(), Unfinished> {
    match serde_json::from_slice::<serde::de::IgnoredAny>(body) {
        Err(e) if e.classify() == serde_json::error::Category::Eof => Err(Unfinished::Cut),
        _ => Ok(()),
    }
}

/// Why an upstream answer did not arrive whole.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Unfinished {
    /// The body ended before the terminal event (or, not streamed, its JSON did).
    Cut,
    /// Events whose data is not a JSON chunk: more than `limit` in a row, or the
    /// last before the body ended (why, and its first 200 characters).
    Malformed {
        reason: String,
        shown: String,
        in_a_row: u32,
        limit: u32,
    },
    /// Reading the body failed.
    Broken(StreamError),
}

impl Unfinished {
    /// The `code` of the OpenAI-style error frame that reports it to a client.
    pub(crate) fn code(&self) -> &'static str {
        match self {
            Unfinished::Cut => "upstream_incomplete",
            Unfinished::Malformed { .. } => "upstream_malformed",
            Unfinished::Broken(StreamError::Body(ResponseBodyError::ShuttingDown)) => "hub_shutting_down",
            Unfinished::Broken(_) => "upstream_broken",
        }
    }
}

impl std::fmt::Display for Unfinished {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Unfinished::Cut => f.write_str("the upstream stream ended before the response was complete"),
            Unfinished::Malformed {
                reason,
                shown,
                in_a_row,
                limit,
            } if in_a_row > limit => write!(
                f,
                "the upstream sent {in_a_row} chunks in a row that are not valid JSON, more than its \
                 max_malformed_chunks ({limit}); the last ({reason}): {shown}"
            ),
            Unfinished::Malformed { reason, shown, .. } => write!(
                f,
                "the upstream stream ended on a chunk that is not valid JSON ({reason}): {shown}"
            ),
            Unfinished::Broken(e) => e.fmt(f),
        }
    }
}

impl std::error::Error for Unfinished {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        match self {
            Unfinished::Broken(e) => Some(e),
            Unfinished::Cut | Unfinished::Malformed { .. } => None,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn feed(events: &[&str]) -> Result<(), Unfinished> {
        let mut t = Terminal::default();
        for data in events {
            let mut chunk = ChatChunk::default();
            if t.read(data, &mut chunk)? == Read::Chunk {
                t.see(&chunk);
            }
        }
        t.at_end()
    }

    #[test]
    fn a_stream_ends_whole_only_after_done_or_a_finish_reason() {
        let text = r#"{"choices":[{"index":0,"delta":{"content":"hi"},"finish_reason":null}]}"#;
        let finish = r#"{"choices":[{"index":0,"delta":{},"finish_reason":"stop"}]}"#;
        assert_eq!(feed(&[text, finish, "[DONE]"]), Ok(()));
        assert_eq!(feed(&[text, finish]), Ok(()), "no [DONE] after a finish reason");
        assert_eq!(feed(&[text, " [DONE]\n"]), Ok(()));
        assert_eq!(feed(&[text]), Err(Unfinished::Cut));
        assert_eq!(feed(&[]), Err(Unfinished::Cut));
        let empty = r#"{"choices":[{"index":0,"delta":{},"finish_reason":""}]}"#;
        assert_eq!(
            feed(&[text, empty]),
            Err(Unfinished::Cut),
            "an empty reason is none"
        );
        let error = r#"{"error":{"message":"overloaded","type":"server_error"}}"#;
        assert_eq!(
            feed(&[text, error]),
            Ok(()),
            "an error frame carries its own error"
        );
        let torn = feed(&[text, r#"{"choices":[{"index":0,"delta":{"content":"wo"#]).unwrap_err();
        assert_eq!(torn.code(), "upstream_malformed");
        assert!(torn.to_string().contains("not valid JSON"), "{torn}");
    }

    #[test]
    fn a_read_the_hubs_shutdown_ended_has_its_own_code() {
        let body = |e| Unfinished::Broken(StreamError::Body(e));
        let shutdown = body(ResponseBodyError::ShuttingDown);
        assert_eq!(shutdown.code(), "hub_shutting_down");
        assert!(
            shutdown.to_string().starts_with("the hub is shutting down"),
            "{shutdown}"
        );
        let idle = body(ResponseBodyError::Idle(std::time::Duration::from_millis(300)));
        assert_eq!(idle.code(), "upstream_broken");
        assert_eq!(idle.to_string(), "the upstream sent nothing for 300 ms");
    }

    #[test]
    fn malformed_events_are_skipped_until_too_many_come_in_a_row() {
        let text = r#"{"choices":[{"index":0,"delta":{"content":"hi"},"finish_reason":null}]}"#;
        let finish = r#"{"choices":[{"index":0,"delta":{},"finish_reason":"stop"}]}"#;
        let bad = r#"{"choices": ["#;
        assert_eq!(feed(&[text, bad, text, finish]), Ok(()), "one glitch is skipped");
        assert_eq!(
            feed(&[text, bad, bad, bad, finish]),
            Ok(()),
            "as many as the limit (3)"
        );
        let run = feed(&[text, bad, bad, bad, bad, finish]).unwrap_err();
        assert_eq!(run.code(), "upstream_malformed");
        assert!(
            run.to_string().contains("4 chunks in a row")
                && run.to_string().contains("max_malformed_chunks (3)"),
            "{run}"
        );
        let mut strict = Terminal::new(0);
        let mut chunk = ChatChunk::default();
        assert!(
            strict.read(bad, &mut chunk).is_err(),
            "0: no malformed event is skipped"
        );
    }

    #[test]
    fn a_whole_answer_is_cut_only_when_its_json_ends_early() {
        assert_eq!(whole_answer(br#"{"choices":[]}"#), Ok(()));
        assert_eq!(whole_answer(br#"{"choices":[{"message""#), Err(Unfinished::Cut));
        assert_eq!(whole_answer(b""), Err(Unfinished::Cut));
        assert_eq!(
            whole_answer(b"not json"),
            Ok(()),
            "relayed as the upstream sent it"
        );
    }
}
