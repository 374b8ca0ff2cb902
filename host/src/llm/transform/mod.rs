//! The OpenAI chat-completion chunk -> AI SDK UI message stream transformer.
//!
//! A pure state machine (no I/O, no clock): the caller feeds it the `data` of each
//! upstream event and collects the UI chunks it produces. One transformer covers one
//! upstream call, i.e. one UI *step* (`start-step` .. `finish-step`). Whether the
//! message-level `start` and `finish` chunks are emitted is the caller's choice: the
//! proxy emits both around its single step; the agent loop emits `start` once, runs
//! one transformer per model call, and emits `finish` itself. [`StepSummary`] is
//! what a step leaves behind for the loop: text, reasoning, finalized tool calls,
//! usage, the finish reason.
//!
//! Provider deviations handled here, each shown by a recorded provider stream in
//! `tests/fixtures/openai-streams/` (read by `tests/recorded.rs`) or a case in
//! `tests/deviations.rs`: reasoning in `reasoning_content` (DeepSeek) or
//! `reasoning` (Groq); tool calls keyed by non-empty id first, then by index
//! (missing, always 0, starting at 1, `"id": ""` continuations); finish reasons
//! decided from what was seen (`stop` with tool calls, `tool_calls` without any);
//! usage on the finish chunk, in `x_groq` or in a trailing chunk; Azure's leading
//! empty chunk; duplicate finish chunks; no `[DONE]` after a finish reason.

use super::openai::{ChatChunk, Usage};
use super::terminal::{Read, Terminal};
use super::ui::{FinishReason, Text, UiChunk};
use crate::config::{ProviderConfig, StreamDeltas};
use calls::PendingCall;
use deltas::{Channel, Deltas};
use serde_json::{Map, Value, json};

mod arguments;
mod calls;
mod deltas;
#[cfg(test)]
mod tests;

pub(crate) use arguments::ArgumentsError;

/// What the caller decides about a step.
#[derive(Debug, Clone)]
pub struct StepOptions {
    /// Emit the message `start` chunk before the step (the proxy: yes; the loop: only
    /// for its first step, or never if it sends `start` itself).
    pub emit_start: bool,
    /// Emit the message `finish` chunk after the step, with usage and model in
    /// `messageMetadata`.
    pub emit_finish: bool,
    /// `start.messageId`; `None` omits it (the client then keeps its own id).
    pub message_id: Option<String>,
    /// Step number within the message; part ids include it so they never repeat.
    pub step: u32,
    /// Prefix for tool-call ids the hub must invent when a provider sends none;
    /// empty means a random one, made when first needed.
    pub tool_id_prefix: String,
    /// Extra keys merged into the `finish` chunk's `messageMetadata` (e.g. provider).
    pub finish_metadata: Map<String, Value>,
    /// Whether the provider's text deltas are new text or the whole text so far.
    pub deltas: StreamDeltas,
}

impl Default for StepOptions {
    fn default() -> Self {
        StepOptions {
            emit_start: true,
            emit_finish: true,
            message_id: None,
            step: 0,
            tool_id_prefix: String::new(),
            finish_metadata: Map::new(),
            deltas: StreamDeltas::Incremental,
        }
    }
}

/// A tool call as the model finally sent it.
#[derive(Debug, Clone, PartialEq)]
pub struct ModelToolCall {
    /// The call id the model gave (the tool result must carry it back).
    pub id: String,
    /// The function the model called (a meta-tool wire name, if it behaves).
    pub name: String,
    /// The parsed arguments, or why they cannot be used with the raw text (the
    /// loop reports that to the model instead of running the tool).
    pub arguments: Result<Value, ArgumentsError>,
}

