//! Client ID metadata documents (draft-ietf-oauth-client-id-metadata-document, as
//! the MCP 2025-11-25 authorization spec uses them): a `client_id` that is an https
//! URL names a JSON document the client publishes (`client_id`, `client_name`,
//! `redirect_uris`). The hub fetches it through the outbound HTTP client under its
//! own policy: https only, every resolved address public unless
//! `oauth.client_metadata_private` (the addresses checked are the ones dialed, so
//! DNS cannot change its answer in between), at most `oauth.client_metadata_max_kb`
//! within `oauth.client_metadata_timeout_ms`, and cached for
//! `oauth.client_metadata_cache_secs`.

use super::client::{Bounds, ClientInfo};
use super::redirect::{self, BadRedirect};
use crate::http_client::{self, ConnectError, DocumentError, DocumentUrl};
use bytes::Bytes;
use http::StatusCode;
use serde::Deserialize;
use std::collections::HashMap;
use std::net::IpAddr;
use std::sync::Mutex;
use std::time::{Duration, Instant};

/// The fetch policy, from `[oauth]`.
#[derive(Debug, Clone)]
pub(crate) struct DocPolicy {
    pub enabled: bool,
    pub private: bool,
    pub http: bool,
    pub max_bytes: usize,
    pub timeout: Duration,
    pub cache_for: Duration,
    /// Most documents cached at once (`oauth.client_metadata_max_cached`).
    pub max_cached: usize,
    /// What a document may list, as for a registration.
    pub bounds: Bounds,
}

impl DocPolicy {
    pub(crate) fn from_config(c: &crate::config::OAuthConfig) -> DocPolicy {
        DocPolicy {
            enabled: c.client_metadata_documents,
            private: c.client_metadata_private,
            http: c.client_metadata_http,
            max_bytes: (c.client_metadata_max_kb as usize).saturating_mul(1024),
            timeout: Duration::from_millis(c.client_metadata_timeout_ms),
            cache_for: Duration::from_secs(c.client_metadata_cache_secs),
            max_cached: c.client_metadata_max_cached,
            bounds: Bounds::from_config(c),
        }
    }
}

/// Why a metadata document cannot be used.
#[derive(Debug)]
pub(crate) enum DocError {
    /// The client id is not a URL a document may live at.
    BadUrl(&'static str),
    /// The host does not resolve.
    Resolve(std::io::Error),
    /// It resolves to an address that is not public.
    Private(IpAddr),
    /// No connection.
    Connect(ConnectError),
    /// The HTTP exchange failed.
    Http(hyper::Error),
    /// Not 200.
    Status(StatusCode),
    /// Larger than `oauth.client_metadata_max_kb`.
    TooLarge { max_bytes: usize },
    /// Slower than `oauth.client_metadata_timeout_ms`.
    Timeout { after: Duration },
    /// Not JSON of the right shape.
    Json(serde_json::Error),
    /// The document names another `client_id`.
    OtherClientId,
    /// A redirect URI it lists cannot be registered.
    Redirect(BadRedirect),
    /// It lists no redirect URI.
    NoRedirectUris,
    /// It lists more redirect URIs than `oauth.max_redirect_uris`.
    TooManyRedirectUris { max: usize },
    /// A redirect URI is longer than `oauth.max_redirect_uri_bytes`.
    LongRedirectUri { max_bytes: usize },
    /// `oauth.client_metadata_documents` is off.
    Disabled,
}

impl std::fmt::Display for DocError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            DocError::BadUrl(why) => write!(f, "the client id is not a metadata document URL: {why}"),
            DocError::Resolve(e) => write!(f, "its host does not resolve: {e}"),
            DocError::Private(ip) => write!(
                f,
                "its host resolves to {ip}, not a public address (oauth.client_metadata_private)"
            ),
            DocError::Connect(e) => write!(f, "cannot connect: {e}"),
            DocError::Http(e) => write!(f, "the request failed: {e}"),
            DocError::Status(s) => write!(f, "it answered {s}"),
            DocError::TooLarge { max_bytes } => write!(
                f,
                "it is larger than {} KiB (oauth.client_metadata_max_kb)",
                max_bytes / 1024
            ),
            DocError::Timeout { after } => write!(
                f,
                "no answer within {} ms (oauth.client_metadata_timeout_ms)",
                after.as_millis()
            ),
            DocError::Json(e) => write!(f, "it is not a client metadata JSON object: {e}"),
            DocError::OtherClientId => f.write_str("its client_id is not the URL it was fetched from"),
            DocError::Redirect(e) => e.fmt(f),
            DocError::NoRedirectUris => f.write_str("it lists no redirect_uris"),
            DocError::TooManyRedirectUris { max } => {
                write!(f, "it lists more than {max} redirect_uris (oauth.max_redirect_uris)")
            }
            DocError::LongRedirectUri { max_bytes } => write!(
                f,
                "a redirect URI is longer than {max_bytes} bytes (oauth.max_redirect_uri_bytes)"
            ),
            DocError::Disabled => f.write_str(
                "this hub accepts no client metadata documents (oauth.client_metadata_documents); register instead",
            ),
        }
    }
}

