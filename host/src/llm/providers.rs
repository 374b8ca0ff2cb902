//! Upstream providers: which provider serves a model name, and the headers (API key,
//! extra headers) every request to it carries.
//!
//! A model is addressed as `provider/model` (explicit) or by name alone, in which case
//! the first provider, in configuration order, with a matching glob pattern serves it.
//! Model names may contain `/` themselves (`qwen/qwen3-32b` on Groq), so the prefix
//! counts as a provider only when a provider of that name exists.

use crate::config::{ProviderConfig, ProviderKind, UnknownKind};
use http::{HeaderName, HeaderValue, Uri};
use std::sync::Arc;

/// A configured provider, with its base URL parsed once.
#[derive(Debug)]
pub struct Provider {
    /// The provider's `[[providers]]` entry as configured.
    pub config: ProviderConfig,
    /// `config.kind`, parsed: the API it speaks.
    pub kind: ProviderKind,
    /// `config.base_url`, parsed (for `ollama`, without a `/v1` or `/api` suffix).
    pub base: BaseUrl,
    /// Extra headers from the configuration, validated.
    pub headers: Vec<(HeaderName, HeaderValue)>,
}

/// The parts of a provider's base URL the client needs.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct BaseUrl {
    /// `https://` (TLS) rather than `http://`.
    pub https: bool,
    /// Host name or IP (IPv6 without brackets), for DNS and TLS.
    pub host: String,
    /// The port, or the scheme's default.
    pub port: u16,
    /// `Host` header value.
    pub authority: String,
    /// Path prefix without a trailing slash, e.g. `/v1`.
    pub path: String,
}

/// Why a `base_url` cannot be used.
#[derive(Debug)]
pub enum BaseUrlError {
    /// The text does not parse as a URI.
    NotAUrl {
        /// The configured `base_url`.
        url: String,
        /// Why it does not parse.
        source: http::uri::InvalidUri,
    },
    /// The scheme is neither `http` nor `https` (holds the URL).
    Scheme(String),
    /// The URL has no host (holds the URL).
    NoHost(String),
    /// The URL has a query string (holds the URL).
    Query(String),
}

impl std::fmt::Display for BaseUrlError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            BaseUrlError::NotAUrl { url, source } => write!(f, "base_url {url:?} is not a URL: {source}"),
            BaseUrlError::Scheme(url) => write!(f, "base_url {url:?} must start with http:// or https://"),
            BaseUrlError::NoHost(url) => write!(f, "base_url {url:?} has no host"),
            BaseUrlError::Query(url) => write!(f, "base_url {url:?} must not have a query string"),
        }
    }
}

impl std::error::Error for BaseUrlError {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        match self {
            BaseUrlError::NotAUrl { source, .. } => Some(source),
            _ => None,
        }
    }
}

impl BaseUrl {
    /// Reads a `base_url`: `http(s)://host[:port][/path]`, no query string.
    pub fn parse(url: &str) -> Result<BaseUrl, BaseUrlError> {
        let uri: Uri = url.parse().map_err(|source| BaseUrlError::NotAUrl {
            url: url.to_string(),
            source,
        })?;
        let https = match uri.scheme_str() {
            Some("https") => true,
            Some("http") => false,
            _ => return Err(BaseUrlError::Scheme(url.to_string())),
        };
        let authority = uri
            .authority()
            .ok_or_else(|| BaseUrlError::NoHost(url.to_string()))?;
        let host = authority
            .host()
            .trim_start_matches('[')
            .trim_end_matches(']')
            .to_string();
        if host.is_empty() {
            return Err(BaseUrlError::NoHost(url.to_string()));
        }
        if uri.query().is_some() {
            return Err(BaseUrlError::Query(url.to_string()));
        }
        Ok(BaseUrl {
            https,
            port: authority.port_u16().unwrap_or(if https { 443 } else { 80 }),
            host,
            authority: authority.as_str().to_string(),
            path: uri.path().trim_end_matches('/').to_string(),
        })
    }

    /// This URL without a trailing `/v1` or `/api` path segment: Ollama's native
    /// API is under `/api` at the server's root, and operators often configure
    /// its OpenAI-compatible `/v1` URL.
    fn server_root(mut self) -> BaseUrl {
        for suffix in ["/v1", "/api"] {
            if let Some(root) = self.path.strip_suffix(suffix) {
                self.path = root.to_string();
                break;
            }
        }
        self
    }