/// What one step produced.
#[derive(Debug, Clone, PartialEq)]
pub struct StepSummary {
    /// Why the step ended, in the UI stream's terms.
    pub finish_reason: FinishReason,
    /// The provider's own `finish_reason`, verbatim, when it sent one.
    pub upstream_finish_reason: Option<String>,
    /// All text the model wrote in the step.
    pub text: String,
    /// All reasoning the model streamed in the step.
    pub reasoning: String,
    /// The tool calls, in the order they started.
    pub tool_calls: Vec<ModelToolCall>,
    /// Token counts, when the provider reported them.
    pub usage: Option<Usage>,
    /// The model the provider says answered, when it said.
    pub model: Option<String>,
    /// Set when the step ended with an error (upstream error frame, malformed chunk,
    /// transport failure); the `error` chunk carrying it was already emitted.
    pub error: Option<String>,
    /// The `provider/model` target that answered, when a chain of targets ran it
    /// (see `llm::route`).
    pub target: Option<String>,
    /// Upstream events skipped because the hub could not read them (not JSON
    /// chunks; `llm::terminal`).
    pub unknown_events: u64,
}

/// Which part is open: at most one text or reasoning part at a time.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Open {
    None,
    Text,
    Reasoning,
}

/// The transformer for one step. See the module docs.
pub struct StepTransformer {
    opts: StepOptions,
    begun: bool,
    finished_input: bool,
    open: Open,
    /// The open part's id; a `Text` so each delta chunk copies it without
    /// allocating.
    part_id: Text,
    /// Where `next_part_id` formats the next id (kept to reuse its buffer).
    part_id_buf: String,
    parts: u32,
    calls: Vec<PendingCall>,
    text: String,
    reasoning: String,
    /// The message's provider extensions so far (`extra_content`, arrays
    /// appended: Anthropic's thinking blocks come one per chunk).
    extra: Option<Value>,
    /// The open reasoning part's signature, given when its thinking block
    /// ended (Anthropic's), for its `reasoning-end`.
    reasoning_signature: Option<Value>,
    upstream_finish: Option<String>,
    usage: Option<Usage>,
    model: Option<String>,
    error: Option<String>,
    /// Whether the upstream stream reached its terminal event (`llm::terminal`).
    end: Terminal,
    deltas: Deltas,
}

impl StepTransformer {
    /// A transformer for one step, configured by `opts`.
    pub fn new(opts: StepOptions) -> StepTransformer {
        StepTransformer {
            deltas: Deltas::new(opts.deltas),
            opts,
            begun: false,
            finished_input: false,
            open: Open::None,
            part_id: Text::new(),
            part_id_buf: String::new(),
            parts: 0,
            calls: Vec::new(),
            text: String::new(),
            reasoning: String::new(),
            extra: None,
            reasoning_signature: None,
            upstream_finish: None,
            usage: None,
            model: None,
            error: None,
            end: Terminal::default(),
        }
    }

    /// Emits `start` (if asked) and `start-step`. Idempotent; every other method
    /// calls it, so calling it explicitly only matters to send them early.
    #[inline]
    pub fn begin(&mut self, out: &mut Vec<UiChunk>) {
        // Checked twice per upstream chunk: the check is inlined, the rest not.
        if !self.begun {
            self.start_step(out);
        }
    }

    #[cold]
    fn start_step(&mut self, out: &mut Vec<UiChunk>) {
        self.begun = true;
        if self.opts.emit_start {
            out.push(UiChunk::Start {
                message_id: self.opts.message_id.clone(),
                message_metadata: None,
            });
        }
        out.push(UiChunk::StartStep);
    }

    /// Whether the upstream stream is over for this step (`[DONE]`, an error frame or
    /// a malformed chunk): the caller should stop reading and call [`finish`].
    ///
    /// [`finish`]: StepTransformer::finish
    pub fn is_done(&self) -> bool {
        self.finished_input
    }

    /// Feeds the `data` of one upstream event: a JSON chunk, an error frame, or
    /// `[DONE]`. Events after the end are ignored.
    pub fn feed_data(&mut self, data: &str, out: &mut Vec<UiChunk>) {
        self.begin(out);
        if self.finished_input {
            return;
        }
        let mut chunk = ChatChunk::default();
        match self.end.read(data, &mut chunk) {
            Ok(Read::Done) => self.finished_input = true,
            Ok(Read::Chunk) => self.feed_chunk(&chunk, out),
            Ok(Read::Skipped) => {}
            Err(e) => self.fail(e.to_string(), out),
        }
    }