impl std::error::Error for DocError {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        match self {
            DocError::Resolve(e) => Some(e),
            DocError::Connect(e) => Some(e),
            DocError::Http(e) => Some(e),
            DocError::Json(e) => Some(e),
            DocError::Redirect(e) => Some(e),
            _ => None,
        }
    }
}

/// Whether `client_id` looks like a metadata document URL at all (the others are
/// registered ids).
pub(crate) fn is_url(client_id: &str) -> bool {
    client_id.starts_with("https://") || client_id.starts_with("http://")
}

/// Where the document of `url` is: a document URL (`DocumentUrl::parse`) that
/// also has a path, and no spaces, control characters or dot segments (the URL is
/// the client's id, compared as written).
fn locate<'u>(url: &'u str, policy: &DocPolicy) -> Result<DocumentUrl<'u>, DocError> {
    let located = DocumentUrl::parse(url, policy.http).map_err(|p| DocError::BadUrl(p.rule()))?;
    if url.chars().any(|c| c.is_whitespace() || c.is_control()) {
        return Err(DocError::BadUrl("no spaces or control characters"));
    }
    if located.target == "/" || located.target.starts_with("/?") {
        return Err(DocError::BadUrl("it needs a path"));
    }
    if located
        .target
        .split(['/', '?'])
        .any(|seg| seg == "." || seg == "..")
    {
        return Err(DocError::BadUrl("no . or .. path segments"));
    }
    Ok(located)
}

/// The document's fields the hub reads.
#[derive(Deserialize)]
struct Document {
    client_id: String,
    #[serde(default)]
    client_name: Option<String>,
    #[serde(default)]
    redirect_uris: Vec<String>,
}

/// The client a document fetched from `url` describes, within `bounds` (a name
/// longer than the bound is cut, as it is only shown).
fn client_of(url: &str, body: &[u8], bounds: Bounds) -> Result<ClientInfo, DocError> {
    let doc: Document = serde_json::from_slice(body).map_err(DocError::Json)?;
    if doc.client_id != url {
        return Err(DocError::OtherClientId);
    }
    if doc.redirect_uris.is_empty() {
        return Err(DocError::NoRedirectUris);
    }
    if doc.redirect_uris.len() > bounds.redirect_uris {
        return Err(DocError::TooManyRedirectUris {
            max: bounds.redirect_uris,
        });
    }
    for uri in &doc.redirect_uris {
        if uri.len() > bounds.uri_bytes {
            return Err(DocError::LongRedirectUri {
                max_bytes: bounds.uri_bytes,
            });
        }
        redirect::check_registrable(uri).map_err(DocError::Redirect)?;
    }
    let name: String = doc
        .client_name
        .unwrap_or_default()
        .chars()
        .filter(|c| !c.is_control())
        .take(bounds.name_chars)
        .collect();
    Ok(ClientInfo {
        client_id: doc.client_id,
        client_name: name,
        redirect_uris: doc.redirect_uris,
        client_id_issued_at: 0,
    })
}

/// Fetched documents, by URL, with when each was fetched.
pub(crate) struct MetadataDocs {
    policy: DocPolicy,
    cache: Mutex<HashMap<String, (Instant, ClientInfo)>>,
}

impl MetadataDocs {
    pub(crate) fn new(policy: DocPolicy) -> MetadataDocs {
        MetadataDocs {
            policy,
            cache: Mutex::new(HashMap::new()),
        }
    }

    /// The client the document at `url` describes: cached, or fetched now.
    pub(crate) async fn client(&self, url: &str) -> Result<ClientInfo, DocError> {
        if !self.policy.enabled {
            return Err(DocError::Disabled);
        }
        if let Some(hit) = self.cached(url) {
            return Ok(hit);
        }
        let location = locate(url, &self.policy)?;
        let body = tokio::time::timeout(self.policy.timeout, self.fetch(&location))
            .await
            .map_err(|_| DocError::Timeout {
                after: self.policy.timeout,
            })??;
        let client = client_of(url, &body, self.policy.bounds)?;
        self.remember(url, &client);
        Ok(client)
    }

    fn cached(&self, url: &str) -> Option<ClientInfo> {
        let cache = self.cache.lock().unwrap_or_else(|p| p.into_inner());
        let (at, client) = cache.get(url)?;
        (at.elapsed() < self.policy.cache_for).then(|| client.clone())
    }

    fn remember(&self, url: &str, client: &ClientInfo) {
        let mut cache = self.cache.lock().unwrap_or_else(|p| p.into_inner());
        let ttl = self.policy.cache_for;
        cache.retain(|_, (at, _)| at.elapsed() < ttl);
        if cache.len() >= self.policy.max_cached {
            // Still full of fresh entries: start over rather than grow without bound.
            cache.clear();
        }
        cache.insert(url.to_string(), (Instant::now(), client.clone()));
    }

