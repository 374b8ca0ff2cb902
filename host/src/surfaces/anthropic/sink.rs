//! Where an answer's UI chunks go on this surface: through the [`Encoder`] into
//! Anthropic events, written as SSE (`event:` named frames through the shared SSE
//! encoder, `ping` events while the model or a tool is quiet), or folded into one
//! message for a non-streamed request.
//!
//! It is a [`UiSink`], so the step streaming of `llm` writes into it directly.

use super::collect::Collector;
use super::events::{AnthropicEvent, Encoder, ToolMode};
use crate::llm::{Closed, SseSink, UiChunk, UiSink};
use crate::sse;
use bytes::Bytes;
use serde_json::Value;

/// The frame sent while the answer is quiet (Anthropic's keepalive).
const PING: &[u8] = b"event: ping\ndata: {\"type\": \"ping\"}\n\n";

/// Where the events go.
enum Output {
    Stream(SseSink),
    Collect(Collector),
}

/// The sink of one answer.
pub(crate) struct AnthropicSink {
    encoder: Encoder,
    output: Output,
    events: Vec<AnthropicEvent>,
    buf: Vec<u8>,
}

impl AnthropicSink {
    /// A sink streaming events into `sse`.
    pub(crate) fn stream(mode: ToolMode, model: &str, sse: SseSink) -> AnthropicSink {
        AnthropicSink::new(mode, model, Output::Stream(sse))
    }

    /// A sink collecting one message.
    pub(crate) fn collect(mode: ToolMode, model: &str) -> AnthropicSink {
        AnthropicSink::new(mode, model, Output::Collect(Collector::default()))
    }

    fn new(mode: ToolMode, model: &str, output: Output) -> AnthropicSink {
        AnthropicSink {
            encoder: Encoder::new(mode, model),
            output,
            events: Vec::new(),
            buf: Vec::new(),
        }
    }

    /// Sends `message_start` (and a ping) now, before the first chunk.
    pub(crate) async fn begin(&mut self) -> Result<(), Closed> {
        self.encoder.begin(&mut self.events);
        self.flush().await
    }

    /// Whether the answer is complete.
    pub(crate) fn is_ended(&self) -> bool {
        self.encoder.is_ended()
    }

    /// The collected message, or the error that ended the answer (`None` for a
    /// streaming sink).
    pub(crate) fn into_message(self) -> Option<Result<Value, super::collect::AnswerFailed>> {
        match self.output {
            Output::Collect(c) => Some(c.finish()),
            Output::Stream(_) => None,
        }
    }

    async fn flush(&mut self) -> Result<(), Closed> {
        if self.events.is_empty() {
            return Ok(());
        }
        match &mut self.output {
            Output::Collect(c) => {
                for e in self.events.drain(..) {
                    c.apply(&e);
                }
                Ok(())
            }
            Output::Stream(s) => {
                self.buf.clear();
                for e in self.events.drain(..) {
                    let data = serde_json::to_string(&e.data).expect("a JSON value serializes");
                    sse::write_event(&mut self.buf, Some(e.name), None, &data);
                }
                s.send_raw(Bytes::copy_from_slice(&self.buf)).await
            }
        }
    }
}

impl crate::surfaces::agents::turn::AnswerSink for AnthropicSink {
    async fn begin(&mut self) -> Result<(), Closed> {
        AnthropicSink::begin(self).await
    }

    fn is_ended(&self) -> bool {
        AnthropicSink::is_ended(self)
    }
}

impl UiSink for AnthropicSink {
    async fn send(&mut self, chunks: &[UiChunk]) -> Result<(), Closed> {
        for c in chunks {
            self.encoder.push(c, &mut self.events);
        }
        self.flush().await
    }

    async fn keepalive(&mut self) -> Result<(), Closed> {
        match &mut self.output {
            Output::Stream(s) => s.send_raw(Bytes::from_static(PING)).await,
            Output::Collect(_) => Ok(()),
        }
    }

    async fn closed(&self) {
        match &self.output {
            Output::Stream(s) => s.closed().await,
            // Nothing says a non-streamed request's client left; the provider's
            // timeouts bound the wait.
            Output::Collect(_) => std::future::pending().await,
        }
    }
}
