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

#[async_trait::async_trait]
impl Fetch for HttpFetch {
    async fn get(&self, url: &str) -> Result<Bytes, FetchError> {
        let to = DocumentUrl::parse(url, self.http).map_err(|_| FetchError::BadUrl)?;
        tokio::time::timeout(self.timeout, self.fetch(&to))
            .await
            .map_err(|_| FetchError::Timeout { after: self.timeout })?
    }
}

impl HttpFetch {
    async fn fetch(&self, to: &DocumentUrl<'_>) -> Result<Bytes, FetchError> {
        let private = self.private;
        http_client::get_document(
            to,
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
