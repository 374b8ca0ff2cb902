//! One configured provider: its `[[providers]]` entry read (kind, base URL,
//! extra headers) and the API key header its requests carry.

use super::RouteError;
use super::base_url::{BaseUrl, BaseUrlError, GEMINI_VERSION};
use crate::config::{ProviderConfig, ProviderKind, UnknownKind};
use http::{HeaderName, HeaderValue};

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

impl Provider {
    /// Reads one `[[providers]]` entry: its kind, its base URL in the form the
    /// kind's API wants, its extra headers.
    pub(super) fn configure(config: &ProviderConfig) -> Result<Provider, ProviderError> {
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
            let name = HeaderName::try_from(name.as_str()).map_err(|source| ProviderError::HeaderName {
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
        Ok(Provider {
            config: config.clone(),
            kind,
            base,
            headers,
        })
    }

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
