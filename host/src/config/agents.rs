//! Agent profiles: `[[agents]]` in the file, and the same keys in the front matter
//! of each `agents_dir/NAME.md` (read by `agent::profiles`); the operator's
//! limits on sampling parameters (`[agent] temperature_limit`,
//! `max_output_tokens_limit`). This is the shape of the file and the checks one
//! profile needs on its own; `agent::profiles` builds the set. `[agent]` is the
//! default profile (named [`DEFAULT_AGENT`]) besides the loop's own settings.

use super::TokenApprovals;
use serde::Deserialize;

/// The hub's agent loop.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct AgentConfig {
    /// Model used when a chat request names none (`provider/model` or a pattern match).
    pub model: Option<String>,
    /// Most model steps in one turn.
    pub max_steps: u32,
    /// System prompt put before every conversation.
    pub system_prompt: Option<String>,
    /// Context window in tokens of models whose provider sets none, for the context
    /// guard.
    pub context_window: u64,
    /// How long a turn goes on once its last client left (a reload, a network
    /// blip) before it is stopped; a client that comes back in that time follows
    /// it. 0: stopped when the last client leaves.
    pub detached_turn_secs: u64,
    /// The most KiB of stream chunks a live turn keeps so a reconnecting client
    /// gets them as they were sent; a longer turn resumes from its message state
    /// plus the live chunks (so a turn is never buffered whole).
    pub resume_buffer_kb: usize,
    /// The most KiB of a turn's stream a connected client may be behind (reading
    /// slowly) before its stream ends with an error saying so; it may reconnect,
    /// which resumes it. At least `resume_buffer_kb`.
    pub lagging_watcher_kb: usize,
    /// Requests that may wait, per session, for the turn running in it to end
    /// (FIFO); past it, 409. 0: a request while a turn runs is refused at once.
    pub queued_turns: usize,
    /// Sampling temperature of the default profile (none sent when unset).
    pub temperature: Option<f64>,
    /// `top_p` of the default profile (none sent when unset).
    pub top_p: Option<f64>,
    /// Most tokens of one model answer of the default profile (`max_tokens`
    /// upstream; none sent when unset).
    pub max_output_tokens: Option<u64>,
    /// Highest temperature a profile or a request may ask for.
    pub temperature_limit: f64,
    /// Highest `max_output_tokens` a profile or a request may ask for.
    pub max_output_tokens_limit: u64,
}

/// The name of the `[agent]` section's profile, the one used when a request
/// names no agent.
pub const DEFAULT_AGENT: &str = "default";

impl AgentConfig {
    /// The operator's bounds on sampling parameters.
    pub fn sampling_limits(&self) -> SamplingLimits {
        SamplingLimits {
            temperature: self.temperature_limit,
            max_output_tokens: self.max_output_tokens_limit,
        }
    }
}

impl Default for AgentConfig {
    fn default() -> Self {
        AgentConfig {
            model: None,
            max_steps: 10,
            system_prompt: None,
            context_window: 131_072,
            // Long enough for a reload, a flaky network or a laptop lid, short enough
            // that an abandoned turn does not spend model tokens for long.
            detached_turn_secs: 120,
            // A typical answer is replayed exactly; a 1 MB tail covers minutes of
            // tokens for a client that reads slowly before it is told it fell behind.
            resume_buffer_kb: 1024,
            // A client rendering a long answer (the AI SDK rebuilds the message
            // per chunk) falls behind a fast model by megabytes before it catches up.
            lagging_watcher_kb: 16384,
            queued_turns: 4,
            temperature: None,
            top_p: None,
            max_output_tokens: None,
            // The range OpenAI's API accepts.
            temperature_limit: 2.0,
            max_output_tokens_limit: 131_072,
        }
    }
}