    /// Feeds one parsed chunk.
    pub fn feed_chunk(&mut self, chunk: &ChatChunk<'_>, out: &mut Vec<UiChunk>) {
        self.begin(out);
        if self.finished_input {
            return;
        }
        if let Some(message) = chunk.error_message() {
            self.fail(message, out);
            return;
        }
        if self.model.is_none()
            && let Some(model) = chunk.model.as_deref().filter(|m| !m.is_empty())
        {
            self.model = Some(model.to_string());
        }
        if let Some(usage) = chunk.usage() {
            self.usage = Some(usage);
        }
        // One message, one choice: `n > 1` cannot be shown as one UI message.
        let Some(choice) = &chunk.choice else {
            return;
        };
        if let Some(delta) = &choice.delta {
            let reasoning = delta.reasoning_content.as_deref().or(delta.reasoning.as_deref());
            if let Some(r) = reasoning {
                let r = self.deltas.fresh(Channel::Reasoning, r);
                self.push_part(Open::Reasoning, r, out);
            }
            if let Some(t) = delta.content.as_deref() {
                let t = self.deltas.fresh(Channel::Text, t);
                self.push_part(Open::Text, t, out);
            }
            // A refusal is what the model says instead of answering: show it as text.
            if let Some(t) = delta.refusal.as_deref() {
                let t = self.deltas.fresh(Channel::Text, t);
                self.push_part(Open::Text, t, out);
            }
            if let Some(calls) = &delta.tool_calls {
                for call in calls {
                    self.push_tool_delta(call, out);
                }
            }
            if let Some(extra) = &delta.extra_content {
                if self.open == Open::Reasoning {
                    self.reasoning_signature = signature_of(extra).or(self.reasoning_signature.take());
                }
                self.push_redacted(extra, out);
                absorb(
                    self.extra
                        .get_or_insert_with(|| Value::Object(Default::default())),
                    extra,
                );
            }
        }
        self.end.see(chunk);
        // Keep the first finish reason: some providers repeat the finish chunk.
        if self.upstream_finish.is_none()
            && let Some(reason) = choice.finish_reason.as_deref().filter(|r| !r.is_empty())
        {
            self.upstream_finish = Some(reason.to_string());
        }
    }

    /// Ends the step with an error (upstream error frame, transport failure, idle
    /// timeout, oversized event); the first error wins. Its one `error` chunk is
    /// emitted by [`finish`], first, so a caller with another target to try can
    /// [`abandon`] the attempt instead.
    ///
    /// [`finish`]: StepTransformer::finish
    /// [`abandon`]: StepTransformer::abandon
    pub fn fail(&mut self, message: impl Into<String>, out: &mut Vec<UiChunk>) {
        self.begin(out);
        self.finished_input = true;
        if self.error.is_none() {
            self.error = Some(message.into());
        }
    }

    /// Reads the next attempt as `provider` sends it (each target of a chain has
    /// its provider's `stream_deltas` and `max_malformed_chunks`).
    pub fn set_provider(&mut self, provider: &ProviderConfig) {
        self.opts.deltas = provider.stream_deltas;
        self.deltas = Deltas::new(provider.stream_deltas);
        self.end = Terminal::new(provider.max_malformed_chunks);
    }

    /// Sets a key of the `finish` chunk's `messageMetadata` (e.g. the target that
    /// answered, known only once the step ran).
    pub fn set_finish_metadata(&mut self, key: &str, value: Value) {
        self.opts.finish_metadata.insert(key.to_string(), value);
    }

    /// Why the current attempt failed, if it did (see [`fail`](StepTransformer::fail)).
    pub fn failure(&self) -> Option<&str> {
        self.error.as_deref()
    }

