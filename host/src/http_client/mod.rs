//! The one outbound HTTP/1 + TLS client plumbing, shared by the plugins' wasi:http
//! requests (`runtime`) and the upstream model providers (`llm`): connecting to
//! already-resolved addresses with `TCP_NODELAY`, TLS by rustls (webpki roots,
//! ALPN `http/1.1`, DNS names and IP literals), and the hyper HTTP/1 handshake.
//!
//! Policy stays with the callers: which addresses may be dialed (the runtime's
//! grant and public-IP checks), timeouts, pooling and retries. Every step here is a
//! separate call so each caller can put its own deadline around it.
//!
//! - `tls`: the shared client configuration and server-name rules;
//! - `stream`: [`Stream`], plain TCP or TLS behind one type;
//! - `public`: [`is_public`], which resolved addresses are public, and
//!   [`document_address`], which a fetched document may come from;
//! - `document`: [`get_document`], one small JSON document by GET, its addresses
//!   checked by the caller's rule and its size bounded;
//! - `websocket`: a WebSocket client (RFC 6455) over a [`Stream`].

mod document;
mod public;
mod stream;
mod tls;
pub(crate) mod websocket;

pub(crate) use document::{DocumentError, DocumentUrl, UrlProblem, get_document};
pub(crate) use public::{document_address, is_public};

pub(crate) use stream::Stream;

use std::fmt;
use std::net::SocketAddr;
use tokio::net::TcpStream;

/// The tokio <-> hyper I/O adapter. hyper-util is not a dependency; wasmtime's
/// wasi-http crate (linked anyway) exports the same adapter, and this is the one
/// place the host imports it.
pub(crate) use wasmtime_wasi_http::io::TokioIo;

/// The client half of an HTTP/1 connection over a [`Stream`]; poll it (or spawn
/// it) for the requests on its sender to make progress.
pub(crate) type Connection<B> = hyper::client::conn::http1::Connection<TokioIo<Stream>, B>;

/// Why no connection could be opened.
#[derive(Debug)]
pub(crate) enum ConnectError {
    /// There was no address to dial.
    NoAddress,
    /// Every address refused or failed; this is the last failure.
    Tcp {
        addr: SocketAddr,
        source: std::io::Error,
    },
    /// The host is neither a DNS name nor an IP literal TLS can verify.
    ServerName {
        host: String,
        source: rustls::pki_types::InvalidDnsNameError,
    },
    /// The TLS handshake failed (certificate, protocol, or the connection broke).
    Tls(std::io::Error),
}

impl fmt::Display for ConnectError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            ConnectError::NoAddress => f.write_str("no address to connect to"),
            ConnectError::Tcp { addr, source } => write!(f, "{addr}: {source}"),
            ConnectError::ServerName { host, source } => write!(f, "{host}: {source}"),
            ConnectError::Tls(e) => write!(f, "TLS: {e}"),
        }
    }
}

impl std::error::Error for ConnectError {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        match self {
            ConnectError::NoAddress => None,
            ConnectError::Tcp { source, .. } => Some(source),
            ConnectError::ServerName { source, .. } => Some(source),
            ConnectError::Tls(e) => Some(e),
        }
    }
}

/// Connects to the first of `addrs` that accepts, in order, with `TCP_NODELAY`
/// (requests and small SSE frames must not wait for Nagle).
pub(crate) async fn connect_tcp(
    addrs: impl IntoIterator<Item = SocketAddr>,
) -> Result<TcpStream, ConnectError> {
    let mut last = ConnectError::NoAddress;
    for addr in addrs {
        match TcpStream::connect(addr).await {
            Ok(tcp) => {
                let _ = tcp.set_nodelay(true);
                return Ok(tcp);
            }
            Err(source) => last = ConnectError::Tcp { addr, source },
        }
    }
    Err(last)
}

/// The stream for requests on `tcp`: TLS for `tls_host` (a DNS name, or an IP
/// literal without brackets) when given, else plain TCP.
pub(crate) async fn wrap(tcp: TcpStream, tls_host: Option<&str>) -> Result<Stream, ConnectError> {
    let Some(host) = tls_host else {
        return Ok(Stream::Plain(tcp));
    };
    let name = tls::server_name(host).map_err(|source| ConnectError::ServerName {
        host: host.to_string(),
        source,
    })?;
    let tls = tls::connector()
        .connect(name, tcp)
        .await
        .map_err(ConnectError::Tls)?;
    Ok(Stream::Tls(Box::new(tls)))
}

/// The HTTP/1 client handshake on `stream`.
pub(crate) async fn handshake<B>(
    stream: Stream,
) -> hyper::Result<(hyper::client::conn::http1::SendRequest<B>, Connection<B>)>
where
    B: hyper::body::Body + 'static,
    B::Data: Send,
    B::Error: Into<Box<dyn std::error::Error + Send + Sync>>,
{
    hyper::client::conn::http1::handshake(TokioIo::new(stream)).await
}