    /// This URL ending in an API version: kept when its last segment is one
    /// (`/v1beta`, `/v1`, `/v1alpha`), else with `version` added (Gemini's
    /// `base_url` may be the server, `https://generativelanguage.googleapis.com`).
    fn versioned(mut self, version: &str) -> BaseUrl {
        let last = self.path.rsplit('/').next().unwrap_or("");
        let is_version = last
            .strip_prefix('v')
            .is_some_and(|v| v.starts_with(|c: char| c.is_ascii_digit()));
        if !is_version {
            self.path.push_str(version);
        }
        self
    }

    /// The path of an endpoint under the base URL (`/v1` + `/chat/completions`).
    pub fn endpoint(&self, suffix: &str) -> String {
        format!("{}{}", self.path, suffix)
    }
}

/// The API version a `gemini` provider's `base_url` gets when it names none.
const GEMINI_VERSION: &str = "/v1beta";

/// Where a request goes: the provider and the model name it knows.
#[derive(Debug, Clone)]
pub struct Route {
    /// The provider that serves the model.
    pub provider: Arc<Provider>,
    /// The model name sent upstream (the `provider/` prefix removed).
    pub model: String,
}

/// Why a model could not be routed.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum RouteError {
    /// No `[[providers]]` are configured (and no `OPENAI_API_KEY` default).
    NoProviders,
    /// The model matches no provider's prefix or model patterns.
    UnknownModel {
        /// The model name as requested.
        model: String,
        /// The configured provider names, for the message.
        providers: Vec<String>,
    },
}

impl std::fmt::Display for RouteError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            RouteError::NoProviders => f.write_str(
                "no model providers are configured: add a [[providers]] section (name, base_url, api_key_env, models) \
                 to the configuration file, or set OPENAI_API_KEY (and optionally OPENAI_BASE_URL) before starting the hub",
            ),
            RouteError::UnknownModel { model, providers } => write!(
                f,
                "model {model:?} matches no configured provider; address it as \"<provider>/<model>\" with one of: {}, \
                 or add a pattern to a provider's `models`",
                providers.iter().map(|p| format!("{p:?}")).collect::<Vec<_>>().join(", ")
            ),
        }
    }
}

impl std::error::Error for RouteError {}

/// The configured providers, in configuration order.
#[derive(Debug, Default)]
pub(crate) struct Providers {
    list: Vec<Arc<Provider>>,
}

/// Why the `[[providers]]` configuration cannot be used; names the provider.
#[derive(Debug)]
pub enum ProviderError {
    /// The provider's `base_url` cannot be used.
    BaseUrl {
        /// The provider's name.
        provider: String,
        /// What is wrong with the URL.
        source: BaseUrlError,
    },
    /// The provider's `kind` names no API the hub speaks.
    Kind {
        /// The provider's name.
        provider: String,
        /// The unknown kind.
        source: UnknownKind,
    },
    /// A configured extra header has an invalid name.
    HeaderName {
        /// The provider's name.
        provider: String,
        /// The header name as configured.
        name: String,
        /// Why it is not a header name.
        source: http::header::InvalidHeaderName,
    },
    /// A configured extra header has an invalid value.
    HeaderValue {
        /// The provider's name.
        provider: String,
        /// The header whose value is invalid.
        name: HeaderName,
        /// Why it is not a header value.
        source: http::header::InvalidHeaderValue,
    },
    /// A `[[models]]` entry without targets (holds its name).
    NoTargets {
        /// The `[[models]]` name.
        model: String,
    },
    /// A `[[models]]` target that no provider serves.
    Target {
        /// The `[[models]]` name.
        model: String,
        /// The target as configured.
        target: String,
        /// Why it does not route.
        source: RouteError,
    },
}