    /// Whether the current attempt has streamed any part (text, reasoning, a tool
    /// input) to the client.
    pub fn has_output(&self) -> bool {
        self.open != Open::None
            || !self.text.is_empty()
            || !self.reasoning.is_empty()
            || !self.calls.is_empty()
    }

    /// Gives up the current attempt so the same step can be tried again (the next
    /// target of a chain): closes the open part, ends every started tool input with
    /// `tool-input-error` (its call is never run), and forgets what the attempt
    /// produced. Part ids keep counting, so the next attempt's never repeat.
    pub fn abandon(&mut self, reason: &str, out: &mut Vec<UiChunk>) {
        self.begin(out);
        self.close_part(out);
        for call in std::mem::take(&mut self.calls) {
            call.discard(reason, out);
        }
        self.finished_input = false;
        self.text.clear();
        self.reasoning.clear();
        self.extra = None;
        self.upstream_finish = None;
        self.usage = None;
        self.model = None;
        self.error = None;
        self.end.restart();
        self.deltas.reset();
    }

    /// Closes the step: ends open parts, finalizes tool calls, emits `finish-step`
    /// and (if asked) `finish`. A stream that stopped before its terminal event
    /// (`llm::terminal`: no `[DONE]` and no finish reason) was cut off and ends the
    /// step with an error.
    pub fn finish(mut self, out: &mut Vec<UiChunk>) -> StepSummary {
        self.begin(out);
        if self.error.is_none()
            && let Err(cut) = self.end.at_end()
        {
            self.fail(cut.to_string(), out);
        }
        if let Some(message) = &self.error {
            out.push(UiChunk::Error {
                error_text: message.clone(),
            });
        }
        self.close_part(out);
        let failed = self.error.is_some();
        let mut tool_calls = Vec::with_capacity(self.calls.len());
        // The step's extensions ride on its first call: the providers that want
        // them back (Anthropic's thinking) want them only with tool calls.
        let mut extra = self.extra.take();
        for call in std::mem::take(&mut self.calls) {
            tool_calls.push(self.finalize_call(call, extra.take(), failed, out));
        }
        let finish_reason = self.finish_reason(&tool_calls);
        out.push(UiChunk::FinishStep);
        if self.opts.emit_finish {
            let mut meta = std::mem::take(&mut self.opts.finish_metadata);
            if let Some(model) = &self.model {
                meta.insert("model".into(), Value::String(model.clone()));
            }
            if let Some(usage) = &self.usage {
                meta.insert(
                    "usage".into(),
                    serde_json::to_value(usage).expect("usage serializes"),
                );
            }
            let message_metadata = if meta.is_empty() {
                None
            } else {
                Some(Value::Object(meta))
            };
            out.push(UiChunk::Finish {
                finish_reason: Some(finish_reason),
                message_metadata,
            });
        }
        StepSummary {
            finish_reason,
            upstream_finish_reason: self.upstream_finish,
            text: self.text,
            reasoning: self.reasoning,
            tool_calls,
            usage: self.usage,
            model: self.model,
            error: self.error,
            target: None,
            unknown_events: self.end.skipped(),
        }
    }

    fn finish_reason(&self, calls: &[ModelToolCall]) -> FinishReason {
        if self.error.is_some() {
            return FinishReason::Error;
        }
        let upstream = match self.upstream_finish.as_deref() {
            Some(r) => FinishReason::from_openai(r),
            None => FinishReason::Other,
        };
        match (calls.is_empty(), upstream) {
            // Several providers say `stop` after sending tool calls; what was sent wins.
            (false, FinishReason::Stop | FinishReason::Other) => FinishReason::ToolCalls,
            // `tool_calls` with no call seen: nothing to run, so the model stopped.
            (true, FinishReason::ToolCalls) => FinishReason::Stop,
            (_, reason) => reason,
        }
    }

    fn next_part_id(&mut self, kind: &str) {
        self.part_id_buf.clear();
        use std::fmt::Write;
        let _ = write!(self.part_id_buf, "{kind}-{}-{}", self.opts.step, self.parts);
        self.part_id = Text::from(self.part_id_buf.as_str());
        self.parts += 1;
    }

