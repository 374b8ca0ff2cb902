//! The one SSE reader under the adapters whose providers stream server-sent
//! events (Anthropic, Gemini): [`Sse`] parses the body into events, bounded by
//! `max_event_kb`, and hands each event's data to the provider's [`Translate`],
//! which writes the OpenAI chunks; at the end of a well-formed body the
//! translator may close the stream (Gemini's has no end marker of its own).

use crate::llm::client::{Recode, ResponseBodyError};
use crate::sse::{self, Parser};

/// A provider's events as OpenAI chunks, one event's data at a time.
pub(crate) trait Translate: Send {
    /// Writes the chunks for one event's `data` to `out`.
    fn event(&mut self, data: &str, out: &mut Vec<u8>);
    /// Called once the whole body was read and well formed.
    fn end(&mut self, _out: &mut Vec<u8>) {}
}

/// An SSE body read through a [`Translate`].
pub(crate) struct Sse<T> {
    parser: Parser,
    translate: T,
}

impl<T: Translate> Sse<T> {
    /// `translate` fed events no longer than `max_event` bytes.
    pub(crate) fn new(max_event: usize, translate: T) -> Sse<T> {
        Sse {
            parser: Parser::new(max_event),
            translate,
        }
    }

    /// Feeds `bytes` (`None`: the end of the body) to the parser and the
    /// events it completed to the translator.
    fn read(&mut self, bytes: Option<&[u8]>, out: &mut Vec<u8>) -> Result<(), ResponseBodyError> {
        let mut events = Vec::new();
        let mut on_event = |e: sse::Event<'_>| events.push(e.data.to_string());
        let parsed = match bytes {
            Some(bytes) => self.parser.feed(bytes, &mut on_event),
            None => self.parser.finish(&mut on_event),
        };
        for data in events {
            self.translate.event(&data, out);
        }
        parsed.map_err(ResponseBodyError::Parse)
    }
}

impl<T: Translate> Recode for Sse<T> {
    fn feed(&mut self, bytes: &[u8], out: &mut Vec<u8>) -> Result<(), ResponseBodyError> {
        self.read(Some(bytes), out)
    }

    fn finish(&mut self, out: &mut Vec<u8>) -> Result<(), ResponseBodyError> {
        self.read(None, out)?;
        self.translate.end(out);
        Ok(())
    }
}
