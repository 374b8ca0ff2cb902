//! A WebSocket client (RFC 6455) over the one HTTP/1 + TLS plumbing: the opening
//! handshake is an HTTP/1.1 `GET` with `Upgrade: websocket` through hyper, whose
//! `101 Switching Protocols` answer is checked (`Sec-WebSocket-Accept`, the
//! subprotocol) before the upgraded connection is split into a [`Reader`] of
//! messages and a [`Writer`] of frames (`frame`). No extensions are offered, so
//! none can be agreed. Used by `mcp_client` for `transport = "websocket"`.

mod frame;
mod sha1;

pub(crate) use frame::{Incoming, Reader};

use super::{Stream, TokioIo};
use bytes::Bytes;
use http::{HeaderMap, HeaderValue, Request, StatusCode, header};
use http_body_util::Empty;
use std::fmt;
use std::pin::Pin;
use std::task::{Context, Poll};
use tokio::io::{AsyncWriteExt, ReadHalf, WriteHalf};

/// The upgraded connection as tokio I/O: hyper's `Upgraded` speaks hyper's I/O
/// traits, and the shared `TokioIo` adapter only goes the other way.
pub(crate) struct Upgraded(hyper::upgrade::Upgraded);

impl tokio::io::AsyncRead for Upgraded {
    fn poll_read(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &mut tokio::io::ReadBuf<'_>,
    ) -> Poll<std::io::Result<()>> {
        let room = buf.initialize_unfilled();
        let mut read = hyper::rt::ReadBuf::new(room);
        let polled = hyper::rt::Read::poll_read(Pin::new(&mut self.0), cx, read.unfilled());
        let n = read.filled().len();
        buf.advance(n);
        polled
    }
}

impl tokio::io::AsyncWrite for Upgraded {
    fn poll_write(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        data: &[u8],
    ) -> Poll<std::io::Result<usize>> {
        hyper::rt::Write::poll_write(Pin::new(&mut self.0), cx, data)
    }

    fn poll_flush(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<std::io::Result<()>> {
        hyper::rt::Write::poll_flush(Pin::new(&mut self.0), cx)
    }

    fn poll_shutdown(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<std::io::Result<()>> {
        hyper::rt::Write::poll_shutdown(Pin::new(&mut self.0), cx)
    }
}

/// The RFC's GUID the accept key is derived with.
const GUID: &str = "258EAFA5-E914-47DA-95CA-C5AB0DC85B11";

/// Why the WebSocket failed.
#[derive(Debug)]
pub(crate) enum WsError {
    /// Reading or writing the connection failed (or it ended).
    Io(std::io::Error),
    /// The HTTP handshake failed.
    Http(hyper::Error),
    /// The server did not switch protocols: its status.
    Refused(StatusCode),
    /// The server's `101` is not a valid answer to ours: what is wrong.
    Handshake(&'static str),
    /// The server broke the framing rules: which.
    Protocol(&'static str),
    /// A message larger than the bound.
    TooLarge {
        /// The bound, in bytes.
        limit: usize,
    },
}

impl fmt::Display for WsError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            WsError::Io(e) => write!(f, "the WebSocket connection failed: {e}"),
            WsError::Http(e) => write!(f, "the WebSocket handshake failed: {e}"),
            WsError::Refused(status) => {
                write!(
                    f,
                    "the server answered the WebSocket handshake with HTTP {status}"
                )
            }
            WsError::Handshake(why) => write!(f, "the WebSocket handshake failed: {why}"),
            WsError::Protocol(what) => write!(f, "the server broke the WebSocket protocol: {what}"),
            WsError::TooLarge { limit } => {
                write!(f, "the server sent a WebSocket message larger than {limit} bytes")
            }
        }
    }
}

impl std::error::Error for WsError {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        match self {
            WsError::Io(e) => Some(e),
            WsError::Http(e) => Some(e),
            _ => None,
        }
    }
}

/// Where to connect and what to send.
pub(crate) struct Target<'a> {
    /// The `Host` header (the URL's authority).
    pub authority: &'a str,
    /// The URL's path and query.
    pub path: &'a str,
    /// Extra headers (credentials).
    pub headers: &'a HeaderMap,
    /// The subprotocol to ask for (`Sec-WebSocket-Protocol`), if any.
    pub protocol: Option<&'a str>,
    /// Largest message read, in bytes.
    pub max_message: usize,
}