    fn push_part(&mut self, kind: Open, delta: &str, out: &mut Vec<UiChunk>) {
        if delta.is_empty() {
            return;
        }
        if self.open != kind {
            self.close_part(out);
            match kind {
                Open::Text => {
                    self.next_part_id("text");
                    out.push(UiChunk::TextStart {
                        id: self.part_id.clone(),
                    });
                }
                Open::Reasoning => {
                    self.next_part_id("reasoning");
                    out.push(UiChunk::ReasoningStart {
                        id: self.part_id.clone(),
                        provider_metadata: None,
                    });
                }
                Open::None => unreachable!("push_part is called for text or reasoning"),
            }
            self.open = kind;
        }
        let (id, delta_owned) = (self.part_id.clone(), Text::from(delta));
        if kind == Open::Text {
            self.text.push_str(delta);
            out.push(UiChunk::TextDelta {
                id,
                delta: delta_owned,
            });
        } else {
            self.reasoning.push_str(delta);
            out.push(UiChunk::ReasoningDelta {
                id,
                delta: delta_owned,
            });
        }
    }

    /// Each `redacted_thinking` block in `extra` (Anthropic's withheld
    /// reasoning, which comes whole) as a reasoning part with no text and its
    /// data as `providerMetadata.anthropic.redactedData`, as the AI SDK's own
    /// Anthropic provider shows it: `/v1/messages` clients get the block back.
    fn push_redacted(&mut self, extra: &Value, out: &mut Vec<UiChunk>) {
        let Some(blocks) = extra
            .pointer("/anthropic/thinking_blocks")
            .and_then(Value::as_array)
        else {
            return;
        };
        for block in blocks.iter().filter(|b| b["type"] == "redacted_thinking") {
            let Some(data) = block.get("data").filter(|d| d.is_string()) else {
                continue;
            };
            self.close_part(out);
            self.next_part_id("reasoning");
            let id = self.part_id.clone();
            out.push(UiChunk::ReasoningStart {
                id: id.clone(),
                provider_metadata: Some(json!({ "anthropic": { "redactedData": data } })),
            });
            out.push(UiChunk::ReasoningEnd {
                id,
                provider_metadata: None,
            });
        }
    }

    fn close_part(&mut self, out: &mut Vec<UiChunk>) {
        let id = self.part_id.clone();
        match std::mem::replace(&mut self.open, Open::None) {
            Open::None => {}
            Open::Text => out.push(UiChunk::TextEnd { id }),
            Open::Reasoning => out.push(UiChunk::ReasoningEnd {
                id,
                provider_metadata: self
                    .reasoning_signature
                    .take()
                    .map(|signature| json!({ "anthropic": { "signature": signature } })),
            }),
        }
    }
}

/// The signature of the last signed thinking block in an `extra_content`
/// (`anthropic.thinking_blocks`), which the adapter gives as the block ends
/// (a `redacted_thinking` block has none and is a part of its own).
fn signature_of(extra: &Value) -> Option<Value> {
    let blocks = extra.pointer("/anthropic/thinking_blocks")?.as_array()?;
    let thinking = blocks.iter().rev().find(|b| b["type"] == "thinking")?;
    let signature = thinking.get("signature")?;
    signature
        .as_str()
        .is_some_and(|s| !s.is_empty())
        .then(|| signature.clone())
}

/// Adds `from` to `into`: objects merged key by key, arrays appended, any
/// other value replaced.
fn absorb(into: &mut Value, from: &Value) {
    match (into, from) {
        (Value::Object(into), Value::Object(from)) => {
            for (k, v) in from {
                match into.get_mut(k) {
                    Some(old) => absorb(old, v),
                    None => {
                        into.insert(k.clone(), v.clone());
                    }
                }
            }
        }
        (Value::Array(into), Value::Array(from)) => into.extend(from.iter().cloned()),
        (into, from) => *into = from.clone(),
    }
}
