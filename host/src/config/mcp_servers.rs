//! `[[mcp_servers]]`: external MCP servers whose tools become operations `NAME.tool`
//! behind the four meta-tools. The shape of the file and the checks that need no
//! I/O; the client that runs them is `mcp_client`'s, and secret references
//! (`env:VAR`, `file:/path`) in `env` and `headers` are resolved by
//! `secret_ref` when a server starts, never here (so a check never reads one).

use serde::Deserialize;
use std::collections::BTreeMap;
use std::path::PathBuf;

/// How the hub talks to an MCP server.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum McpTransport {
    /// A child process the hub starts and supervises: newline-delimited JSON-RPC on
    /// its stdin and stdout, stderr to the hub log.
    Stdio,
    /// Streamable HTTP at `url` (JSON or SSE answers, `Mcp-Session-Id`).
    Http,
    /// A WebSocket at `url` (`ws://` or `wss://`), one JSON-RPC message per text
    /// message, subprotocol `mcp`.
    Websocket,
}

impl McpTransport {
    /// The wire name: `stdio` or `http`.
    pub fn as_str(self) -> &'static str {
        match self {
            McpTransport::Stdio => "stdio",
            McpTransport::Http => "http",
            McpTransport::Websocket => "websocket",
        }
    }
}

/// The operator's word on one tool's behaviour hints: each set field replaces what
/// the server's annotations say (they are the server's claim, not the hub's).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct HintOverride {
    /// Replaces `readOnlyHint`.
    pub read_only: Option<bool>,
    /// Replaces `destructiveHint`.
    pub destructive: Option<bool>,
    /// Replaces `idempotentHint`.
    pub idempotent: Option<bool>,
    /// Replaces `openWorldHint`.
    pub open_world: Option<bool>,
}

/// A root the hub offers a server when it asks `roots/list`: a directory the
/// operator lets the server know about (MCP's roots are advice to the server;
/// a stdio server can reach whatever its user can, whatever they say).
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct McpRoot {
    /// A `file://` URI.
    pub uri: String,
    /// A name for people.
    #[serde(default)]
    pub name: Option<String>,
}

