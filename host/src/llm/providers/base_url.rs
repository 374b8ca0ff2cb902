//! A provider's `base_url`: parsed once into what the client needs, and put
//! in the form each kind's API wants (Ollama's server root, Gemini's version).

use http::Uri;

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
    pub(super) fn server_root(mut self) -> BaseUrl {
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
    pub(super) fn versioned(mut self, version: &str) -> BaseUrl {
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
pub(super) const GEMINI_VERSION: &str = "/v1beta";
