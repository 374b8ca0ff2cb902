//! One accounting record (`AccountingRecord`): a model step, a tool call or a
//! context guard activation, as stored, served by `GET /api/accounting` and
//! appended to the JSONL file (the same fields every version wrote, so old
//! records keep decoding); and a session's sums (`SessionUsage`, the session
//! JSON's `usage`).

use crate::llm::Usage;
use serde::{Deserialize, Serialize};
use std::time::Duration;

/// One accounted event.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct AccountingRecord {
    /// Increasing sequence number, given when the record is stored (`since=` takes it).
    pub id: u64,
    /// When the step or call ended, Unix milliseconds.
    pub time_ms: u64,
    /// The chat session it belongs to (agent turns and their tool calls).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub session: Option<String>,
    /// The token it ran under.
    pub caller: String,
    /// The OAuth client of a grant's tool call (`None` otherwise).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub client: Option<String>,
    /// The named agent whose turn the step or call belongs to.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub agent: Option<String>,
    /// What was accounted.
    #[serde(flatten)]
    pub entry: Entry,
}

/// A model step, a tool call or a context guard activation, tagged `"kind"`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum Entry {
    /// One call of a model.
    ModelStep(ModelStep),
    /// One operation call through the call protocol.
    ToolCall(ToolCall),
    /// The agent loop's context guard acted on a tool result.
    ContextGuard(ContextGuard),
}

/// One model call: who answered, the tokens the provider reported, time and cost.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ModelStep {
    /// The assistant message the step wrote (agent turns).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub message: Option<String>,
    /// The step's index in its assistant message, from 0.
    pub step: u32,
    /// The configured provider's name.
    pub provider: String,
    /// The model as sent to the provider.
    pub model: String,
    /// Prompt tokens; `None` when the provider reported no usage.
    pub input_tokens: Option<u64>,
    /// Completion tokens (reasoning included).
    pub output_tokens: Option<u64>,
    /// The part of the input served from the provider's cache, when it said.
    pub cached_input_tokens: Option<u64>,
    /// The part of the output spent on reasoning, when it said.
    pub reasoning_tokens: Option<u64>,
    /// From sending the request to the end of the answer, in milliseconds.
    pub latency_ms: u64,
    /// From `[accounting.prices]`; `None` without a price for the model or usage.
    pub cost: Option<f64>,
    /// What counted `input_tokens` and `output_tokens` when the provider reported no
    /// usage: the target's tokenizer spec (`tiktoken:o200k_base`) or `estimate` (4
    /// bytes per token). Absent when the provider's usage is what the record says.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tokenizer: Option<String>,
}

impl ModelStep {
    /// A step `provider`'s `model` answered in `latency`, with the usage it
    /// reported: step 0 of no message, not priced yet (`Accounting::account`).
    pub fn measured(provider: &str, model: &str, usage: Option<Usage>, latency: Duration) -> ModelStep {
        ModelStep {
            message: None,
            step: 0,
            provider: provider.to_string(),
            model: model.to_string(),
            input_tokens: usage.map(|u| u.input_tokens),
            output_tokens: usage.map(|u| u.output_tokens),
            cached_input_tokens: usage.and_then(|u| u.cached_input_tokens),
            reasoning_tokens: usage.and_then(|u| u.reasoning_tokens),
            latency_ms: latency.as_millis() as u64,
            cost: None,
            tokenizer: None,
        }
    }
}

/// One operation call (nested ones included).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ToolCall {
    /// The call's id in the call graph (the audit record's `id`).
    pub call_id: String,
    /// The id of the call that made this one, for nested calls.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub parent: Option<String>,
    /// The operation, `plugin.operation`.
    pub tool: String,
    /// From the call's start to its end, in microseconds.
    pub latency_us: u64,
    /// Bytes of the JSON input the plugin got.
    pub input_bytes: u64,
    /// Bytes of the JSON output it returned.
    pub output_bytes: u64,
    /// `ok`, or the error code.
    pub outcome: String,
}

/// One activation of the agent loop's context guard: the target whose context it
/// was, what made it act, what it did, and the tokens it measured. The agent's
/// guard (`agent::context_guard`) makes it, logs it, counts it in `/metrics` and
/// accounts it with its message and step.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ContextGuard {
    /// The assistant message the guarded result belongs to.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub message: Option<String>,
    /// The index of the step whose tool call returned the result (as in that
    /// step's model step record).
    pub step: u32,
    /// The configured provider's name.
    pub provider: String,
    /// The model as sent to the provider.
    pub model: String,
    /// What made the guard act.
    pub trigger: GuardTrigger,
    /// What it did.
    pub outcome: GuardOutcome,
    /// Tokens the conversation would have taken with the result.
    pub projected_tokens: u64,
    /// Tokens the conversation may take (context window - max output - buffer).
    pub limit_tokens: u64,
    /// Tokens that were left before the result.
    pub remaining_tokens: u64,
    /// What counted the tokens: the target's tokenizer (`tiktoken:o200k_base`,
    /// `file:PATH`) or `estimate` (4 bytes per token; also records older than this
    /// field).
    #[serde(default = "estimate")]
    pub tokenizer: String,
}

fn estimate() -> String {
    "estimate".to_string()
}

/// What made the context guard act.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum GuardTrigger {
    /// A tool result would have overflowed the context.
    ToolResult,
}

/// What the context guard did.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum GuardOutcome {
    /// The result was replaced by an error telling the model to ask for less.
    Replaced,
}

impl GuardTrigger {
    /// The stored value and the metrics label.
    pub fn as_str(self) -> &'static str {
        match self {
            GuardTrigger::ToolResult => "tool_result",
        }
    }
}

impl GuardOutcome {
    /// The stored value and the metrics label.
    pub fn as_str(self) -> &'static str {
        match self {
            GuardOutcome::Replaced => "replaced",
        }
    }
}

/// The hub log's line.
impl std::fmt::Display for ContextGuard {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "context guard: {} ({}) for {}/{}: {} tokens projected, limit {}, {} remaining",
            self.trigger.as_str(),
            self.outcome.as_str(),
            self.provider,
            self.model,
            self.projected_tokens,
            self.limit_tokens,
            self.remaining_tokens
        )
    }
}

/// What a session used, summed over its records (`usage` in the session JSON).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct SessionUsage {
    /// Prompt tokens of every step.
    pub input_tokens: u64,
    /// Completion tokens of every step.
    pub output_tokens: u64,
    /// Cached prompt tokens of the steps whose provider said.
    pub cached_input_tokens: u64,
    /// Reasoning tokens of the steps whose provider said.
    pub reasoning_tokens: u64,
    /// Model steps.
    pub model_steps: u64,
    /// Operation calls (nested ones included).
    pub tool_calls: u64,
    /// Summed cost of the steps that had a price; `None` when none had.
    pub cost: Option<f64>,
}

impl SessionUsage {
    /// Adds one record.
    pub(super) fn add(&mut self, entry: &Entry) {
        match entry {
            Entry::ModelStep(s) => {
                self.model_steps += 1;
                self.input_tokens += s.input_tokens.unwrap_or(0);
                self.output_tokens += s.output_tokens.unwrap_or(0);
                self.cached_input_tokens += s.cached_input_tokens.unwrap_or(0);
                self.reasoning_tokens += s.reasoning_tokens.unwrap_or(0);
                if let Some(cost) = s.cost {
                    self.cost = Some(self.cost.unwrap_or(0.0) + cost);
                }
            }
            Entry::ToolCall(_) => self.tool_calls += 1,
            // Not usage: the records themselves say how often and where.
            Entry::ContextGuard(_) => {}
        }
    }
}
