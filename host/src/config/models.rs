//! What the hub knows about models beyond routing: `[[models]]` (a name clients
//! use, resolved to an ordered list of `provider/model` targets tried in turn), and
//! the per-provider and per-model settings of `[[providers]]` (context budget, tool
//! choice, how stream deltas carry text). The behaviour lives in `llm::route` and
//! `agent::context_guard`; this is the shape of the file.

use serde::Deserialize;

/// `[[models]]`: a model name and the targets that serve it, in order. A request
/// for `name` goes to the first target; a failure moves on to the next.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ModelConfig {
    /// The name clients send as `model` (`smart`).
    pub name: String,
    /// `provider/model` targets (or names a provider's patterns match), tried in order.
    pub targets: Vec<String>,
}

/// The API a provider speaks (`kind`): the hub's requests and answers are
/// OpenAI chat completions; `llm::adapter` maps them to and from the others.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ProviderKind {
    /// OpenAI chat completions (also any OpenAI-compatible server).
    OpenAi,
    /// Ollama's native `/api/chat`.
    Ollama,
    /// Anthropic's Messages API (`/v1/messages`).
    Anthropic,
    /// OpenRouter: Chat Completions with its attribution headers.
    OpenRouter,
    /// Google's Gemini API (`models/{model}:generateContent`).
    Gemini,
}

/// A `kind` that names no provider kind this hub speaks (holds the value).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct UnknownKind(pub String);

impl std::fmt::Display for UnknownKind {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "{:?} is not a provider kind this hub speaks; use one of: {}",
            self.0,
            ProviderKind::ALL.map(ProviderKind::as_str).join(", ")
        )
    }
}

impl std::error::Error for UnknownKind {}

impl ProviderKind {
    /// Every kind, as `kind` spells it.
    pub const ALL: [ProviderKind; 5] = [
        ProviderKind::OpenAi,
        ProviderKind::Ollama,
        ProviderKind::Anthropic,
        ProviderKind::OpenRouter,
        ProviderKind::Gemini,
    ];

    /// Reads a `kind` value.
    pub fn parse(text: &str) -> Result<ProviderKind, UnknownKind> {
        ProviderKind::ALL
            .into_iter()
            .find(|k| k.as_str() == text)
            .ok_or_else(|| UnknownKind(text.to_string()))
    }

    /// The value as `kind` spells it.
    pub fn as_str(self) -> &'static str {
        match self {
            ProviderKind::OpenAi => "openai",
            ProviderKind::Ollama => "ollama",
            ProviderKind::Anthropic => "anthropic",
            ProviderKind::OpenRouter => "openrouter",
            ProviderKind::Gemini => "gemini",
        }
    }
}

/// How a provider's streamed deltas carry text (`stream_deltas`).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum StreamDeltas {
    /// Each delta is new text (OpenAI's protocol).
    #[default]
    Incremental,
    /// Each delta is the whole text so far (some local servers).
    Cumulative,
    /// Decided per stream from the first deltas (see `llm::transform::deltas`).
    Auto,
}

/// `tool_choice` the agent loop sends when it offers tools.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum ToolChoice {
    /// The model decides whether to call a tool.
    Auto,
    /// The model must call a tool (the loop's last step still sends no tools).
    Required,
}

impl ToolChoice {
    /// The value as OpenAI's API spells it.
    pub fn as_str(self) -> &'static str {
        match self {
            ToolChoice::Auto => "auto",
            ToolChoice::Required => "required",
        }
    }
}

/// `[[providers.model_settings]]`: settings for the provider's models whose name
/// (as sent upstream) matches the glob `model`; the first match wins, and each key
/// left out falls back to the provider's key of the same name.
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ModelSettings {
    /// Glob on the upstream model name (`gpt-4o*`, `qwen2.5-7b`).
    pub model: String,
    /// The model's context window, in tokens.
    #[serde(default)]
    pub context_window: Option<u64>,
    /// Tokens kept free for the model's answer.
    #[serde(default)]
    pub max_output_tokens: Option<u64>,
    /// Tokens kept free besides the answer, for the estimate's error.
    #[serde(default)]
    pub context_buffer: Option<u64>,
    /// The tokenizer the context guard counts these models' text with.
    #[serde(default)]
    pub tokenizer: Option<super::Spec>,
    /// `tool_choice` the agent loop sends with its tools.
    #[serde(default)]
    pub tool_choice: Option<ToolChoice>,
    /// `parallel_tool_calls` the agent loop sends with its tools.
    #[serde(default)]
    pub parallel_tool_calls: Option<bool>,
    /// `think` sent to an `ollama` provider for these models (for `gemini`:
    /// `thinkingConfig.includeThoughts`; for `anthropic`: extended thinking).
    #[serde(default)]
    pub think: Option<bool>,
    /// `options` sent to an `ollama` provider (`generationConfig` to a
    /// `gemini` one, fields of the request to an `anthropic` one) for these
    /// models, over the provider's `options` key by key.
    #[serde(default)]
    pub options: serde_json::Map<String, serde_json::Value>,
}

/// The first problem of `[[models]]` against the provider names, said for the operator.
pub(super) fn mismatch(models: &[ModelConfig]) -> Option<String> {
    let mut names = std::collections::HashSet::new();
    for m in models {
        if m.name.is_empty() {
            return Some("models: a name must not be empty".into());
        }
        if !names.insert(&m.name) {
            return Some(format!("models: name {:?} is used twice", m.name));
        }
        if m.targets.is_empty() {
            return Some(format!(
                "models.{}: targets must name at least one \"provider/model\"",
                m.name
            ));
        }
    }
    None
}
