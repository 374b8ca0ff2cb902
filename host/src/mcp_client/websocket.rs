//! The WebSocket transport (`transport = "websocket"`): one connection to the
//! server's `ws://` or `wss://` URL (`http_client::websocket`, subprotocol `mcp`,
//! the configured headers on the opening handshake), each JSON-RPC message one
//! text message. Pings are answered; a close frame, a message larger than
//! `max_message_kb`, a message that is not JSON-RPC, or a broken frame closes the
//! connection, saying which; when the hub closes the connection it sends a close
//! frame (1000). The revision is decided by `session` like on any transport.

use super::connection::{Connection, Event, Outbound};
use super::error::{RequestError, StartError};
use super::http::Endpoint;
use crate::config::McpServerConfig;
use crate::http_client::websocket::{self, Incoming, Reader, Target, Writer};
use crate::http_client::{connect_tcp, wrap};
use crate::mcp_wire::jsonrpc::{self, Payload};
use serde_json::Value;
use std::sync::Arc;
use tokio::io::AsyncRead;
use tokio::sync::mpsc;

/// Messages queued for the server; past it the server is not reading.
const OUTBOX: usize = 256;

/// What the writer task sends.
enum Out {
    Message(Value),
    Pong(Vec<u8>),
}

struct Queue(mpsc::Sender<Out>);

impl Outbound for Queue {
    fn send(&self, message: Value) -> Result<(), RequestError> {
        self.0.try_send(Out::Message(message)).map_err(|e| match e {
            mpsc::error::TrySendError::Full(_) => RequestError::NotReading,
            mpsc::error::TrySendError::Closed(_) => RequestError::Closed("the WebSocket is closed".into()),
        })
    }
}

/// Opens the WebSocket of `config.url`: the connection and its events, carried
/// by a reader and a writer task until it closes.
pub(super) async fn connect(
    config: &McpServerConfig,
) -> Result<(Arc<Connection>, mpsc::UnboundedReceiver<Event>), StartError> {
    let e = super::http::endpoint(config)?;
    let (reader, writer) = open(&e).await.map_err(|why| StartError::Request {
        method: "the WebSocket handshake",
        source: RequestError::Http(why),
    })?;
    let (tx, rx) = mpsc::channel(OUTBOX);
    let (conn, events) = Connection::new(Box::new(Queue(tx.clone())), super::asked::Asked::of(config));
    tokio::spawn(write_loop(writer, rx, conn.ended()));
    tokio::spawn(read_loop(reader, conn.clone(), tx, config.max_message_kb));
    Ok((conn, events))
}

/// TCP (and TLS for `wss`), then the WebSocket handshake.
async fn open(e: &Endpoint) -> Result<(Reader<impl AsyncRead + Unpin + Send + 'static>, Writer), String> {
    let addrs: Vec<_> = tokio::net::lookup_host((e.host.as_str(), e.port))
        .await
        .map_err(|err| format!("unreachable: {}: {err}", e.host))?
        .collect();
    let tcp = connect_tcp(addrs)
        .await
        .map_err(|err| format!("unreachable: {err}"))?;
    let stream = wrap(tcp, e.tls.then_some(e.host.as_str()))
        .await
        .map_err(|err| format!("unreachable: {err}"))?;
    let target = Target {
        authority: &e.authority,
        path: &e.target,
        headers: &e.headers,
        protocol: Some("mcp"),
        max_message: e.max_message,
    };
    websocket::connect(stream, target)
        .await
        .map_err(|err| err.to_string())
}

/// Sends queued messages and pongs until the connection ends, then a close frame.
async fn write_loop(
    mut writer: Writer,
    mut queue: mpsc::Receiver<Out>,
    mut ended: tokio::sync::watch::Receiver<bool>,
) {
    loop {
        let next = crate::race::race(queue.recv(), closed(&mut ended)).await;
        let sent = match next {
            crate::race::Race::First(Some(Out::Message(m))) => writer.text(&m.to_string()).await,
            crate::race::Race::First(Some(Out::Pong(p))) => writer.pong(&p).await,
            _ => break,
        };
        if sent.is_err() {
            // The reader sees the connection end and reports it.
            return;
        }
    }
    let _ = writer.close(1000).await;
}

/// Delivers what the server sends until the connection ends, then closes it
/// saying how.
async fn read_loop<R: AsyncRead + Unpin>(
    mut reader: Reader<R>,
    conn: Arc<Connection>,
    pongs: mpsc::Sender<Out>,
    max_kb: u64,
) {
    let mut ended = conn.ended();
    let how = loop {
        let next = crate::race::race(reader.next(), closed(&mut ended)).await;
        let incoming = match next {
            crate::race::Race::First(incoming) => incoming,
            crate::race::Race::Second(_) => return,
        };
        match incoming {
            Ok(Incoming::Message(bytes)) => match jsonrpc::parse(&bytes) {
                Ok(Payload::Single(m)) => conn.deliver(m),
                Ok(Payload::Batch(ms)) => ms.into_iter().for_each(|m| conn.deliver(m)),
                Err(e) => break format!("the server sent a message that is not JSON-RPC ({})", e.message),
            },
            Ok(Incoming::Ping(payload)) => {
                let _ = pongs.try_send(Out::Pong(payload));
            }
            Ok(Incoming::Pong) => {}
            Ok(Incoming::Close(code, reason)) => {
                let code = code.map_or("no code".to_string(), |c| format!("code {c}"));
                break format!("the server closed the WebSocket ({code}{})", reason_text(&reason));
            }
            Err(websocket::WsError::TooLarge { .. }) => {
                break format!("the server sent a message larger than max_message_kb ({max_kb} KiB)");
            }
            Err(e) => break e.to_string(),
        }
    };
    conn.close(how);
}

/// Resolves once the connection has closed.
async fn closed(ended: &mut tokio::sync::watch::Receiver<bool>) {
    let _ = ended.wait_for(|e| *e).await;
}

fn reason_text(reason: &str) -> String {
    if reason.is_empty() {
        String::new()
    } else {
        format!(": {}", super::connection::bounded(reason))
    }
}
