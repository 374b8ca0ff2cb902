//! Upstream providers: which provider serves a model name, and the headers (API key,
//! extra headers) every request to it carries.
//!
//! A model is addressed as `provider/model` (explicit) or by name alone, in which case
//! the first provider, in configuration order, with a matching glob pattern serves it.
//! Model names may contain `/` themselves (`qwen/qwen3-32b` on Groq), so the prefix
//! counts as a provider only when a provider of that name exists. One provider's
//! entry is read in [`provider`], its base URL in [`base_url`].

mod base_url;
mod provider;
#[cfg(test)]
mod tests;

pub use base_url::{BaseUrl, BaseUrlError};
pub use provider::{KeyError, Provider, ProviderError};

use crate::config::ProviderConfig;
use std::sync::Arc;

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

impl Providers {
    pub(crate) fn new(configs: &[ProviderConfig]) -> Result<Providers, ProviderError> {
        let list = configs.iter().map(|c| Provider::configure(c).map(Arc::new));
        Ok(Providers {
            list: list.collect::<Result<_, _>>()?,
        })
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