impl AgentConfig {
    /// The first problem of the `[agent]` keys and the `[[agents]]` list.
    pub(super) fn mismatch(&self, agents: &[AgentProfileConfig]) -> Option<String> {
        if self.max_steps == 0 {
            return Some("agent.max_steps must be greater than 0".into());
        }
        if self.detached_turn_secs > 86_400 {
            return Some(format!(
                "agent.detached_turn_secs must be at most 86400 (a day); it is {}",
                self.detached_turn_secs
            ));
        }
        if !(1..=1_048_576).contains(&self.resume_buffer_kb) {
            return Some(format!(
                "agent.resume_buffer_kb must be between 1 and 1048576 (1 GiB); it is {}",
                self.resume_buffer_kb
            ));
        }
        if self.lagging_watcher_kb < self.resume_buffer_kb || self.lagging_watcher_kb > 1_048_576 {
            return Some(format!(
                "agent.lagging_watcher_kb must be between agent.resume_buffer_kb ({}) and 1048576 (1 GiB); it is {}",
                self.resume_buffer_kb, self.lagging_watcher_kb
            ));
        }
        if self.queued_turns > 1000 {
            return Some(format!(
                "agent.queued_turns must be at most 1000; it is {}",
                self.queued_turns
            ));
        }
        if !(self.temperature_limit.is_finite() && self.temperature_limit >= 0.0)
            || self.max_output_tokens_limit == 0
        {
            return Some(
                "agent.temperature_limit must be a number of at least 0 and agent.max_output_tokens_limit greater than 0"
                    .into(),
            );
        }
        let limits = self.sampling_limits();
        if let Some((field, why)) =
            sampling_problem(self.temperature, self.top_p, self.max_output_tokens, &limits)
        {
            return Some(format!("agent.{field}: {why}"));
        }
        mismatch(agents, &limits)
    }
}

/// One agent profile (`[[agents]]`, or a Markdown file's front matter).
#[derive(Debug, Clone, Default, Deserialize, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct AgentProfileConfig {
    /// The name clients use: `model` on the chat surfaces, `/v1/agents/{name}`,
    /// the `agent` key of `/api/chat`. `[a-z][a-z0-9_-]*`, at most 64 characters.
    #[serde(default)]
    pub name: String,
    /// What the agent is for (listed by `/v1/models` and the console).
    #[serde(default)]
    pub description: String,
    /// A model name, or a list of them tried in order (else `[agent] model`).
    #[serde(default)]
    pub model: Option<ModelChoice>,
    /// Operation patterns the agent may call, within its caller's allowlist (else
    /// every operation the caller may call).
    #[serde(default)]
    pub allow: Option<Vec<String>>,
    /// Most model steps in one turn (else `[agent] max_steps`).
    #[serde(default)]
    pub max_steps: Option<u32>,
    /// Sampling temperature sent to the provider.
    #[serde(default)]
    pub temperature: Option<f64>,
    /// Nucleus sampling mass sent to the provider.
    #[serde(default)]
    pub top_p: Option<f64>,
    /// Most tokens of one model answer (`max_tokens` upstream).
    #[serde(default)]
    pub max_output_tokens: Option<u64>,
    /// Its own approval policy, in the tokens' vocabulary (`destructive`,
    /// `open_world`, `writes`, `rules`): it only tightens its caller's (the token's
    /// and `[approvals]`), and a sub-agent's adds to its caller's.
    #[serde(default)]
    pub approvals: Option<TokenApprovals>,
    /// The system prompt (a Markdown profile's body instead).
    #[serde(default)]
    pub system_prompt: Option<String>,
    /// The JSON Schema a JSON answer (`format: "json"`) must satisfy when the
    /// request brings none.
    #[serde(default)]
    pub output_schema: Option<serde_json::Value>,
}

/// `model`: one name, or a fallback chain.
#[derive(Debug, Clone, Deserialize, PartialEq)]
#[serde(untagged)]
pub enum ModelChoice {
    /// One model name (itself possibly a `[[models]]` chain).
    One(String),
    /// Names tried in order.
    Chain(Vec<String>),
}

impl ModelChoice {
    /// The names, in order.
    pub fn names(&self) -> Vec<String> {
        match self {
            ModelChoice::One(name) => vec![name.clone()],
            ModelChoice::Chain(names) => names.clone(),
        }
    }
}

/// The operator's bounds on sampling parameters, from a profile or a request.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct SamplingLimits {
    /// `agent.temperature_limit`.
    pub temperature: f64,
    /// `agent.max_output_tokens_limit`.
    pub max_output_tokens: u64,
}