impl std::fmt::Display for ProviderError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            ProviderError::BaseUrl { provider, source } => write!(f, "providers.{provider}: {source}"),
            ProviderError::Kind { provider, source } => write!(f, "providers.{provider}.kind: {source}"),
            ProviderError::HeaderName { provider, name, .. } => {
                write!(f, "providers.{provider}: header name {name:?} is not valid")
            }
            ProviderError::HeaderValue { provider, name, .. } => {
                write!(f, "providers.{provider}: the value of header {name} is not valid")
            }
            ProviderError::Target {
                model,
                target,
                source,
            } => {
                write!(f, "models.{model}: target {target:?}: {source}")
            }
            ProviderError::NoTargets { model } => {
                write!(
                    f,
                    "models.{model}: targets must name at least one \"provider/model\""
                )
            }
        }
    }
}

impl std::error::Error for ProviderError {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        match self {
            ProviderError::BaseUrl { source, .. } => Some(source),
            ProviderError::Kind { source, .. } => Some(source),
            ProviderError::HeaderName { source, .. } => Some(source),
            ProviderError::HeaderValue { source, .. } => Some(source),
            ProviderError::Target { source, .. } => Some(source),
            ProviderError::NoTargets { .. } => None,
        }
    }
}

/// Why a provider's API key cannot be sent (a hub configuration problem).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum KeyError {
    /// The environment variable `var` is not set (or not Unicode).
    Unset {
        /// The provider's name.
        provider: String,
        /// The variable's name (`api_key_env`).
        var: String,
        /// Why reading it failed.
        source: std::env::VarError,
    },
    /// The key has characters a header value cannot hold.
    NotAHeader {
        /// The variable holding the key.
        var: String,
    },
}

impl std::fmt::Display for KeyError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            KeyError::Unset { provider, var, .. } => write!(
                f,
                "provider {provider:?} reads its API key from the environment variable {var}, which is not set"
            ),
            KeyError::NotAHeader { var } => {
                write!(
                    f,
                    "the API key in {var} contains characters not allowed in a header"
                )
            }
        }
    }
}

impl std::error::Error for KeyError {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        match self {
            KeyError::Unset { source, .. } => Some(source),
            KeyError::NotAHeader { .. } => None,
        }
    }
}

impl Providers {
    pub(crate) fn new(configs: &[ProviderConfig]) -> Result<Providers, ProviderError> {
        let mut list = Vec::with_capacity(configs.len());
        for config in configs {
            let provider = || config.name.clone();
            let kind = ProviderKind::parse(&config.kind).map_err(|source| ProviderError::Kind {
                provider: provider(),
                source,
            })?;
            let mut base = BaseUrl::parse(&config.base_url).map_err(|source| ProviderError::BaseUrl {
                provider: provider(),
                source,
            })?;
            match kind {
                ProviderKind::Ollama => base = base.server_root(),
                ProviderKind::Gemini => base = base.versioned(GEMINI_VERSION),
                _ => {}
            }
            let mut headers = Vec::with_capacity(config.headers.len());
            for (name, value) in &config.headers {
                let name =
                    HeaderName::try_from(name.as_str()).map_err(|source| ProviderError::HeaderName {
                        provider: provider(),
                        name: name.clone(),
                        source,
                    })?;
                let value =
                    HeaderValue::try_from(value.as_str()).map_err(|source| ProviderError::HeaderValue {
                        provider: provider(),
                        name: name.clone(),
                        source,
                    })?;
                headers.push((name, value));
            }
            list.push(Arc::new(Provider {
                config: config.clone(),
                kind,
                base,
                headers,
            }));
        }
        Ok(Providers { list })
    }

    pub(crate) fn all(&self) -> &[Arc<Provider>] {
        &self.list
    }

    pub(crate) fn names(&self) -> Vec<String> {
        self.list.iter().map(|p| p.config.name.clone()).collect()
    }

    /// Resolves a client's model name.
    pub(crate) fn route(&self, model: &str) -> Result<Route, RouteError> {
        if self.list.is_empty() {
            return Err(RouteError::NoProviders);
        }
        if let Some((prefix, rest)) = model.split_once('/')
            && !rest.is_empty()
            && let Some(p) = self.list.iter().find(|p| p.config.name == prefix)
        {
            return Ok(Route {
                provider: p.clone(),
                model: rest.to_string(),
            });
        }
        for p in &self.list {
            if p.config.models.iter().any(|pattern| glob_match(pattern, model)) {
                return Ok(Route {
                    provider: p.clone(),
                    model: model.to_string(),
                });
            }
        }
        Err(RouteError::UnknownModel {
            model: model.to_string(),
            providers: self.names(),
        })
    }
}

