//! `[[providers]]`: one upstream model provider's entry, its defaults, and the
//! provider defaults derived from the rest of the configuration or the
//! environment (`OPENAI_API_KEY`, OpenRouter's `HTTP-Referer`).

use super::{Config, ModelSettings, Spec, StreamDeltas, ToolChoice};
use serde::Deserialize;

/// One upstream model provider.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ProviderConfig {
    /// Name used in `provider/model` addressing.
    pub name: String,
    /// The API the provider speaks (see [`ProviderKind`]): `openai` (the
    /// default), `ollama`, `anthropic`, `openrouter` or `gemini`.
    #[serde(default = "defaults::kind")]
    pub kind: String,
    /// Base URL including the version path, e.g. `https://api.openai.com/v1`.
    pub base_url: String,
    /// Whether the hub asks this provider for streamed answers; `false` sends
    /// every call unstreamed (a client that asked for a stream still gets one).
    #[serde(default = "defaults::stream")]
    pub stream: bool,
    /// Time allowed for an unstreamed upstream answer, head and body.
    #[serde(default = "defaults::request_timeout_ms")]
    pub request_timeout_ms: u64,
    /// `think` sent to an `ollama` provider (else none is sent); for `gemini`,
    /// `thinkingConfig.includeThoughts`; for `anthropic`, extended thinking
    /// (`llm::adapter::anthropic`).
    #[serde(default)]
    pub think: Option<bool>,
    /// `options` sent to an `ollama` provider (`num_ctx`, `temperature`, ...);
    /// for `gemini`, the `generationConfig` (`topK`, `thinkingConfig`, ...); for
    /// `anthropic`, fields of the Messages request (`top_k`, `thinking`, ...).
    #[serde(default)]
    pub options: serde_json::Map<String, serde_json::Value>,
    /// Environment variable holding the API key (none for local servers).
    #[serde(default)]
    pub api_key_env: Option<String>,
    /// Glob patterns (`gpt-*`) of model names this provider serves.
    #[serde(default)]
    pub models: Vec<String>,
    /// Extra headers sent on every upstream request.
    #[serde(default)]
    pub headers: std::collections::BTreeMap<String, String>,
    /// Time allowed to open the connection to the upstream.
    #[serde(default = "defaults::connect_timeout_ms")]
    pub connect_timeout_ms: u64,
    /// Time allowed until the first response byte.
    #[serde(default = "defaults::first_byte_timeout_ms")]
    pub first_byte_timeout_ms: u64,
    /// Longest silence allowed inside a streaming response.
    #[serde(default = "defaults::idle_timeout_ms")]
    pub idle_timeout_ms: u64,
    /// Retries on 429/5xx/connect errors before any byte was streamed.
    #[serde(default = "defaults::max_retries")]
    pub max_retries: u32,
    /// First retry delay; doubled per attempt, with jitter (`Retry-After` wins).
    #[serde(default = "defaults::retry_base_ms")]
    pub retry_base_ms: u64,
    /// Interval of `: keepalive` comments on streams to clients while this
    /// provider is silent.
    #[serde(default = "defaults::keepalive_ms")]
    pub keepalive_ms: u64,
    /// Largest single upstream SSE event accepted, in KiB.
    #[serde(default = "defaults::max_event_kb")]
    pub max_event_kb: u64,
    /// Stream chunks in a row that are not valid JSON skipped (logged, counted)
    /// before the stream ends with an error.
    #[serde(default = "defaults::max_malformed_chunks")]
    pub max_malformed_chunks: u32,
    /// Whether stream deltas carry new text or the whole text so far.
    #[serde(default)]
    pub stream_deltas: StreamDeltas,
    /// Context window of this provider's models, in tokens (else `[agent] context_window`).
    #[serde(default)]
    pub context_window: Option<u64>,
    /// Tokens kept free for a model's answer (else an eighth of the window, at least 1024).
    #[serde(default)]
    pub max_output_tokens: Option<u64>,
    /// Tokens kept free besides the answer (else 0).
    #[serde(default)]
    pub context_buffer: Option<u64>,
    /// The tokenizer of this provider's models (else the 4-bytes estimate).
    #[serde(default)]
    pub tokenizer: Option<Spec>,
    /// `tool_choice` the agent loop sends with its tools (else none is sent).
    #[serde(default)]
    pub tool_choice: Option<ToolChoice>,
    /// `parallel_tool_calls` the agent loop sends with its tools (else none is sent).
    #[serde(default)]
    pub parallel_tool_calls: Option<bool>,
    /// Whether the provider takes `response_format: {type: "json_schema"}`: an
    /// agent asked for JSON output sends its schema that way (else it is told
    /// the schema in a message).
    #[serde(default)]
    pub json_schema: bool,
    /// Settings of some of this provider's models, over the provider's own.
    #[serde(default)]
    pub model_settings: Vec<ModelSettings>,
}

