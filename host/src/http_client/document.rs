//! One small document fetched by GET over the outbound client (a client's
//! metadata document, an identity provider's key set): every address the host
//! resolves to is checked by the caller's rule before any is dialed, and the
//! answer must be a 200 within the caller's size bound. The caller puts its own
//! deadline around it and keeps its own URL rules.

use super::{ConnectError, connect_tcp, handshake, wrap};
use bytes::Bytes;
use http::{Request, StatusCode, header};
use http_body_util::{BodyExt, Empty, Limited};
use std::net::{IpAddr, SocketAddr};

/// Where a document is: the connection and the request's target.
#[derive(Debug, PartialEq, Eq)]
pub(crate) struct DocumentUrl<'u> {
    /// https (else plain http).
    pub tls: bool,
    /// The host to resolve (an IPv6 literal without its brackets).
    pub host: &'u str,
    pub port: u16,
    /// The authority as written (the `Host` header).
    pub authority: &'u str,
    /// The path and query.
    pub target: &'u str,
}

/// Why a URL names no document.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum UrlProblem {
    /// Not `https://` (nor `http://` where plain http is allowed).
    Scheme,
    /// No host, or user info before it.
    Host,
    /// A fragment (`#...`).
    Fragment,
    /// An IPv6 literal without its closing bracket.
    Ipv6,
    /// A port that is not a number.
    Port,
}

impl UrlProblem {
    /// What the URL must be instead, for an error message.
    pub(crate) fn rule(self) -> &'static str {
        match self {
            UrlProblem::Scheme => "it must be an https URL",
            UrlProblem::Host => "a host without user info",
            UrlProblem::Fragment => "no fragment",
            UrlProblem::Ipv6 => "a bad IPv6 literal",
            UrlProblem::Port => "a bad port",
        }
    }
}

impl<'u> DocumentUrl<'u> {
    /// Splits `url` (`https://`, or `http://` when `http`): no user info, no
    /// fragment; the port defaults by scheme and an empty path is `/`.
    pub(crate) fn parse(url: &'u str, http: bool) -> Result<DocumentUrl<'u>, UrlProblem> {
        let (tls, rest) = match (url.strip_prefix("https://"), url.strip_prefix("http://")) {
            (Some(rest), _) => (true, rest),
            (None, Some(rest)) if http => (false, rest),
            _ => return Err(UrlProblem::Scheme),
        };
        if url.contains('#') {
            return Err(UrlProblem::Fragment);
        }
        let (authority, target) = rest.split_at(rest.find('/').unwrap_or(rest.len()));
        if authority.is_empty() || authority.contains('@') {
            return Err(UrlProblem::Host);
        }
        let (host, port) = match authority.strip_prefix('[') {
            Some(v6) => {
                let (h, tail) = v6.split_once(']').ok_or(UrlProblem::Ipv6)?;
                (h, tail.strip_prefix(':'))
            }
            None => match authority.rsplit_once(':') {
                Some((h, p)) => (h, Some(p)),
                None => (authority, None),
            },
        };
        let port = match port {
            Some(p) => p.parse().map_err(|_| UrlProblem::Port)?,
            None if tls => 443,
            None => 80,
        };
        Ok(DocumentUrl {
            tls,
            host,
            port,
            authority,
            target: if target.is_empty() { "/" } else { target },
        })
    }
}

/// Why a document could not be fetched.
#[derive(Debug)]
pub(crate) enum DocumentError {
    /// The path and query are not a valid request target.
    Target,
    /// The host does not resolve.
    Resolve(std::io::Error),
    /// It resolves to an address the caller's rule refuses.
    Refused(IpAddr),
    /// No connection.
    Connect(ConnectError),
    /// The HTTP exchange failed.
    Http(hyper::Error),
    /// Not 200.
    Status(StatusCode),
    /// Larger than the caller's bound.
    TooLarge { max_bytes: usize },
}

/// GETs `to` as JSON if every address its host resolves to passes `allowed`, and
/// its body is at most `max_bytes`.
pub(crate) async fn get_document(
    to: &DocumentUrl<'_>,
    allowed: impl Fn(IpAddr) -> bool,
    max_bytes: usize,
) -> Result<Bytes, DocumentError> {
    let addrs: Vec<SocketAddr> = tokio::net::lookup_host((to.host, to.port))
        .await
        .map_err(DocumentError::Resolve)?
        .collect();
    if let Some(bad) = addrs.iter().find(|a| !allowed(a.ip())) {
        return Err(DocumentError::Refused(bad.ip()));
    }
    let req = Request::get(to.target)
        .header(header::HOST, to.authority)
        .header(header::ACCEPT, "application/json")
        .body(Empty::<Bytes>::new())
        .map_err(|_| DocumentError::Target)?;
    let tcp = connect_tcp(addrs).await.map_err(DocumentError::Connect)?;
    let stream = wrap(tcp, to.tls.then_some(to.host))
        .await
        .map_err(DocumentError::Connect)?;
    let (mut sender, conn) = handshake(stream).await.map_err(DocumentError::Http)?;
    tokio::spawn(conn);
    let resp = sender.send_request(req).await.map_err(DocumentError::Http)?;
    if resp.status() != StatusCode::OK {
        return Err(DocumentError::Status(resp.status()));
    }
    let body = Limited::new(resp.into_body(), max_bytes)
        .collect()
        .await
        .map_err(|e| match e.downcast::<hyper::Error>() {
            Ok(e) => DocumentError::Http(*e),
            Err(_) => DocumentError::TooLarge { max_bytes },
        })?;
    Ok(body.to_bytes())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn urls_split_into_connection_and_target() {
        assert_eq!(
            DocumentUrl::parse("http://127.0.0.1:9/jwks", false),
            Err(UrlProblem::Scheme)
        );
        let u = DocumentUrl::parse("http://127.0.0.1:9/jwks", true).unwrap();
        assert!(!u.tls && u.host == "127.0.0.1" && u.port == 9 && u.target == "/jwks");
        let u = DocumentUrl::parse("https://id.example.com", false).unwrap();
        assert!(u.tls && u.port == 443 && u.target == "/" && u.authority == "id.example.com");
        let u = DocumentUrl::parse("https://[::1]:8443/k?x=1", false).unwrap();
        assert!(u.host == "::1" && u.port == 8443 && u.target == "/k?x=1");
        for (bad, problem) in [
            ("ftp://x/", UrlProblem::Scheme),
            ("https://", UrlProblem::Host),
            ("https:///p", UrlProblem::Host),
            ("https://u@x/", UrlProblem::Host),
            ("https://x/#f", UrlProblem::Fragment),
            ("https://[::1/", UrlProblem::Ipv6),
            ("https://x:port/", UrlProblem::Port),
        ] {
            assert_eq!(DocumentUrl::parse(bad, true), Err(problem), "{bad}");
        }
    }
}
