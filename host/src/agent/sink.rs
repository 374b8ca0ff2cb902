//! Where a turn's UI chunks go: the [`LiveTurn`], which applies them to the
//! assistant message it builds (and stores at the end) and sends them to every
//! client watching the turn.
//!
//! It is the [`UiSink`] the shared step transformer streams into. One difference
//! from a plain client sink: the transformer closes each model call with
//! `finish-step`, but in the agent loop a step also includes running its tool calls,
//! so the sink holds that chunk back and the loop sends `finish-step` itself after
//! the tool results.

use super::builder::MessageBuilder;
use super::live::LiveTurn;
use super::message::UiMessage;
use crate::llm::{Closed, UiChunk, UiSink};
use std::sync::Arc;

/// The sink of one turn.
pub(crate) struct TurnSink {
    turn: Arc<LiveTurn>,
    scratch: Vec<UiChunk>,
}

impl TurnSink {
    /// The sink of `turn`, whose message starts as `assistant`.
    pub(crate) fn new(turn: Arc<LiveTurn>, assistant: UiMessage) -> TurnSink {
        turn.start_message(assistant);
        TurnSink {
            turn,
            scratch: Vec::new(),
        }
    }

    /// Records and publishes chunks the loop itself produces.
    pub(crate) fn emit(&mut self, chunks: &[UiChunk]) {
        self.turn.push(chunks);
    }

    /// Reads the assistant message as built so far.
    pub(crate) fn with_message<R>(&self, read: impl FnOnce(&UiMessage) -> R) -> R {
        self.turn.with_message(read)
    }

    /// Changes the assistant message other than by a chunk.
    pub(crate) fn edit_message<R>(&mut self, edit: impl FnOnce(&mut MessageBuilder) -> R) -> R {
        self.turn.edit_message(edit)
    }

    pub(crate) fn is_cancelled(&self) -> bool {
        self.turn.cancel.is_cancelled()
    }
}

impl UiSink for TurnSink {
    async fn send(&mut self, chunks: &[UiChunk]) -> Result<(), Closed> {
        let mut scratch = std::mem::take(&mut self.scratch);
        scratch.clear();
        scratch.extend(
            chunks
                .iter()
                .filter(|c| !matches!(c, UiChunk::FinishStep))
                .cloned(),
        );
        self.emit(&scratch);
        self.scratch = scratch;
        if self.is_cancelled() { Err(Closed) } else { Ok(()) }
    }

    /// Clients get keepalives from their own stream writers, which also serve late
    /// joiners; nothing to record here.
    async fn keepalive(&mut self) -> Result<(), Closed> {
        if self.is_cancelled() { Err(Closed) } else { Ok(()) }
    }

    async fn closed(&self) {
        self.turn.cancel.cancelled().await
    }

    fn retract_attempt(&mut self) {
        self.turn.edit_message(MessageBuilder::retract_attempt);
    }
}