impl Providers {
    /// Every route that serves `model`: the named provider for `provider/model`,
    /// else each provider whose patterns match, in configuration order (a chain's
    /// target names a model; each provider of it is tried in turn).
    pub(crate) fn serving(&self, model: &str) -> Result<Vec<Route>, RouteError> {
        let first = self.route(model)?;
        if first.model != model {
            return Ok(vec![first]);
        }
        Ok(self
            .list
            .iter()
            .filter(|p| p.config.models.iter().any(|pattern| glob_match(pattern, model)))
            .map(|p| Route {
                provider: p.clone(),
                model: model.to_string(),
            })
            .collect())
    }
}

impl Provider {
    /// The header carrying the API key from the provider's environment variable:
    /// `Authorization: Bearer <key>`, or `x-api-key: <key>` for an `anthropic`
    /// provider, `x-goog-api-key: <key>` for a `gemini` one (never in the URL). Read on every request so a rotated key takes effect without a
    /// restart.
    pub fn auth_header(&self) -> Result<Option<(HeaderName, HeaderValue)>, KeyError> {
        let Some(var) = &self.config.api_key_env else {
            return Ok(None);
        };
        let key = std::env::var(var).map_err(|source| KeyError::Unset {
            provider: self.config.name.clone(),
            var: var.clone(),
            source,
        })?;
        let (name, text) = match self.kind {
            ProviderKind::Anthropic => (HeaderName::from_static("x-api-key"), key.trim().to_string()),
            ProviderKind::Gemini => (HeaderName::from_static("x-goog-api-key"), key.trim().to_string()),
            _ => (http::header::AUTHORIZATION, format!("Bearer {}", key.trim())),
        };
        // The invalid-value error says nothing the variable's name does not.
        let mut value = HeaderValue::try_from(text).map_err(|_| KeyError::NotAHeader { var: var.clone() })?;
        value.set_sensitive(true);
        Ok(Some((name, value)))
    }
}

/// Glob match with `*` (any run, also empty) and `?` (one character).
pub(crate) fn glob_match(pattern: &str, name: &str) -> bool {
    let (p, n): (Vec<char>, Vec<char>) = (pattern.chars().collect(), name.chars().collect());
    let (mut pi, mut ni) = (0, 0);
    // Position after the last `*` and the name position it was tried at.
    let mut star: Option<(usize, usize)> = None;
    while ni < n.len() {
        if pi < p.len() && (p[pi] == '?' || p[pi] == n[ni]) {
            pi += 1;
            ni += 1;
        } else if pi < p.len() && p[pi] == '*' {
            star = Some((pi + 1, ni));
            pi += 1;
        } else if let Some((after, at)) = star {
            pi = after;
            ni = at + 1;
            star = Some((after, at + 1));
        } else {
            return false;
        }
    }
    p[pi..].iter().all(|&c| c == '*')
}

/// Whether a pattern names exactly one model (no wildcards).
pub(crate) fn is_literal(pattern: &str) -> bool {
    !pattern.contains(['*', '?'])
}

#[cfg(test)]
mod tests {
    use super::*;

    fn provider(name: &str, models: &[&str]) -> ProviderConfig {
        let text = format!(
            "name = {name:?}\nbase_url = \"http://127.0.0.1:9/v1/\"\nmodels = {models:?}\napi_key_env = \"WASMHUB_TEST_KEY_{name}\"\n"
        );
        crate::toml::from_str(&text).unwrap()
    }

    #[test]
    fn globs() {
        assert!(glob_match("gpt-*", "gpt-4o"));
        assert!(glob_match("*", ""));
        assert!(glob_match("*mini", "gpt-4o-mini"));
        assert!(glob_match("g?t-*-mini", "gpt-4o-mini"));
        assert!(glob_match("a*b*c", "aXbYbZc"));
        assert!(!glob_match("gpt-*", "o3"));
        assert!(!glob_match("a*b", "aXbY"));
        assert!(is_literal("gpt-4o") && !is_literal("gpt-*"));
    }

