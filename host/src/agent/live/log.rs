//! A live turn's record: the assistant message it builds and the chunks it sent,
//! the chunks bounded by `agent.resume_buffer_kb`.
//!
//! Chunks are numbered from the turn's start. While every chunk is still kept, a
//! joining client gets them all, exactly as the first client saw them. Once the
//! oldest ones were dropped to stay within the budget, a joining client gets a
//! replay synthesized from the message state ([`super::replay`]) and then the
//! live chunks. A connected reader that reads slowly holds back the chunks it has
//! not read, up to `agent.lagging_watcher_kb`; past that it is told it fell
//! behind (it cannot go on without a gap) and may reconnect, which resumes it
//! from the replay.

use super::replay::{Baseline, ReplayState, replay};
use crate::agent::builder::MessageBuilder;
use crate::agent::message::{Role, UiMessage};
use crate::json::encoded_len;
use crate::llm::UiChunk;
use std::collections::{HashMap, VecDeque};

/// A position in a turn's chunks: how many chunks came before.
pub(crate) type Position = usize;

/// The chunks after a watcher's position are gone: it fell behind by more than
/// the resume budget.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Lagged;

/// A reader's handle in the log (its position holds chunks back).
pub(super) type ReaderId = u64;

/// A live turn's message and its recent chunks.
pub(super) struct TurnLog {
    /// The position of `chunks[0]`.
    base: Position,
    /// The chunks kept, each with its weight.
    chunks: VecDeque<(UiChunk, usize)>,
    /// The sum of the kept chunks' weights.
    bytes: usize,
    /// The most the kept chunks may weigh once every reader read them.
    budget: usize,
    /// The most they may weigh at all, readers or not.
    lagging: usize,
    /// Each connected reader's position: chunks from there on are kept for it.
    readers: HashMap<ReaderId, Position>,
    next_reader: ReaderId,
    builder: MessageBuilder,
    baseline: Baseline,
    /// Input text streamed so far of each tool call whose input is streaming.
    inputs: HashMap<String, String>,
    /// The `error`, `abort` and `finish` chunks, for a replay.
    ending: Vec<UiChunk>,
}

impl TurnLog {
    /// An empty log whose chunks weigh at most `budget` bytes once read, and
    /// `lagging` bytes in all.
    pub(super) fn new(budget: usize, lagging: usize) -> TurnLog {
        let message = UiMessage::new(String::new(), Role::Assistant);
        TurnLog {
            base: 0,
            chunks: VecDeque::new(),
            bytes: 0,
            budget,
            lagging: lagging.max(budget),
            readers: HashMap::new(),
            next_reader: 0,
            baseline: Baseline::of(&message),
            builder: MessageBuilder::new(message),
            inputs: HashMap::new(),
            ending: Vec::new(),
        }
    }

    /// Starts from `message`: the assistant message the turn writes (new, or one it
    /// continues).
    pub(super) fn start_message(&mut self, message: UiMessage) {
        self.baseline = Baseline::of(&message);
        self.builder = MessageBuilder::new(message);
    }

    /// The position after the last chunk.
    pub(super) fn head(&self) -> Position {
        self.base + self.chunks.len()
    }

    /// The weight of the kept chunks.
    pub(super) fn kept_bytes(&self) -> usize {
        self.bytes
    }

    pub(super) fn builder(&self) -> &MessageBuilder {
        &self.builder
    }

    pub(super) fn builder_mut(&mut self) -> &mut MessageBuilder {
        &mut self.builder
    }

    /// Applies `chunks` to the message and keeps them, dropping the oldest past the
    /// budget.
    pub(super) fn push(&mut self, chunks: &[UiChunk]) {
        for chunk in chunks {
            self.builder.apply(chunk);
            self.track(chunk);
            let weight = weight(chunk);
            self.bytes += weight;
            self.chunks.push_back((chunk.clone(), weight));
        }
        let slowest = self.readers.values().min().copied().unwrap_or(Position::MAX);
        while self.bytes > self.budget && (self.base < slowest || self.bytes > self.lagging) {
            let Some((_, weight)) = self.chunks.pop_front() else {
                break;
            };
            self.bytes -= weight;
            self.base += 1;
        }
    }

    /// What the replay needs beyond the message.
    fn track(&mut self, chunk: &UiChunk) {
        match chunk {
            UiChunk::ToolInputStart { tool_call_id, .. } => {
                self.inputs.insert(tool_call_id.to_string(), String::new());
            }
            UiChunk::ToolInputDelta {
                tool_call_id,
                input_text_delta,
            } => {
                if let Some(text) = self.inputs.get_mut(tool_call_id.as_str()) {
                    text.push_str(input_text_delta);
                }
            }
            UiChunk::ToolInputAvailable { tool_call_id, .. }
            | UiChunk::ToolInputError { tool_call_id, .. } => {
                self.inputs.remove(tool_call_id);
            }
            UiChunk::Error { .. } | UiChunk::Abort { .. } | UiChunk::Finish { .. } => {
                self.ending.push(chunk.clone());
            }
            _ => {}
        }
    }