/// One `[[mcp_servers]]` entry.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct McpServerConfig {
    /// The namespace of its operations (`NAME.tool`), `[a-z][a-z0-9_-]*` like a
    /// plugin name, and not a plugin's.
    pub name: String,
    /// `stdio`, `http` or `websocket`.
    pub transport: McpTransport,
    /// stdio: the program to run (looked up in `PATH` when it has no `/`).
    #[serde(default)]
    pub command: Option<String>,
    /// stdio: its arguments.
    #[serde(default)]
    pub args: Vec<String>,
    /// stdio: variables set for it; values are literal, `env:VAR` or `file:/path`.
    #[serde(default)]
    pub env: BTreeMap<String, String>,
    /// stdio: variables of the hub's own environment passed through; nothing
    /// else of it is (default `["PATH", "HOME", "LANG"]`).
    #[serde(default = "default_env_allow")]
    pub env_allow: Vec<String>,
    /// stdio: its working directory (default: the hub's).
    #[serde(default)]
    pub cwd: Option<PathBuf>,
    /// http: the MCP endpoint (`http://` or `https://`); websocket: `ws://` or
    /// `wss://`.
    #[serde(default)]
    pub url: Option<String>,
    /// http: headers sent with every request (websocket: with the opening
    /// handshake); values are literal, `env:VAR` or `file:/path`.
    #[serde(default)]
    pub headers: BTreeMap<String, String>,
    /// Whether the hub starts it (default true).
    #[serde(default = "yes")]
    pub enabled: bool,
    /// Longest the start takes (spawn or connect, `initialize`, `tools/list`), in ms.
    #[serde(default = "default_start_timeout_ms")]
    pub start_timeout_ms: u64,
    /// Longest one `tools/call` runs, in ms (a nested call's parent deadline may
    /// end it sooner); past it the hub sends `notifications/cancelled`.
    #[serde(default = "default_call_timeout_ms")]
    pub call_timeout_ms: u64,
    /// Calls to this server running at once; more wait for a place within their
    /// deadline.
    #[serde(default = "default_max_concurrent")]
    pub max_concurrent: usize,
    /// Largest message the server may send, in KiB (a stdio line, an HTTP body or
    /// SSE event); a larger one fails the call it answers, or restarts the server.
    #[serde(default = "default_max_message_kb")]
    pub max_message_kb: u64,
    /// Largest result one call may return, in KiB, as the hub passes it on.
    #[serde(default = "default_max_result_kb")]
    pub max_result_kb: u64,
    /// Most tools taken from the server; past it the listing is rejected.
    #[serde(default = "default_max_tools")]
    pub max_tools: usize,
    /// Largest input or output schema of one tool, in KiB of JSON (schemas are
    /// also refused past 32 levels of nesting); a tool past it is left out, named
    /// in the server's notes.
    #[serde(default = "default_max_schema_kb")]
    pub max_schema_kb: u64,
    /// Lines of the server's stderr written to the hub log per minute; the rest
    /// are counted and the count logged.
    #[serde(default = "default_stderr_lines_per_minute")]
    pub stderr_lines_per_minute: u32,
    /// First wait before restarting (or reconnecting) a server that stopped, in
    /// ms; doubled after every failed start up to `restart_max_ms`.
    #[serde(default = "default_restart_min_ms")]
    pub restart_min_ms: u64,
    /// Longest wait between restarts, in ms.
    #[serde(default = "default_restart_max_ms")]
    pub restart_max_ms: u64,
    /// Time a stdio server gets after SIGTERM before SIGKILL, in ms.
    #[serde(default = "default_stop_grace_ms")]
    pub stop_grace_ms: u64,
    /// What the hub answers the server's `roots/list` (default: no roots).
    #[serde(default)]
    pub roots: Vec<McpRoot>,
    /// Per tool (its name on the server): hints that replace its annotations.
    #[serde(default)]
    pub hints: BTreeMap<String, HintOverride>,
    /// Largest `file:` secret read for its env or headers, in bytes: the hub's
    /// `secrets.max_value_kb`, set when the configuration is read (not a key of
    /// its own).
    #[serde(skip, default = "default_secret_max_bytes")]
    pub secret_max_bytes: u64,
}

fn default_secret_max_bytes() -> u64 {
    super::SecretsConfig::default().max_value_kb * 1024
}

fn yes() -> bool {
    true
}
fn default_env_allow() -> Vec<String> {
    ["PATH", "HOME", "LANG"].map(String::from).to_vec()
}
fn default_start_timeout_ms() -> u64 {
    30_000
}
fn default_call_timeout_ms() -> u64 {
    60_000
}
fn default_max_concurrent() -> usize {
    8
}
fn default_max_message_kb() -> u64 {
    4 * 1024
}
fn default_max_result_kb() -> u64 {
    1024
}
fn default_max_tools() -> usize {
    256
}
fn default_max_schema_kb() -> u64 {
    64
}
fn default_stderr_lines_per_minute() -> u32 {
    120
}
fn default_restart_min_ms() -> u64 {
    500
}
fn default_restart_max_ms() -> u64 {
    60_000
}
fn default_stop_grace_ms() -> u64 {
    2_000
}

/// The first entry that cannot work, said for the operator (naming
/// `mcp_servers.NAME.KEY`).
pub(super) fn mismatch(servers: &[McpServerConfig]) -> Option<String> {
    let mut names = std::collections::HashSet::new();
    for s in servers {
        if !crate::runtime::valid_plugin_name(&s.name) {
            return Some(format!(
                "mcp_servers: name {:?} must match [a-z][a-z0-9_-]* (it is the namespace of the server's operations)",
                s.name
            ));
        }
        if !names.insert(s.name.as_str()) {
            return Some(format!("mcp_servers: name {:?} is used twice", s.name));
        }
        if let Some(problem) = entry_mismatch(s) {
            return Some(format!("mcp_servers.{}: {problem}", s.name));
        }
    }
    None
}

