//! The operator's configuration: one TOML file plus command-line overrides.
//!
//! Every section is a plain struct with `deny_unknown_fields`, so a typo is an error
//! that names the key and the line. Secrets never live in the file: providers and
//! tokens name an environment variable (or a file) to read them from.

use serde::Deserialize;
use std::net::SocketAddr;
use std::path::{Path, PathBuf};

mod accounting;
mod agents;
mod approvals;
mod concurrency;
mod distribution;
mod error;
mod issuers;
mod limits;
mod llm_trace;
mod mcp_servers;
mod models;
mod oauth;
#[cfg(test)]
mod oauth_tests;
mod providers;
mod secrets;
mod storage;
mod telemetry;
#[cfg(test)]
mod tests;
mod tokenizers;

pub use accounting::{AccountingConfig, ModelPrice};
pub use agents::{
    AGENT_NAME_RULE, AgentConfig, AgentProfileConfig, DEFAULT_AGENT, ModelChoice, SamplingLimits,
    is_agent_name, sampling_problem,
};
pub use approvals::{ApprovalAction, ApprovalRule, ApprovalsConfig, TokenApprovals};
pub use concurrency::ConcurrencyConfig;
pub use distribution::{
    PUBLIC_KEY_PREFIX, PluginsConfig, PublicKeyError, SourceConfig, TrustConfig, decode_hex, is_key_id,
    parse_public_key,
};
pub use error::ConfigError;
pub use issuers::IssuerConfig;
pub use limits::{
    CallCaps, CpuLimits, Limits, LoadLimits, PoolLimits, ShareLimits, TreeLimits, ValidationLimits,
};
pub use llm_trace::LlmTraceConfig;
pub use mcp_servers::{HintOverride, McpRoot, McpServerConfig, McpTransport};
pub use models::{ModelConfig, ModelSettings, ProviderKind, StreamDeltas, ToolChoice, UnknownKind};
pub use oauth::{OAuthConfig, SCOPE_NAMES};
pub use providers::{DEFAULT_MAX_MALFORMED_CHUNKS, ProviderConfig};
pub use secrets::{PluginSettings, SecretsConfig};
pub use storage::{StorageBackend, StorageConfig};
pub use telemetry::{LogFormat, TelemetryConfig};
pub use tokenizers::{Encoding, Spec, SpecError, TokenizersConfig};

/// The whole configuration, after defaults and overrides.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct Config {
    /// Address the HTTP server binds.
    pub listen: SocketAddr,
    /// Folder of built `.wasm` plugins (with optional `NAME.toml` manifests).
    pub plugins_dir: PathBuf,
    /// Folder of the embedded backend (the sled store of sessions in `store/`, the
    /// record logs of the audit log and accounting in `logs/`) and the
    /// compiled-plugin cache.
    pub data_dir: PathBuf,
    /// Global caps every plugin call runs within.
    pub limits: Limits,
    /// Upstream model providers.
    pub providers: Vec<ProviderConfig>,
    /// Model names resolved to ordered `provider/model` targets (fallback chains).
    pub models: Vec<ModelConfig>,
    /// The hub's own agent loop (and the default agent profile).
    pub agent: AgentConfig,
    /// Named agent profiles (`[[agents]]`).
    pub agents: Vec<AgentProfileConfig>,
    /// Folder of Markdown agent profiles (`NAME.md`), watched like the plugins
    /// folder; a missing folder holds none.
    pub agents_dir: PathBuf,
    /// Client bearer tokens. None configured = loopback clients only.
    pub tokens: Vec<TokenConfig>,
    /// Audit log of calls.
    pub audit: AuditConfig,
    /// HTTP server hardening.
    pub server: ServerConfig,
    /// Which calls need a person's approval before they run.
    pub approvals: ApprovalsConfig,
    /// Plugins pulled from OCI registries (`[[plugins.sources]]`).
    pub plugins: PluginsConfig,
    /// Which signers plugins must come from (`[trust]`).
    pub trust: TrustConfig,
    /// Requests each HTTP surface serves at once, and the line in front of it.
    pub concurrency: ConcurrencyConfig,
    /// Usage and cost records of model steps and tool calls.
    pub accounting: AccountingConfig,
    /// Which database holds sessions, audit and accounting records (`[storage]`).
    pub storage: StorageConfig,
    /// OAuth 2.1 for remote clients (`[oauth]`); off without `public_url`.
    pub oauth: OAuthConfig,
    /// External MCP servers whose tools become operations (`[[mcp_servers]]`).
    pub mcp_servers: Vec<McpServerConfig>,
    /// The key plugin secrets are sealed with (`[secrets]`).
    pub secrets: SecretsConfig,
    /// Per-plugin settings (`[plugin.NAME]`): configuration values, secret
    /// references, `allow_reveal`.
    pub plugin: std::collections::BTreeMap<String, PluginSettings>,
    /// The wire trace of upstream model calls (`[llm_trace]`).
    pub llm_trace: LlmTraceConfig,
    /// `[trace]`, the old name of `[llm_trace]`: present only to be refused with
    /// an error naming the new one.
    #[serde(rename = "trace")]
    pub old_trace: Option<serde::de::IgnoredAny>,
    /// OpenTelemetry traces and the log format (`[telemetry]`).
    pub telemetry: TelemetryConfig,
    /// Where tokenizer files come from (`[tokenizers]`).
    pub tokenizers: TokenizersConfig,
}