    /// The chunks from `from` on.
    pub(super) fn since(&self, from: Position) -> Result<Vec<UiChunk>, Lagged> {
        let skip = from.checked_sub(self.base).ok_or(Lagged)?;
        Ok(self.chunks.iter().skip(skip).map(|(c, _)| c.clone()).collect())
    }

    /// The chunks from `from` on for `reader`, which has read up to there and now
    /// reads these.
    pub(super) fn read(&mut self, reader: ReaderId, from: Position) -> Result<Vec<UiChunk>, Lagged> {
        let batch = self.since(from)?;
        if let Some(at) = self.readers.get_mut(&reader) {
            *at = from + batch.len();
        }
        Ok(batch)
    }

    /// What a client joining now is sent first, and the position it goes on from:
    /// every chunk when all are kept, else a replay of the message.
    pub(super) fn join(&self) -> (Vec<UiChunk>, Position) {
        if self.base == 0 {
            return (self.chunks.iter().map(|(c, _)| c.clone()).collect(), self.head());
        }
        (self.replay(), self.head())
    }

    /// A connected reader at `at`: the chunks from there are kept for it (up to
    /// the lagging limit).
    pub(super) fn add_reader(&mut self, at: Position) -> ReaderId {
        let id = self.next_reader;
        self.next_reader += 1;
        self.readers.insert(id, at);
        id
    }

    /// A reader gone, or moved to `at`.
    pub(super) fn move_reader(&mut self, reader: ReaderId, at: Option<Position>) {
        match at {
            Some(at) => {
                self.readers.insert(reader, at);
            }
            None => {
                self.readers.remove(&reader);
            }
        }
    }

    /// The chunks that rebuild the message as it is now.
    pub(super) fn replay(&self) -> Vec<UiChunk> {
        let open: HashMap<String, usize> = self
            .builder
            .open_parts()
            .map(|(id, i)| (id.to_string(), i))
            .collect();
        let state = ReplayState {
            open: &open,
            inputs: &self.inputs,
            baseline: &self.baseline,
            ending: &self.ending,
        };
        replay(self.builder.message(), &state)
    }
}

