//! Issuer documents (metadata, key sets) over the outbound HTTP client: https to
//! public addresses (the ones dialed are the ones checked, so DNS cannot change
//! its answer in between), at most `max_bytes` within `timeout`. The rule is the
//! client metadata documents' (`http_client::document_address`): an issuer entry
//! may allow private, loopback and link-local addresses (`allow_private`, an
//! identity provider inside the operator's network), and then plain http too
//! (`allow_http`, a local provider in tests), so plain http never reaches a
//! public address.

use crate::http_client::{self, ConnectError, DocumentError, DocumentUrl};
use bytes::Bytes;
use http::StatusCode;
use std::fmt;
use std::net::IpAddr;
use std::time::Duration;

/// Gets a document: the network in production, a script in tests.
#[async_trait::async_trait]
pub(crate) trait Fetch: Send + Sync {
    /// The body of a 200 answer to `GET url`, bounded in size and time.
    async fn get(&self, url: &str) -> Result<Bytes, FetchError>;
}

/// Why a document could not be fetched.
#[derive(Debug)]
pub(crate) enum FetchError {
    /// Not an https URL (or http where allowed) with a host.
    BadUrl,
    /// The host does not resolve.
    Resolve(std::io::Error),
    /// It resolves to an address the policy refuses.
    Address(IpAddr),
    /// No connection.
    Connect(ConnectError),
    /// The HTTP exchange failed.
    Http(hyper::Error),
    /// Not 200.
    Status(StatusCode),
    /// Larger than the limit.
    TooLarge { max_bytes: usize },
    /// Slower than the limit.
    Timeout { after: Duration },
}

impl fmt::Display for FetchError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            FetchError::BadUrl => {
                f.write_str("not an https URL with a host (http only with the issuer's allow_http)")
            }
            FetchError::Resolve(e) => write!(f, "its host does not resolve: {e}"),
            FetchError::Address(ip) => write!(
                f,
                "its host resolves to {ip}, not a public address (the issuer's allow_private)"
            ),
            FetchError::Connect(e) => write!(f, "cannot connect: {e}"),
            FetchError::Http(e) => write!(f, "the request failed: {e}"),
            FetchError::Status(s) => write!(f, "it answered {s}"),
            FetchError::TooLarge { max_bytes } => write!(f, "it is larger than {max_bytes} bytes"),
            FetchError::Timeout { after } => write!(f, "no answer within {} ms", after.as_millis()),
        }
    }
}

impl std::error::Error for FetchError {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        match self {
            FetchError::Resolve(e) => Some(e),
            FetchError::Connect(e) => Some(e),
            FetchError::Http(e) => Some(e),
            _ => None,
        }
    }
}

/// The network [`Fetch`].
#[derive(Debug, Clone)]
pub(crate) struct HttpFetch {
    /// Plain http URLs allowed (the config makes sure `private` is too).
    pub(crate) http: bool,
    /// Private, loopback and link-local addresses allowed.
    pub(crate) private: bool,
    pub(crate) max_bytes: usize,
    pub(crate) timeout: Duration,
}

struct Target<'u> {
    tls: bool,
    host: &'u str,
    port: u16,
    authority: &'u str,
    path: &'u str,
}

fn target(url: &str, http: bool) -> Result<Target<'_>, FetchError> {
    let (tls, rest) = match (url.strip_prefix("https://"), url.strip_prefix("http://")) {
        (Some(rest), _) => (true, rest),
        (None, Some(rest)) if http => (false, rest),
        _ => return Err(FetchError::BadUrl),
    };
    let (authority, path) = rest.split_at(rest.find('/').unwrap_or(rest.len()));
    if authority.is_empty() || authority.contains('@') || url.contains('#') {
        return Err(FetchError::BadUrl);
    }
    let (host, port) = match authority.strip_prefix('[') {
        Some(v6) => {
            let (h, tail) = v6.split_once(']').ok_or(FetchError::BadUrl)?;
            (h, tail.strip_prefix(':'))
        }
        None => match authority.rsplit_once(':') {
            Some((h, p)) => (h, Some(p)),
            None => (authority, None),
        },
    };
    let port = match port {
        Some(p) => p.parse().map_err(|_| FetchError::BadUrl)?,
        None if tls => 443,
        None => 80,
    };
    let path = if path.is_empty() { "/" } else { path };
    Ok(Target {
        tls,
        host,
        port,
        authority,
        path,
    })
}

#[async_trait::async_trait]
impl Fetch for HttpFetch {
    async fn get(&self, url: &str) -> Result<Bytes, FetchError> {
        let to = target(url, self.http)?;
        tokio::time::timeout(self.timeout, self.fetch(&to))
            .await
            .map_err(|_| FetchError::Timeout { after: self.timeout })?
    }
}

impl HttpFetch {
    async fn fetch(&self, to: &Target<'_>) -> Result<Bytes, FetchError> {
        let url = DocumentUrl {
            tls: to.tls,
            host: to.host,
            port: to.port,
            authority: to.authority,
            target: to.path,
        };
        let private = self.private;
        http_client::get_document(
            &url,
            |ip| http_client::document_address(ip, private),
            self.max_bytes,
        )
        .await
        .map_err(|e| match e {
            DocumentError::Target => FetchError::BadUrl,
            DocumentError::Resolve(e) => FetchError::Resolve(e),
            DocumentError::Refused(ip) => FetchError::Address(ip),
            DocumentError::Connect(e) => FetchError::Connect(e),
            DocumentError::Http(e) => FetchError::Http(e),
            DocumentError::Status(s) => FetchError::Status(s),
            DocumentError::TooLarge { max_bytes } => FetchError::TooLarge { max_bytes },
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_https_unless_http_is_allowed() {
        assert!(matches!(
            target("http://127.0.0.1:9/jwks", false),
            Err(FetchError::BadUrl)
        ));
        let t = target("http://127.0.0.1:9/jwks", true).unwrap();
        assert!(!t.tls && t.host == "127.0.0.1" && t.port == 9 && t.path == "/jwks");
        let t = target("https://id.example.com", false).unwrap();
        assert!(t.tls && t.port == 443 && t.path == "/" && t.authority == "id.example.com");
        let t = target("https://[::1]:8443/k?x=1", false).unwrap();
        assert!(t.host == "::1" && t.port == 8443 && t.path == "/k?x=1");
        for bad in [
            "ftp://x/",
            "https://",
            "https://u@x/",
            "https://x/#f",
            "https://x:port/",
        ] {
            assert!(matches!(target(bad, true), Err(FetchError::BadUrl)), "{bad}");
        }
    }

    #[tokio::test]
    async fn a_private_address_is_refused_unless_allowed() {
        let mut fetch = HttpFetch {
            http: true,
            private: false,
            max_bytes: 1024,
            timeout: Duration::from_secs(5),
        };
        for url in ["https://127.0.0.1:9/jwks", "http://10.0.0.1:9/jwks"] {
            let err = fetch.get(url).await.unwrap_err();
            assert!(matches!(err, FetchError::Address(_)), "{url}: {err}");
            assert!(err.to_string().contains("allow_private"), "{err}");
        }
        // Allowed: the address passes and the fetch goes on (to whatever port 9
        // of loopback answers, most likely nothing).
        fetch.private = true;
        let err = fetch.get("http://127.0.0.1:9/jwks").await.unwrap_err();
        assert!(
            !matches!(err, FetchError::Address(_) | FetchError::BadUrl),
            "{err}"
        );
    }
}