impl Default for Config {
    fn default() -> Self {
        Config {
            listen: "127.0.0.1:8787".parse().unwrap(),
            plugins_dir: PathBuf::from("dist/plugins"),
            data_dir: PathBuf::from("data"),
            limits: Limits::default(),
            providers: Vec::new(),
            models: Vec::new(),
            agent: AgentConfig::default(),
            agents: Vec::new(),
            agents_dir: PathBuf::from("agents"),
            tokens: Vec::new(),
            audit: AuditConfig::default(),
            server: ServerConfig::default(),
            approvals: ApprovalsConfig::default(),
            plugins: PluginsConfig::default(),
            trust: TrustConfig::default(),
            concurrency: ConcurrencyConfig::default(),
            accounting: AccountingConfig::default(),
            storage: StorageConfig::default(),
            oauth: OAuthConfig::default(),
            mcp_servers: Vec::new(),
            secrets: SecretsConfig::default(),
            plugin: Default::default(),
            llm_trace: LlmTraceConfig::default(),
            old_trace: None,
            telemetry: TelemetryConfig::default(),
            tokenizers: TokenizersConfig::default(),
        }
    }
}

/// The principal of the local operator: loopback clients when no token is
/// configured, the processes the operator starts (the CLI, MCP over stdio), and the
/// owner of sessions stored before sessions had owners. No token may take the name.
pub const LOCAL_PRINCIPAL: &str = "local";

/// A client bearer token and what it may call.
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct TokenConfig {
    /// Name recorded as the caller in the audit log.
    pub name: String,
    /// Environment variable holding the secret.
    #[serde(default)]
    pub secret_env: Option<String>,
    /// File holding the secret (trailing newline ignored).
    #[serde(default)]
    pub secret_file: Option<PathBuf>,
    /// Operation patterns this token may call: `weather.*`, `text.slugify`, `*`.
    #[serde(default)]
    pub allow: Vec<String>,
    /// May decide pending approvals (`GET /api/approvals`, `POST /api/approvals/{id}`).
    #[serde(default)]
    pub operator: bool,
    /// This token's approval policy, over the global `[approvals]`.
    #[serde(default)]
    pub approvals: TokenApprovals,
    /// Most chat sessions this token may keep stored (0: no limit); default
    /// `storage.max_sessions`.
    #[serde(default)]
    pub max_sessions: Option<u64>,
    /// Most megabytes of chat messages this token may keep stored (0: no limit);
    /// default `storage.max_stored_mb`.
    #[serde(default)]
    pub max_stored_mb: Option<u64>,
}

/// The audit log.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct AuditConfig {
    /// Most call records kept; older ones are dropped first.
    pub retention: usize,
    /// Input/output field names whose values are replaced by `"[redacted]"`.
    pub redact_fields: Vec<String>,
    /// Records waiting for the writer; past it, records are summarised, not stored.
    pub queue: usize,
}

impl Default for AuditConfig {
    fn default() -> Self {
        AuditConfig {
            retention: 100_000,
            redact_fields: [
                "password",
                "secret",
                "token",
                "api_key",
                "apikey",
                "authorization",
            ]
            .map(String::from)
            .to_vec(),
            queue: 8192,
        }
    }
}

