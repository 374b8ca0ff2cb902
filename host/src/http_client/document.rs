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