/// Where an agent name may come from and how it must look.
pub const AGENT_NAME_RULE: &str = "[a-z][a-z0-9_-]*, at most 64 characters";

/// Whether `name` is a valid agent name ([`AGENT_NAME_RULE`]).
pub fn is_agent_name(name: &str) -> bool {
    let mut bytes = name.bytes();
    matches!(bytes.next(), Some(b'a'..=b'z'))
        && name.len() <= 64
        && bytes.all(|b| matches!(b, b'a'..=b'z' | b'0'..=b'9' | b'_' | b'-'))
}

/// Why a sampling value is out of bounds: the field and the rule, for the
/// profile checks and the surfaces' 400s alike.
pub fn sampling_problem(
    temperature: Option<f64>,
    top_p: Option<f64>,
    max_output_tokens: Option<u64>,
    limits: &SamplingLimits,
) -> Option<(&'static str, String)> {
    if let Some(t) = temperature
        && !(t.is_finite() && (0.0..=limits.temperature).contains(&t))
    {
        return Some((
            "temperature",
            format!(
                "{t} is outside 0..={} (agent.temperature_limit)",
                limits.temperature
            ),
        ));
    }
    if let Some(p) = top_p
        && !(p.is_finite() && p > 0.0 && p <= 1.0)
    {
        return Some(("top_p", format!("{p} must be greater than 0 and at most 1")));
    }
    if let Some(n) = max_output_tokens
        && !(1..=limits.max_output_tokens).contains(&n)
    {
        return Some((
            "max_output_tokens",
            format!(
                "{n} is outside 1..={} (agent.max_output_tokens_limit)",
                limits.max_output_tokens
            ),
        ));
    }
    None
}

impl AgentProfileConfig {
    /// The first problem of this profile on its own: the field and what is wrong.
    pub fn problem(&self, limits: &SamplingLimits) -> Option<(&'static str, String)> {
        if !is_agent_name(&self.name) {
            return Some(("name", format!("{:?} must be {AGENT_NAME_RULE}", self.name)));
        }
        match &self.model {
            Some(ModelChoice::Chain(names)) if names.is_empty() => {
                return Some(("model", "an empty list: name at least one model".into()));
            }
            Some(m) if m.names().iter().any(|n| n.trim().is_empty()) => {
                return Some(("model", "a model name is empty".into()));
            }
            _ => {}
        }
        if self.max_steps == Some(0) {
            return Some(("max_steps", "must be greater than 0".into()));
        }
        if let Some(allow) = &self.allow
            && allow.iter().any(|p| p.trim().is_empty())
        {
            return Some(("allow", "a pattern is empty".into()));
        }
        if let Some(approvals) = &self.approvals
            && let Some((i, _)) = approvals
                .rules
                .iter()
                .enumerate()
                .find(|(_, r)| r.tools.is_empty() || r.tools.iter().any(|p| p.trim().is_empty()))
        {
            return Some((
                "approvals",
                format!("rules[{i}].tools: name at least one operation pattern, none empty"),
            ));
        }
        if let Some(schema) = &self.output_schema
            && let Err(e) = jsonschema::validator_for(schema)
        {
            return Some(("output_schema", format!("not a valid JSON Schema: {e}")));
        }
        sampling_problem(self.temperature, self.top_p, self.max_output_tokens, limits)
    }
}

/// The first problem of the `[[agents]]` list, said for the operator
/// (`agents.NAME.field: ...`).
pub(super) fn mismatch(agents: &[AgentProfileConfig], limits: &SamplingLimits) -> Option<String> {
    let mut names = std::collections::HashSet::new();
    for (i, a) in agents.iter().enumerate() {
        if let Some((field, why)) = a.problem(limits) {
            let which = if is_agent_name(&a.name) {
                a.name.clone()
            } else {
                i.to_string()
            };
            return Some(format!("agents.{which}.{field}: {why}"));
        }
        if a.name == DEFAULT_AGENT {
            return Some(format!(
                "agents.{}: the name is reserved for the [agent] section's profile",
                a.name
            ));
        }
        if !names.insert(&a.name) {
            return Some(format!("agents: name {:?} is used twice", a.name));
        }
    }
    None
}