/// About how many bytes a chunk takes (its JSON size, plus the cost of keeping it).
fn weight(chunk: &UiChunk) -> usize {
    const KEEPING: usize = std::mem::size_of::<UiChunk>() + 16;
    match chunk {
        UiChunk::TextDelta { id, delta } | UiChunk::ReasoningDelta { id, delta } => {
            KEEPING + id.len() + delta.len()
        }
        other => KEEPING + encoded_len(other),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::agent::message::{Part, ToolApproval, ToolPart, ToolState};
    use serde_json::json;

    fn text(id: &str, delta: &str) -> UiChunk {
        UiChunk::TextDelta {
            id: id.into(),
            delta: delta.into(),
        }
    }

    /// What a client that had `before` builds from `chunks`.
    fn on_client(before: &UiMessage, chunks: &[UiChunk]) -> UiMessage {
        let mut b = MessageBuilder::new(before.clone());
        for c in chunks {
            b.apply(c);
        }
        b.message().clone()
    }

    /// A turn with every kind of part, some closed, some still open.
    fn busy_turn() -> Vec<UiChunk> {
        vec![
            UiChunk::Start {
                message_id: Some("m".into()),
                message_metadata: Some(json!({"model": "x"})),
            },
            UiChunk::StartStep,
            UiChunk::ReasoningStart {
                id: "r".into(),
                provider_metadata: None,
            },
            UiChunk::ReasoningDelta {
                id: "r".into(),
                delta: "hmm".into(),
            },
            UiChunk::ReasoningEnd {
                id: "r".into(),
                provider_metadata: None,
            },
            UiChunk::TextStart { id: "a".into() },
            text("a", "first "),
            text("a", "answer"),
            UiChunk::TextEnd { id: "a".into() },
            UiChunk::ToolInputStart {
                tool_call_id: "c1".into(),
                tool_name: "hub_call".into(),
                dynamic: None,
                title: None,
            },
            UiChunk::ToolInputAvailable {
                tool_call_id: "c1".into(),
                tool_name: "hub_call".into(),
                input: json!({"op": "calc.eval"}),
                provider_metadata: None,
            },
            UiChunk::ToolOutputAvailable {
                tool_call_id: "c1".into(),
                output: json!({"value": 3}),
                preliminary: None,
            },
            UiChunk::ToolInputError {
                tool_call_id: "c2".into(),
                tool_name: "hub_call".into(),
                input: json!("{bad"),
                error_text: "not JSON".into(),
            },
            UiChunk::Data {
                name: "llm-fallback".into(),
                id: None,
                data: json!({"from": "a"}),
                transient: None,
            },
            UiChunk::SourceUrl {
                source_id: "s1".into(),
                url: "https://example.com".into(),
                title: Some("Example".into()),
            },
            UiChunk::FinishStep,
            UiChunk::StartStep,
            UiChunk::ToolInputStart {
                tool_call_id: "c3".into(),
                tool_name: "hub_search".into(),
                dynamic: Some(true),
                title: None,
            },
            UiChunk::ToolInputDelta {
                tool_call_id: "c3".into(),
                input_text_delta: "{\"query\":".into(),
            },
            UiChunk::TextStart { id: "b".into() },
            text("b", "still going"),
        ]
    }

    #[test]
    fn a_replay_rebuilds_the_message_and_leaves_open_parts_open() {
        let mut log = TurnLog::new(64, 64);
        log.start_message(UiMessage::new("m".into(), Role::Assistant));
        log.push(&busy_turn());
        assert!(log.kept_bytes() <= 64, "{}", log.kept_bytes());
        let (replay, at) = log.join();
        assert_eq!(at, busy_turn().len());
        let empty = UiMessage::new(String::new(), Role::Assistant);
        let mut client = on_client(&empty, &replay);
        client.id = "m".into();
        assert_eq!(&client, log.builder().message());
        // The live tail goes on in the same parts.
        let tail = [
            text("b", " and done"),
            UiChunk::TextEnd { id: "b".into() },
            UiChunk::ToolInputDelta {
                tool_call_id: "c3".into(),
                input_text_delta: "\"x\"}".into(),
            },
        ];
        log.push(&tail);
        let continued = on_client(&empty, &[replay.as_slice(), &tail].concat());
        assert_eq!(
            &UiMessage {
                id: "m".into(),
                ..continued.clone()
            },
            log.builder().message()
        );
        assert!(
            matches!(&continued.parts.last(), Some(Part::Text { text, .. }) if text == "still going and done")
        );
        let inputs: Vec<_> = replay
            .iter()
            .filter_map(|c| match c {
                UiChunk::ToolInputDelta { input_text_delta, .. } => Some(input_text_delta.to_string()),
                _ => None,
            })
            .collect();
        assert_eq!(inputs, ["{\"query\":"], "the streamed input so far");
    }

    #[test]
    fn a_continued_message_replays_only_what_the_turn_changed() {
        let mut before = UiMessage::new("m".into(), Role::Assistant);
        let mut asked = ToolPart::new("c0".into(), "hub_call".into());
        asked.state = ToolState::ApprovalResponded;
        asked.input = Some(json!({}));
        asked.approval = Some(Box::new(ToolApproval::requested("apr_1".into(), None)));
        before.parts = vec![
            Part::StepStart,
            Part::Text {
                text: "asking".into(),
                state: None,
            },
            Part::Tool(asked),
        ];
        let mut log = TurnLog::new(1, 1);
        log.start_message(before.clone());
        log.push(&[
            UiChunk::Start {
                message_id: Some("m".into()),
                message_metadata: None,
            },
            UiChunk::ToolOutputAvailable {
                tool_call_id: "c0".into(),
                output: json!("ran"),
                preliminary: None,
            },
            UiChunk::StartStep,
            UiChunk::TextStart { id: "t".into() },
            text("t", "after"),
        ]);
        let (replay, _) = log.join();
        assert_eq!(&on_client(&before, &replay), log.builder().message());
        assert_eq!(
            replay.iter().filter(|c| matches!(c, UiChunk::StartStep)).count(),
            1,
            "the earlier step is not replayed: {replay:?}"
        );
    }

    #[test]
    fn within_the_budget_a_joiner_gets_the_chunks_as_sent() {
        let mut log = TurnLog::new(1 << 20, 1 << 20);
        log.push(&busy_turn());
        assert_eq!(log.join().0, busy_turn());
        assert_eq!(log.since(3).unwrap(), busy_turn()[3..]);
    }

    #[test]
    fn a_connected_reader_holds_chunks_back_up_to_the_lagging_limit() {
        let one = weight(&text("a", "more text"));
        // Room for 2 chunks once read, 20 for a reader.
        let mut log = TurnLog::new(2 * one, 20 * one);
        let reader = log.add_reader(0);
        for _ in 0..10 {
            log.push(&[text("a", "more text")]);
        }
        assert_eq!(log.kept_bytes(), 10 * one, "kept for the reader");
        assert_eq!(log.read(reader, 0).unwrap().len(), 10);
        log.push(&[text("a", "more text")]);
        assert_eq!(log.kept_bytes(), 2 * one, "read: trimmed to the budget");
        for _ in 0..100 {
            log.push(&[text("a", "more text")]);
        }
        assert_eq!(log.kept_bytes(), 20 * one, "the lagging limit");
        assert_eq!(log.read(reader, 11), Err(Lagged), "past the lagging limit");
        log.move_reader(reader, None);
        log.push(&[text("a", "x")]);
        assert!(log.kept_bytes() <= 2 * one);
    }

    #[test]
    fn a_reader_behind_the_kept_chunks_is_told() {
        let mut log = TurnLog::new(200, 200);
        log.push(&[text("a", "x")]);
        assert_eq!(log.since(0).unwrap().len(), 1);
        for _ in 0..100 {
            log.push(&[text("a", "more text")]);
        }
        assert_eq!(log.since(0), Err(Lagged));
        assert!(log.since(log.head()).unwrap().is_empty());
    }
}