/// HTTP server hardening.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct ServerConfig {
    /// Largest request body accepted, in KiB.
    pub max_body_kb: u64,
    /// Extra `Origin` values accepted besides the hub's own address.
    pub allowed_origins: Vec<String>,
    /// Extra `Host` values accepted besides loopback names and the listen address.
    pub allowed_hosts: Vec<String>,
    /// Seconds in-flight requests get to finish after SIGINT/SIGTERM.
    pub shutdown_grace_secs: u64,
    /// Most MCP 2025-11-25 sessions kept at once; the least recently used goes first.
    pub mcp_max_sessions: usize,
    /// Minutes an MCP session may sit unused before it is dropped.
    pub mcp_session_idle_minutes: u64,
    /// Seconds an MCP client's user has to answer an approval question: how long
    /// a 2025-11-25 call waits for the `elicitation/create` response, and how long
    /// a 2026-07-28 `requestState` stays good.
    pub mcp_approval_secs: u64,
}

impl Default for ServerConfig {
    fn default() -> Self {
        ServerConfig {
            max_body_kb: 4096,
            allowed_origins: Vec::new(),
            allowed_hosts: Vec::new(),
            shutdown_grace_secs: 10,
            mcp_max_sessions: 4096,
            mcp_session_idle_minutes: 30,
            mcp_approval_secs: 300,
        }
    }
}

impl Config {
    /// Parses configuration text; `path` is only used in error messages.
    pub fn parse(text: &str, path: &Path) -> Result<Config, ConfigError> {
        let config: Config = crate::toml::from_str(text).map_err(|e| parse_error(path, e))?;
        config.check(Some(path))?;
        Ok(config)
    }

    /// Loads `path`, or `wasmhub.toml` in the working directory when `path` is `None`
    /// and that file exists, or the defaults.
    pub fn load(path: Option<&Path>) -> Result<Config, ConfigError> {
        Config::load_with(path, &[])
    }

    /// [`Config::load`], then the `--set KEY=VALUE` overrides in order: KEY is a
    /// dotted key (`limits.memory_mb`, `agent.model`, `server.allowed_hosts`), VALUE a
    /// TOML value (`128`, `true`, `["a", "b"]`, `"text"`); a VALUE that is not TOML is
    /// taken as a string, so `--set agent.model=openai/gpt-4o` needs no quotes.
    pub fn load_with(path: Option<&Path>, overrides: &[String]) -> Result<Config, ConfigError> {
        let path = match path {
            Some(p) => Some(p.to_owned()),
            None => Some(PathBuf::from("wasmhub.toml")).filter(|p| p.exists()),
        };
        let text = match &path {
            Some(path) => std::fs::read_to_string(path).map_err(|source| ConfigError::Read {
                path: path.clone(),
                source,
            })?,
            None => String::new(),
        };
        let shown = path.clone().unwrap_or_else(|| PathBuf::from("(defaults)"));
        if overrides.is_empty() {
            return Config::parse(&text, &shown);
        }
        // The file's own mistakes first, with their line numbers.
        let file = crate::toml::Document::parse(&text).map_err(|e| parse_error(&shown, e))?;
        file.deserialize::<Config>().map_err(|e| parse_error(&shown, e))?;
        let mut doc = file.to_json();
        for item in overrides {
            apply_override(&mut doc, item)?;
        }
        let config: Config =
            serde_json::from_value(doc).map_err(|source| ConfigError::Overrides { source })?;
        config.check(path.as_deref())?;
        Ok(config)
    }

    /// `Invalid` (naming `path`, when there is a file) if the values do not fit together.
    fn check(&self, path: Option<&Path>) -> Result<(), ConfigError> {
        match self.first_mismatch() {
            None => Ok(()),
            Some(message) => Err(ConfigError::Invalid {
                path: path.map(Path::to_owned),
                message,
            }),
        }
    }