/// Opens a WebSocket over `stream` (already connected, TLS when `wss`).
pub(crate) async fn connect(
    stream: Stream,
    target: Target<'_>,
) -> Result<(Reader<ReadHalf<Upgraded>>, Writer), WsError> {
    let (mut sender, connection) = hyper::client::conn::http1::handshake(TokioIo::new(stream))
        .await
        .map_err(WsError::Http)?;
    tokio::spawn(connection.with_upgrades());
    let mut nonce = [0u8; 16];
    getrandom::fill(&mut nonce).expect("the OS random source is available");
    let key = crate::base64::encode(&nonce);
    let mut request = Request::get(target.path)
        .header(header::HOST, target.authority)
        .header(header::CONNECTION, "Upgrade")
        .header(header::UPGRADE, "websocket")
        .header(header::SEC_WEBSOCKET_VERSION, "13")
        .header(header::SEC_WEBSOCKET_KEY, key.as_str())
        .body(Empty::<Bytes>::new())
        .map_err(|_| WsError::Handshake("the URL is not a valid request target"))?;
    let headers = request.headers_mut();
    for (name, value) in target.headers {
        headers.insert(name, value.clone());
    }
    if let Some(protocol) = target.protocol {
        let value = HeaderValue::from_str(protocol).map_err(|_| WsError::Handshake("bad subprotocol"))?;
        headers.insert(header::SEC_WEBSOCKET_PROTOCOL, value);
    }
    let response = sender.send_request(request).await.map_err(WsError::Http)?;
    check_switch(&response, &key, target.protocol)?;
    let upgraded = hyper::upgrade::on(response).await.map_err(WsError::Http)?;
    let (read, write) = tokio::io::split(Upgraded(upgraded));
    Ok((Reader::new(read, target.max_message), Writer { inner: write }))
}

/// The server's answer switches to WebSocket with our key (and our subprotocol).
fn check_switch<B>(response: &http::Response<B>, key: &str, protocol: Option<&str>) -> Result<(), WsError> {
    if response.status() != StatusCode::SWITCHING_PROTOCOLS {
        return Err(WsError::Refused(response.status()));
    }
    let h = response.headers();
    let is = |name: header::HeaderName, want: &str| {
        h.get(name)
            .and_then(|v| v.to_str().ok())
            .is_some_and(|v| v.trim().eq_ignore_ascii_case(want))
    };
    if !is(header::UPGRADE, "websocket") {
        return Err(WsError::Handshake("the answer has no Upgrade: websocket"));
    }
    if !is(header::SEC_WEBSOCKET_ACCEPT, &accept_key(key)) {
        return Err(WsError::Handshake("Sec-WebSocket-Accept does not match our key"));
    }
    let agreed = h
        .get(header::SEC_WEBSOCKET_PROTOCOL)
        .and_then(|v| v.to_str().ok());
    match (protocol, agreed) {
        (_, None) => Ok(()),
        (Some(asked), Some(agreed)) if agreed.trim() == asked => Ok(()),
        _ => Err(WsError::Handshake(
            "the server chose a subprotocol we did not offer",
        )),
    }
}

/// `Sec-WebSocket-Accept` for `key`.
fn accept_key(key: &str) -> String {
    crate::base64::encode(&sha1::digest(format!("{key}{GUID}").as_bytes()))
}

/// Writes frames to the server.
pub(crate) struct Writer {
    inner: WriteHalf<Upgraded>,
}

impl Writer {
    /// Sends a text message.
    pub(crate) async fn text(&mut self, text: &str) -> Result<(), WsError> {
        self.frame(frame::TEXT, text.as_bytes()).await
    }

    /// Answers a ping.
    pub(crate) async fn pong(&mut self, payload: &[u8]) -> Result<(), WsError> {
        self.frame(frame::PONG, payload).await
    }

    /// Sends a close frame with `code` (1000: normal closure).
    pub(crate) async fn close(&mut self, code: u16) -> Result<(), WsError> {
        self.frame(frame::CLOSE, &code.to_be_bytes()).await
    }

    async fn frame(&mut self, opcode: u8, payload: &[u8]) -> Result<(), WsError> {
        let mut mask = [0u8; 4];
        getrandom::fill(&mut mask).expect("the OS random source is available");
        let bytes = frame::encode(opcode, payload, mask);
        self.inner.write_all(&bytes).await.map_err(WsError::Io)?;
        self.inner.flush().await.map_err(WsError::Io)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_accept_key_is_the_rfcs() {
        // RFC 6455 section 1.3.
        assert_eq!(
            accept_key("dGhlIHNhbXBsZSBub25jZQ=="),
            "s3pPLMBiTxaQ9kYGzzhZRbK+xOo="
        );
    }

    #[test]
    fn a_switch_is_checked() {
        let key = "dGhlIHNhbXBsZSBub25jZQ==";
        let answer = |status: u16, accept: &str, protocol: Option<&str>| {
            let mut b = http::Response::builder()
                .status(status)
                .header("upgrade", "websocket")
                .header("sec-websocket-accept", accept);
            if let Some(p) = protocol {
                b = b.header("sec-websocket-protocol", p);
            }
            b.body(()).unwrap()
        };
        let good = "s3pPLMBiTxaQ9kYGzzhZRbK+xOo=";
        assert!(check_switch(&answer(101, good, Some("mcp")), key, Some("mcp")).is_ok());
        assert!(check_switch(&answer(101, good, None), key, Some("mcp")).is_ok());
        let refused = check_switch(&answer(403, good, None), key, None).unwrap_err();
        assert_eq!(
            refused.to_string(),
            "the server answered the WebSocket handshake with HTTP 403 Forbidden"
        );
        let wrong = check_switch(&answer(101, "AAAA", None), key, None).unwrap_err();
        assert!(wrong.to_string().contains("Sec-WebSocket-Accept"), "{wrong}");
        let other = check_switch(&answer(101, good, Some("x")), key, Some("mcp")).unwrap_err();
        assert!(other.to_string().contains("subprotocol"), "{other}");
    }
}