    async fn fetch(&self, to: &DocumentUrl<'_>) -> Result<Bytes, DocError> {
        let private = self.policy.private;
        http_client::get_document(
            to,
            |ip| http_client::document_address(ip, private),
            self.policy.max_bytes,
        )
        .await
        .map_err(|e| match e {
            DocumentError::Target => DocError::BadUrl("a path that is not a valid request target"),
            DocumentError::Resolve(e) => DocError::Resolve(e),
            DocumentError::Refused(ip) => DocError::Private(ip),
            DocumentError::Connect(e) => DocError::Connect(e),
            DocumentError::Http(e) => DocError::Http(e),
            DocumentError::Status(s) => DocError::Status(s),
            DocumentError::TooLarge { max_bytes } => DocError::TooLarge { max_bytes },
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn policy(http: bool) -> DocPolicy {
        DocPolicy::from_config(&crate::config::OAuthConfig {
            client_metadata_private: http,
            client_metadata_http: http,
            ..Default::default()
        })
    }

    #[test]
    fn only_https_urls_with_a_path_name_documents() {
        let l = locate("https://app.example/oauth/client.json", &policy(false)).unwrap();
        assert_eq!(
            (l.tls, l.host, l.port, l.target),
            (true, "app.example", 443, "/oauth/client.json")
        );
        let l = locate("https://[::1]:8443/c", &policy(false)).unwrap();
        assert_eq!((l.host, l.port), ("::1", 8443));
        for bad in [
            "http://app.example/c",
            "https://app.example",
            "https://app.example/",
            "https://app.example/c#x",
            "https://u@app.example/c",
            "https://app.example/a/../c",
            "https://app.example:x/c",
            "ftp://app.example/c",
        ] {
            assert!(
                matches!(locate(bad, &policy(false)), Err(DocError::BadUrl(_))),
                "{bad}"
            );
        }
        assert!(locate("http://127.0.0.1:9/c", &policy(true)).is_ok());
        assert!(is_url("https://a/b") && !is_url("client_123"));
    }

    #[test]
    fn a_document_must_name_itself_and_registrable_redirects() {
        let url = "https://app.example/client.json";
        let bounds = policy(false).bounds;
        let client_of = |url: &str, body: &[u8]| client_of(url, body, bounds);
        let ok = client_of(
            url,
            br#"{"client_id": "https://app.example/client.json", "client_name": "App\u0007", "redirect_uris": ["https://app.example/cb"]}"#,
        )
        .unwrap();
        assert_eq!(ok.client_name, "App");
        assert_eq!(ok.redirect_uris, ["https://app.example/cb"]);
        let other = client_of(
            url,
            br#"{"client_id": "https://evil.example/c", "redirect_uris": ["https://a.example/cb"]}"#,
        );
        assert!(matches!(other, Err(DocError::OtherClientId)));
        let none = client_of(url, br#"{"client_id": "https://app.example/client.json"}"#);
        assert!(matches!(none, Err(DocError::NoRedirectUris)));
        let bad = client_of(url, br#"{"client_id": "https://app.example/client.json", "redirect_uris": ["http://evil.example/cb"]}"#);
        assert!(matches!(bad, Err(DocError::Redirect(_))));
        assert!(matches!(client_of(url, b"[]"), Err(DocError::Json(_))));
    }

    #[test]
    fn a_document_is_held_to_the_registration_bounds() {
        let url = "https://app.example/client.json";
        let bounds = Bounds {
            redirect_uris: 2,
            uri_bytes: 30,
            name_chars: 3,
        };
        let doc = |name: &str, uris: &[&str]| {
            serde_json::json!({"client_id": url, "client_name": name, "redirect_uris": uris}).to_string()
        };
        let ok = client_of(
            url,
            doc("Application", &["https://app.example/cb"]).as_bytes(),
            bounds,
        )
        .unwrap();
        assert_eq!(
            ok.client_name, "App",
            "a long name is cut to oauth.max_client_name_chars"
        );
        let many = doc(
            "A",
            &[
                "https://a.example/1",
                "https://a.example/2",
                "https://a.example/3",
            ],
        );
        let err = client_of(url, many.as_bytes(), bounds).unwrap_err();
        assert!(matches!(err, DocError::TooManyRedirectUris { max: 2 }), "{err}");
        assert!(err.to_string().contains("oauth.max_redirect_uris"), "{err}");
        let long = doc("A", &["https://app.example/a-rather-long-callback"]);
        let err = client_of(url, long.as_bytes(), bounds).unwrap_err();
        assert!(
            err.to_string()
                .contains("30 bytes (oauth.max_redirect_uri_bytes)"),
            "{err}"
        );
    }

    #[tokio::test]
    async fn private_addresses_are_refused_unless_configured() {
        let docs = MetadataDocs::new(DocPolicy {
            http: false,
            ..policy(false)
        });
        let err = docs.client("https://127.0.0.1:9/client.json").await.unwrap_err();
        assert!(matches!(err, DocError::Private(_)), "{err}");
        assert!(err.to_string().contains("oauth.client_metadata_private"), "{err}");
    }
}
