//! Whether an upstream chat-completions answer arrived whole: the one rule every
//! surface that relays or transforms one applies. The UI stream, the agent loop
//! and the Anthropic surface read it through `transform::StepTransformer`; the
//! OpenAI proxy's relay (`surfaces::openai_proxy`) reads it directly, since it
//! passes events through untransformed.
//!
//! A stream reached its terminal event once it sent `[DONE]` or a choice's
//! `finish_reason` (some providers send no `[DONE]` after it). Every other way a
//! stream stops is an [`Unfinished`]: a body that ends before the terminal event
//! (the connection closed cleanly mid-answer), an event whose data is not a JSON
//! chunk (a torn last event, a malformed one), or a body that fails to read
//! (connection lost, idle timeout, an event over the cap). An upstream error frame
//! is an end too, but one that already carries its error. A non-streamed answer is
//! whole unless its JSON ends early.

use super::openai::ChatChunk;
use super::stream::StreamError;

/// What one upstream event is, once read by [`Terminal::read`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Read {
    /// `[DONE]`: the stream's terminal event.
    Done,
    /// A JSON chunk (which may be an error frame), parsed into the caller's chunk.
    Chunk,
}

/// How far one upstream stream got: fed every event, asked at the end of the body.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub(crate) struct Terminal {
    done: bool,
    finished: bool,
    /// An upstream error frame came: the stream ended with its own error.
    failed: bool,
}

impl Terminal {
    /// Reads the `data` of one event into `chunk` (a default one): `[DONE]` is
    /// recorded here; a chunk's finish reason is recorded by [`Terminal::see`].
    pub(crate) fn read<'a>(&mut self, data: &'a str, chunk: &mut ChatChunk<'a>) -> Result<Read, Unfinished> {
        let data = data.trim_ascii();
        if data == "[DONE]" {
            self.done = true;
            return Ok(Read::Done);
        }
        match chunk.parse_from(data) {
            Ok(()) => Ok(Read::Chunk),
            Err(e) => {
                let shown: String = data.chars().take(200).collect();
                Err(Unfinished::Malformed {
                    reason: e.to_string(),
                    shown,
                })
            }
        }
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

    /// The verdict at the end of the body: `Err(Cut)` unless the stream reached its end.
    pub(crate) fn at_end(&self) -> Result<(), Unfinished> {
        if self.reached() {
            Ok(())
        } else {
            Err(Unfinished::Cut)
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
    /// An event whose data is not a JSON chunk: why, and its first 200 characters.
    Malformed { reason: String, shown: String },
    /// Reading the body failed.
    Broken(StreamError),
}

impl Unfinished {
    /// The `code` of the OpenAI-style error frame that reports it to a client.
    pub(crate) fn code(&self) -> &'static str {
        match self {
            Unfinished::Cut => "upstream_incomplete",
            Unfinished::Malformed { .. } => "upstream_malformed",
            Unfinished::Broken(_) => "upstream_broken",
        }
    }
}

impl std::fmt::Display for Unfinished {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Unfinished::Cut => f.write_str("the upstream stream ended before the response was complete"),
            Unfinished::Malformed { reason, shown } => {
                write!(
                    f,
                    "the upstream sent a chunk that is not valid JSON ({reason}): {shown}"
                )
            }
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