/// Malformed upstream chunks in a row a provider may send before its stream is an
/// error (`providers[].max_malformed_chunks`): one bad line is a provider's glitch,
/// a run of them is a broken stream.
pub const DEFAULT_MAX_MALFORMED_CHUNKS: u32 = 3;

mod defaults {
    pub(super) fn kind() -> String {
        "openai".into()
    }
    pub(super) fn stream() -> bool {
        true
    }
    pub(super) fn request_timeout_ms() -> u64 {
        600_000
    }
    pub(super) fn connect_timeout_ms() -> u64 {
        10_000
    }
    pub(super) fn first_byte_timeout_ms() -> u64 {
        120_000
    }
    pub(super) fn idle_timeout_ms() -> u64 {
        120_000
    }
    pub(super) fn max_retries() -> u32 {
        3
    }
    pub(super) fn retry_base_ms() -> u64 {
        500
    }
    pub(super) fn keepalive_ms() -> u64 {
        15_000
    }
    pub(super) fn max_event_kb() -> u64 {
        16 * 1024
    }
    pub(super) fn max_malformed_chunks() -> u32 {
        super::DEFAULT_MAX_MALFORMED_CHUNKS
    }
}

impl Config {
    /// With no providers configured, `OPENAI_API_KEY` (and `OPENAI_BASE_URL`) define
    /// one provider named `openai`, as the OpenAI SDKs do.
    pub fn apply_openai_env_default(&mut self) {
        if !self.providers.is_empty() || std::env::var_os("OPENAI_API_KEY").is_none() {
            return;
        }
        let base_url =
            std::env::var("OPENAI_BASE_URL").unwrap_or_else(|_| "https://api.openai.com/v1".into());
        self.providers.push(ProviderConfig {
            name: "openai".into(),
            kind: defaults::kind(),
            base_url,
            stream: defaults::stream(),
            request_timeout_ms: defaults::request_timeout_ms(),
            think: None,
            options: Default::default(),
            api_key_env: Some("OPENAI_API_KEY".into()),
            models: vec!["*".into()],
            headers: Default::default(),
            connect_timeout_ms: defaults::connect_timeout_ms(),
            first_byte_timeout_ms: defaults::first_byte_timeout_ms(),
            idle_timeout_ms: defaults::idle_timeout_ms(),
            max_retries: defaults::max_retries(),
            retry_base_ms: defaults::retry_base_ms(),
            keepalive_ms: defaults::keepalive_ms(),
            max_event_kb: defaults::max_event_kb(),
            max_malformed_chunks: defaults::max_malformed_chunks(),
            stream_deltas: StreamDeltas::default(),
            context_window: None,
            max_output_tokens: None,
            context_buffer: None,
            tokenizer: None,
            tool_choice: None,
            parallel_tool_calls: None,
            json_schema: false,
            model_settings: Vec::new(),
        });
    }

    /// An `openrouter` provider names the hub as its app with `HTTP-Referer`: the
    /// operator's own header, else `[oauth] public_url` (the hub's URL) when set.
    pub fn apply_openrouter_referer(&mut self) {
        if !self.oauth.enabled() {
            return;
        }
        let url = self.oauth.base().to_string();
        for p in self.providers.iter_mut().filter(|p| p.kind == "openrouter") {
            if !p.headers.keys().any(|k| k.eq_ignore_ascii_case("http-referer")) {
                p.headers.insert("HTTP-Referer".into(), url.clone());
            }
        }
    }
}