fn entry_mismatch(s: &McpServerConfig) -> Option<String> {
    match s.transport {
        McpTransport::Stdio => {
            if s.url.is_some() || !s.headers.is_empty() {
                return Some("url and headers are for transport = \"http\"; a stdio server has command, args, env, env_allow and cwd".into());
            }
            match s.command.as_deref() {
                None | Some("") => return Some("transport = \"stdio\" needs command".into()),
                Some(_) => {}
            }
            for key in s.env.keys().chain(&s.env_allow) {
                if key.is_empty() || key.contains('=') || key.contains('\0') {
                    return Some(format!("env: {key:?} is not an environment variable name"));
                }
            }
            for (key, value) in &s.env {
                if let Err(e) = crate::secret_ref::SecretRef::parse(value) {
                    return Some(format!("env.{key}: {e}"));
                }
            }
        }
        McpTransport::Http | McpTransport::Websocket => {
            let t = s.transport.as_str();
            if s.command.is_some() || !s.args.is_empty() || !s.env.is_empty() || s.cwd.is_some() {
                return Some(format!(
                    "command, args, env and cwd are for transport = \"stdio\"; a {t} server has url and headers"
                ));
            }
            let schemes: [&str; 2] = match s.transport {
                McpTransport::Websocket => ["ws://", "wss://"],
                _ => ["http://", "https://"],
            };
            match s.url.as_deref() {
                None => return Some(format!("transport = \"{t}\" needs url")),
                Some(url) if !schemes.iter().any(|p| url.starts_with(p)) => {
                    return Some(format!(
                        "url {url:?} must start with {} or {}",
                        schemes[0], schemes[1]
                    ));
                }
                Some(url) if url.parse::<http::Uri>().is_err() => {
                    return Some(format!("url {url:?} is not a valid URL"));
                }
                Some(_) => {}
            }
            for (key, value) in &s.headers {
                if http::HeaderName::from_bytes(key.as_bytes()).is_err() {
                    return Some(format!("headers: {key:?} is not a header name"));
                }
                if let Err(e) = crate::secret_ref::SecretRef::parse(value) {
                    return Some(format!("headers.{key}: {e}"));
                }
            }
        }
    }
    for root in &s.roots {
        let path = root.uri.strip_prefix("file://").unwrap_or_default();
        if path.is_empty() || root.uri.chars().any(|c| c.is_whitespace() || c.is_control()) {
            return Some(format!("roots: {:?} must be a file:// URI", root.uri));
        }
    }
    for (key, value) in [
        ("start_timeout_ms", s.start_timeout_ms),
        ("call_timeout_ms", s.call_timeout_ms),
        ("max_concurrent", s.max_concurrent as u64),
        ("max_message_kb", s.max_message_kb),
        ("max_result_kb", s.max_result_kb),
        ("max_tools", s.max_tools as u64),
        ("max_schema_kb", s.max_schema_kb),
        ("restart_min_ms", s.restart_min_ms),
    ] {
        if value == 0 {
            return Some(format!("{key} must be greater than 0"));
        }
    }
    if s.max_message_kb > 1024 * 1024 {
        return Some(format!(
            "max_message_kb must be at most 1048576 (1 GiB); it is {}",
            s.max_message_kb
        ));
    }
    if s.restart_max_ms < s.restart_min_ms {
        return Some(format!(
            "restart_max_ms ({}) must be at least restart_min_ms ({})",
            s.restart_max_ms, s.restart_min_ms
        ));
    }
    None
}

#[cfg(test)]
mod tests {
    use crate::config::Config;
    use std::path::Path;

    fn problem(text: &str) -> String {
        Config::parse(text, Path::new("hub.toml"))
            .unwrap_err()
            .to_string()
    }