    /// The first pair of values that do not fit together, said for the operator.
    fn first_mismatch(&self) -> Option<String> {
        let mut names = std::collections::HashSet::new();
        for p in &self.providers {
            if p.name.is_empty() || p.name.contains('/') {
                return Some(format!(
                    "providers: name {:?} must be non-empty and contain no '/'",
                    p.name
                ));
            }
            if !names.insert(&p.name) {
                return Some(format!("providers: name {:?} is used twice", p.name));
            }
            if let Err(e) = ProviderKind::parse(&p.kind) {
                return Some(format!("providers.{}.kind: {e}", p.name));
            }
            if !(p.base_url.starts_with("http://") || p.base_url.starts_with("https://")) {
                return Some(format!(
                    "providers.{}: base_url {:?} must start with http:// or https://",
                    p.name, p.base_url
                ));
            }
        }
        if let Some(message) = models::mismatch(&self.models) {
            return Some(message);
        }
        let mut names = std::collections::HashSet::new();
        for t in &self.tokens {
            if !names.insert(&t.name) {
                return Some(format!("tokens: name {:?} is used twice", t.name));
            }
            // The name is the principal that owns sessions and records; `local` is
            // the operator's own (the CLI, loopback without tokens, older sessions).
            if t.name == LOCAL_PRINCIPAL || t.name.is_empty() {
                return Some(format!(
                    "tokens: name {:?} is reserved or empty: `local` is the local operator's principal; choose another name",
                    t.name
                ));
            }
            match (&t.secret_env, &t.secret_file) {
                (Some(_), None) | (None, Some(_)) => {}
                _ => {
                    return Some(format!(
                        "tokens.{}: set exactly one of secret_env or secret_file",
                        t.name
                    ));
                }
            }
        }
        if let Some(problem) = self.limits.problem() {
            return Some(problem);
        }
        if let Some(name) = (self.limits.cpu.token_weights.keys())
            .find(|name| *name != LOCAL_PRINCIPAL && !names.contains(name))
        {
            return Some(format!(
                "limits.token_cpu_weights.{name}: no token has this name (the configured tokens and `local`)"
            ));
        }
        if let Some(message) = self.agent.mismatch(&self.agents) {
            return Some(message);
        }
        if self.server.mcp_max_sessions == 0 || self.server.mcp_session_idle_minutes == 0 {
            return Some(
                "server.mcp_max_sessions and server.mcp_session_idle_minutes must be greater than 0".into(),
            );
        }
        if self.server.mcp_approval_secs == 0 {
            return Some("server.mcp_approval_secs must be greater than 0".into());
        }
        (self.old_trace.map(|_| llm_trace::RENAMED.to_string()))
            .or_else(|| self.trust.first_mismatch())
            .or_else(|| self.plugins.first_mismatch())
            .or_else(|| self.concurrency.mismatch())
            .or_else(|| self.accounting.mismatch())
            .or_else(|| self.storage.mismatch())
            .or_else(|| mcp_servers::mismatch(&self.mcp_servers))
            .or_else(|| self.secrets.mismatch())
            .or_else(|| self.llm_trace.mismatch())
            .or_else(|| self.telemetry.mismatch())
            .or_else(|| self.tokenizers.mismatch())
            .or_else(|| secrets::mismatch(&self.plugin))
            .or_else(|| {
                let names: Vec<&str> = self.tokens.iter().map(|t| t.name.as_str()).collect();
                self.oauth.mismatch(&names)
            })
    }
}

/// Sets the dotted key of `item` (`KEY=VALUE`) in `doc`, creating tables on the way.
fn apply_override(doc: &mut serde_json::Value, item: &str) -> Result<(), ConfigError> {
    let malformed = |why: String| ConfigError::Invalid {
        path: None,
        message: format!("--set {item}: {why}"),
    };
    let (key, raw) = item
        .split_once('=')
        .ok_or_else(|| malformed("expected KEY=VALUE, like limits.memory_mb=128".into()))?;
    let path: Vec<&str> = key.trim().split('.').map(str::trim).collect();
    if path.iter().any(|p| p.is_empty()) {
        return Err(malformed(format!(
            "{key:?} is not a dotted key like limits.memory_mb"
        )));
    }
    let value =
        crate::toml::value_from_str(raw).unwrap_or_else(|| serde_json::Value::String(raw.to_string()));
    let (last, tables) = path.split_last().expect("at least one part");
    let mut table = doc.as_object_mut().expect("a TOML document is a table");
    for part in tables {
        table = table
            .entry(part.to_string())
            .or_insert_with(|| serde_json::Value::Object(Default::default()))
            .as_object_mut()
            .ok_or_else(|| malformed(format!("{part} is not a table")))?;
    }
    table.insert(last.to_string(), value);
    Ok(())
}

fn parse_error(path: &Path, e: crate::toml::TomlError) -> ConfigError {
    ConfigError::Parse {
        path: path.to_owned(),
        source: e,
    }
}