    #[test]
    fn routing_prefers_an_explicit_provider_then_the_first_matching_pattern() {
        let ps = Providers::new(&[
            provider("groq", &["llama-*", "qwen/*"]),
            provider("openai", &["*"]),
        ])
        .unwrap();
        let r = ps.route("openai/gpt-4o").unwrap();
        assert_eq!(
            (r.provider.config.name.as_str(), r.model.as_str()),
            ("openai", "gpt-4o")
        );
        let r = ps.route("qwen/qwen3-32b").unwrap();
        assert_eq!(
            (r.provider.config.name.as_str(), r.model.as_str()),
            ("groq", "qwen/qwen3-32b")
        );
        let r = ps.route("groq/qwen/qwen3-32b").unwrap();
        assert_eq!(r.model, "qwen/qwen3-32b");
        assert_eq!(ps.route("o3").unwrap().provider.config.name, "openai");
        assert_eq!(
            ps.all()[0].base.endpoint("/chat/completions"),
            "/v1/chat/completions"
        );

        let only = Providers::new(&[provider("local", &["llama*"])]).unwrap();
        let err = only.route("gpt-4o").unwrap_err();
        assert_eq!(
            err,
            RouteError::UnknownModel {
                model: "gpt-4o".into(),
                providers: vec!["local".into()]
            }
        );
        assert!(err.to_string().contains("local"));
        assert_eq!(
            Providers::new(&[]).unwrap().route("x").unwrap_err(),
            RouteError::NoProviders
        );
        assert!(RouteError::NoProviders.to_string().contains("OPENAI_API_KEY"));
    }

    #[test]
    fn base_urls() {
        let b = BaseUrl::parse("https://api.openai.com/v1").unwrap();
        assert_eq!(
            (b.https, b.host.as_str(), b.port, b.path.as_str()),
            (true, "api.openai.com", 443, "/v1")
        );
        let b = BaseUrl::parse("http://[::1]:11434/").unwrap();
        assert_eq!(
            (b.host.as_str(), b.port, b.authority.as_str(), b.path.as_str()),
            ("::1", 11434, "[::1]:11434", "")
        );
        assert!(BaseUrl::parse("ftp://x").is_err());
    }

    #[test]
    fn an_ollama_base_url_is_the_server_root_and_a_kind_is_checked() {
        for url in [
            "http://127.0.0.1:11434",
            "http://127.0.0.1:11434/",
            "http://127.0.0.1:11434/v1",
            "http://127.0.0.1:11434/v1/",
            "http://127.0.0.1:11434/api",
        ] {
            let text = format!("name = \"o\"\nkind = \"ollama\"\nbase_url = {url:?}\n");
            let ps = Providers::new(&[crate::toml::from_str(&text).unwrap()]).unwrap();
            let p = &ps.all()[0];
            assert_eq!(
                (p.kind, p.base.endpoint("/api/chat")),
                (ProviderKind::Ollama, "/api/chat".into()),
                "{url}"
            );
        }
        let text = "name = \"o\"\nbase_url = \"http://127.0.0.1:11434/v1\"\n";
        let ps = Providers::new(&[crate::toml::from_str(text).unwrap()]).unwrap();
        assert_eq!(ps.all()[0].base.path, "/v1", "an openai kind keeps its path");
        let text = "name = \"g\"\nkind = \"palm\"\nbase_url = \"http://x\"\n";
        let err = Providers::new(&[crate::toml::from_str(text).unwrap()]).unwrap_err();
        assert!(
            err.to_string()
                .starts_with("providers.g.kind: \"palm\" is not a provider kind"),
            "{err}"
        );
    }

    #[test]
    fn api_keys_come_from_the_environment() {
        let ps = Providers::new(&[provider("keyed", &["*"])]).unwrap();
        let p = &ps.all()[0];
        // SAFETY: this test is the only user of this variable name.
        unsafe { std::env::remove_var("WASMHUB_TEST_KEY_keyed") };
        assert!(
            p.auth_header()
                .unwrap_err()
                .to_string()
                .contains("WASMHUB_TEST_KEY_keyed")
        );
        unsafe { std::env::set_var("WASMHUB_TEST_KEY_keyed", "sk-1\n") };
        let (name, value) = p.auth_header().unwrap().unwrap();
        assert_eq!(
            (name.as_str(), value.to_str().unwrap()),
            ("authorization", "Bearer sk-1")
        );
    }
}