    #[test]
    fn a_stdio_and_an_http_server_parse() {
        let c = Config::parse(
            r#"
[[mcp_servers]]
name = "everything"
transport = "stdio"
command = "npx"
args = ["-y", "x"]
env = { TOKEN = "env:MY_TOKEN", PLAIN = "x" }
max_concurrent = 2
hints = { echo = { read_only = true, destructive = false } }
roots = [{ uri = "file:///srv/data", name = "data" }]

[[mcp_servers]]
name = "remote"
transport = "http"
url = "https://mcp.example.com/mcp"
headers = { Authorization = "file:/run/secrets/remote" }
enabled = false
"#,
            Path::new("hub.toml"),
        )
        .unwrap();
        assert_eq!(c.mcp_servers.len(), 2);
        assert_eq!(c.mcp_servers[0].max_concurrent, 2);
        assert_eq!(c.mcp_servers[0].hints["echo"].read_only, Some(true));
        assert_eq!(c.mcp_servers[0].roots[0].name.as_deref(), Some("data"));
        assert_eq!(c.mcp_servers[0].env_allow, ["PATH", "HOME", "LANG"]);
        assert!(!c.mcp_servers[1].enabled);
    }

    #[test]
    fn mistakes_are_named() {
        let cases = [
            (
                "[[mcp_servers]]\nname = \"Bad\"\ntransport = \"stdio\"\ncommand = \"x\"",
                "must match [a-z]",
            ),
            (
                "[[mcp_servers]]\nname = \"a\"\ntransport = \"stdio\"",
                "mcp_servers.a: transport = \"stdio\" needs command",
            ),
            (
                "[[mcp_servers]]\nname = \"a\"\ntransport = \"http\"",
                "mcp_servers.a: transport = \"http\" needs url",
            ),
            (
                "[[mcp_servers]]\nname = \"a\"\ntransport = \"http\"\nurl = \"ftp://x\"",
                "must start with http://",
            ),
            (
                "[[mcp_servers]]\nname = \"a\"\ntransport = \"http\"\nurl = \"http://x\"\ncommand = \"y\"",
                "are for transport = \"stdio\"",
            ),
            (
                "[[mcp_servers]]\nname = \"a\"\ntransport = \"stdio\"\ncommand = \"x\"\nenv = { K = \"env:\" }",
                "mcp_servers.a: env.K: env: needs a variable name",
            ),
            (
                "[[mcp_servers]]\nname = \"a\"\ntransport = \"stdio\"\ncommand = \"x\"\nmax_concurrent = 0",
                "mcp_servers.a: max_concurrent must be greater than 0",
            ),
            (
                "[[mcp_servers]]\nname = \"a\"\ntransport = \"stdio\"\ncommand = \"x\"\n[[mcp_servers]]\nname = \"a\"\ntransport = \"stdio\"\ncommand = \"x\"",
                "used twice",
            ),
            (
                "[[mcp_servers]]\nname = \"a\"\ntransport = \"ws\"\ncommand = \"x\"",
                "ws",
            ),
            (
                "[[mcp_servers]]\nname = \"a\"\ntransport = \"websocket\"\nurl = \"http://x/mcp\"",
                "mcp_servers.a: url \"http://x/mcp\" must start with ws:// or wss://",
            ),
            (
                "[[mcp_servers]]\nname = \"a\"\ntransport = \"stdio\"\ncommand = \"x\"\nrestart_min_ms = 10\nrestart_max_ms = 5",
                "restart_max_ms (5) must be at least restart_min_ms (10)",
            ),
            (
                "[[mcp_servers]]\nname = \"a\"\ntransport = \"stdio\"\ncommand = \"x\"\nroots = [{ uri = \"/srv/data\" }]",
                "mcp_servers.a: roots: \"/srv/data\" must be a file:// URI",
            ),
        ];
        for (text, want) in cases {
            let got = problem(text);
            assert!(got.contains(want), "{text}: {got}");
        }
    }
}
