//! The Streamable HTTP transport (the handshake-era revisions, 2024-11-05 to
//! 2025-11-25, and the stateless 2026-07-28, whose requests also carry the
//! routing headers `stateless` derives from their body) over `http_client`: every message is one POST to the server's URL
//! (`Accept: application/json, text/event-stream`), answered by 202 (a
//! notification or response), one JSON body, or an event stream whose events
//! are messages (`sse::Parser`, each event within `max_message_kb`). The
//! `Mcp-Session-Id` the server gives at `initialize` and the negotiated
//! `MCP-Protocol-Version` go with every later request; after the handshake a GET
//! opens the server's own event stream (for `tools/list_changed`) when it offers
//! one. A 404 for the session closes the connection (the supervisor starts a new
//! one). When the hub stops the server (shutdown, reload, restart) it ends the
//! session with a DELETE carrying its `Mcp-Session-Id` ([`end_session`]). The
//! configured headers' secret references are resolved at connect.

use super::connection::{Connection, Event, Outbound};
use super::error::{RequestError, StartError};
use crate::config::McpServerConfig;
use crate::http_client::{connect_tcp, handshake, wrap};
use crate::mcp_wire::jsonrpc::{self, Payload};
use crate::secret_ref::SecretRef;
use bytes::Bytes;
use http::{HeaderMap, HeaderName, HeaderValue, Method, Request, StatusCode, Uri, header};
use http_body_util::{BodyExt, Full};
use serde_json::Value;
use std::sync::{Arc, Mutex, Weak};
use tokio::sync::mpsc;

/// Where and how to reach the server.
pub(super) struct Endpoint {
    /// The server's name, for the log.
    pub(super) server: String,
    pub(super) tls: bool,
    pub(super) host: String,
    pub(super) port: u16,
    pub(super) authority: String,
    /// The URL's path and query.
    pub(super) target: String,
    /// The configured headers, resolved.
    pub(super) headers: HeaderMap,
    pub(super) max_message: usize,
    pub(super) max_kb: u64,
    /// Longest one POST exchange may take.
    pub(super) exchange_time: std::time::Duration,
}

/// What the server told us to send back.
#[derive(Default)]
pub(super) struct Negotiated {
    session: Option<HeaderValue>,
    version: Option<HeaderValue>,
    /// The legacy HTTP+SSE transport's POST target (path and query), once the
    /// server's `endpoint` event gave it: then every message goes there.
    pub(super) legacy_target: Option<String>,
}

pub(super) struct HttpOut {
    pub(super) endpoint: Arc<Endpoint>,
    pub(super) negotiated: Arc<Mutex<Negotiated>>,
    conn: Mutex<Weak<Connection>>,
    /// The exchanges of requests still running, by request id (abandoning one
    /// drops its HTTP connection: the stateless revision's cancellation).
    running: Mutex<std::collections::HashMap<u64, tokio::task::AbortHandle>>,
}

/// A connection, its events, and the transport under it.
pub(super) type Connected = (Arc<Connection>, mpsc::UnboundedReceiver<Event>, Arc<HttpOut>);

/// A connection to the server at `config.url`.
pub(super) fn connect(config: &McpServerConfig) -> Result<Connected, StartError> {
    let endpoint = Arc::new(endpoint(config)?);
    let out = Arc::new(HttpOut {
        endpoint,
        negotiated: Arc::default(),
        conn: Mutex::new(Weak::new()),
        running: Mutex::default(),
    });
    let (conn, events) = Connection::new(Box::new(SharedOut(out.clone())), super::asked::Asked::of(config));
    *out.conn.lock().unwrap_or_else(|e| e.into_inner()) = Arc::downgrade(&conn);
    Ok((conn, events, out))
}

/// Ends the session the server gave at `initialize` (a DELETE with its
/// `Mcp-Session-Id`), within `within`; nothing when it gave none, forgot it
/// (404), or speaks the legacy transport. The server's answer, when it gave one
/// (405 means it does not let clients end sessions, which the revision allows).
pub(super) async fn end_session(out: &HttpOut, within: std::time::Duration) -> Option<StatusCode> {
    {
        let negotiated = out.negotiated();
        if negotiated.session.is_none() || negotiated.legacy_target.is_some() {
            return None;
        }
    }
    let target = out.endpoint.target.clone();
    let sent = tokio::time::timeout(within, send(out, Method::DELETE, &target, None)).await;
    out.negotiated().session = None;
    match sent {
        Ok(Ok(response)) => Some(response.status()),
        Ok(Err(_)) | Err(_) => {
            crate::warn!(
                "mcp server {}: ending its HTTP session (DELETE) failed or took longer than stop_grace_ms",
                out.endpoint.server
            );
            None
        }
    }
}

struct SharedOut(Arc<HttpOut>);

impl Outbound for SharedOut {
    fn send(&self, message: Value) -> Result<(), RequestError> {
        let out = self.0.clone();
        let conn = out.conn.lock().unwrap_or_else(|e| e.into_inner()).clone();
        let request_id = message
            .get("id")
            .and_then(Value::as_u64)
            .filter(|_| message.get("method").is_some());
        let task = tokio::spawn(async move {
            let id = message
                .get("id")
                .cloned()
                .filter(|_| message.get("method").is_some());
            let method = message.get("method").and_then(Value::as_str);
            let initialize = method == Some("initialize");
            // A subscriptions/listen stream lasts as long as the server keeps it.
            let within = match method {
                Some("subscriptions/listen") => std::time::Duration::MAX,
                _ => out.endpoint.exchange_time,
            };
            let result = match tokio::time::timeout(within, exchange(&out, &conn, message, initialize)).await
            {
                Ok(result) => result,
                Err(_) => Err(Failure::Request(RequestError::Http(format!(
                    "no whole answer within {} ms (the longer of call_timeout_ms and start_timeout_ms)",
                    within.as_millis()
                )))),
            };
            let Some(conn) = conn.upgrade() else { return };
            match result {
                Ok(()) => {}
                Err(Failure::Gone(how)) => conn.close(how),
                Err(Failure::Request(e)) => {
                    if let Some(id) = id {
                        conn.fail(&id, e);
                    }
                }
            }
        });
        if let Some(id) = request_id {
            let mut running = self.0.running();
            running.retain(|_, task| !task.is_finished());
            if !task.is_finished() {
                running.insert(id, task.abort_handle());
            }
        }
        Ok(())
    }

    fn abandon(&self, id: u64) -> bool {
        match self.0.running().remove(&id) {
            Some(task) => {
                task.abort();
                true
            }
            None => false,
        }
    }
}

pub(super) enum Failure {
    /// The session or the server is gone: close the connection.
    Gone(String),
    /// This request failed.
    Request(RequestError),
}

/// Parses the URL and resolves the configured headers (also the WebSocket
/// transport's).
pub(super) fn endpoint(config: &McpServerConfig) -> Result<Endpoint, StartError> {
    let url = config.url.as_deref().unwrap_or_default();
    let bad = |why: &str| StartError::Handshake(format!("url: {why}"));
    let uri: Uri = url.parse().map_err(|_| bad("not a valid URL"))?;
    let tls = matches!(uri.scheme_str(), Some("https" | "wss"));
    let host = uri.host().ok_or_else(|| bad("it has no host"))?;
    let host = host.trim_start_matches('[').trim_end_matches(']').to_string();
    let port = uri.port_u16().unwrap_or(if tls { 443 } else { 80 });
    let authority = uri
        .authority()
        .map(|a| a.as_str().to_string())
        .unwrap_or_default();
    let target = uri
        .path_and_query()
        .map_or("/".to_string(), |p| p.as_str().to_string());
    let mut headers = HeaderMap::new();
    for (name, value) in &config.headers {
        let key = format!("headers.{name}");
        let secret = SecretRef::parse(value)
            .and_then(|r| r.resolve(config.secret_max_bytes))
            .map_err(|source| StartError::Secret {
                key: key.clone(),
                source,
            })?;
        let name = HeaderName::from_bytes(name.as_bytes()).map_err(|_| bad("a header name is not valid"))?;
        let value = HeaderValue::from_str(secret.expose())
            .map_err(|_| StartError::Handshake(format!("{key}: the value is not a valid header value")))?;
        headers.insert(name, value);
    }
    Ok(Endpoint {
        server: config.name.clone(),
        tls,
        host,
        port,
        authority,
        target,
        headers,
        max_message: (config.max_message_kb * 1024) as usize,
        max_kb: config.max_message_kb,
        exchange_time: std::time::Duration::from_millis(config.call_timeout_ms.max(config.start_timeout_ms)),
    })
}

/// The trace context a request carries in `params._meta` (`connection`), as the
/// W3C headers too: a server that traces by HTTP headers joins the trace as well.
fn trace_headers(message: &Value) -> Vec<(HeaderName, HeaderValue)> {
    let Some(meta) = message.pointer("/params/_meta") else {
        return Vec::new();
    };
    ["traceparent", "tracestate", "baggage"]
        .into_iter()
        .filter_map(|key| {
            let value = HeaderValue::from_str(meta.get(key)?.as_str()?).ok()?;
            Some((HeaderName::from_static(key), value))
        })
        .collect()
}

/// One POST of `message`, delivering what the server answers.
async fn exchange(
    out: &HttpOut,
    conn: &Weak<Connection>,
    message: Value,
    initialize: bool,
) -> Result<(), Failure> {
    let body = Bytes::from(serde_json::to_vec(&message).expect("a JSON value serializes"));
    let request_id = message.get("id").cloned();
    let legacy = out.negotiated().legacy_target.clone();
    if let Some(target) = legacy {
        return super::http_legacy::post(out, &target, body).await;
    }
    let mut routing = super::stateless::routing_headers(&message);
    routing.extend(trace_headers(&message));
    let target = &out.endpoint.target;
    let response = send_with(out, Method::POST, target, Some(body.clone()), routing).await?;
    let status = response.status();
    if status == StatusCode::ACCEPTED {
        return Ok(());
    }
    if initialize && super::http_legacy::refused(status) {
        // An old server (2024-11-05 HTTP+SSE) answers a POST to its event stream's
        // URL with 4xx: open the stream and post to the endpoint it names.
        return super::http_legacy::fall_back(out, conn, body).await;
    }
    if status == StatusCode::NOT_FOUND && out.negotiated().session.take().is_some() {
        return Err(Failure::Gone(
            "the server no longer knows the session (404)".into(),
        ));
    }
    if !status.is_success() {
        return refused(response, out, conn, request_id).await;
    }
    if initialize && let Some(session) = response.headers().get("mcp-session-id") {
        out.negotiated().session = Some(session.clone());
    }
    let deliver = |m: jsonrpc::Message| {
        if initialize
            && let jsonrpc::Message::Response {
                outcome: Ok(result), ..
            } = &m
        {
            let version = result
                .get("protocolVersion")
                .and_then(Value::as_str)
                .unwrap_or("");
            out.negotiated().version = HeaderValue::from_str(version).ok();
        }
        if let Some(conn) = conn.upgrade() {
            conn.deliver(m);
        }
    };
    read_messages(response, &out.endpoint, deliver)
        .await
        .map_err(Failure::Request)?;
    if initialize && let Some(conn) = conn.upgrade() {
        tokio::spawn(listen(
            out.endpoint.clone(),
            out.negotiated.clone(),
            Arc::downgrade(&conn),
        ));
    }
    Ok(())
}

/// A non-2xx answer: a JSON-RPC error in its body answering our request (the
/// stateless revision answers an unknown method 404 with -32601) is delivered;
/// otherwise the request fails with the status, and the body's error message
/// when it has one without our id (`"id": null`, as some servers send).
async fn refused(
    response: Response,
    out: &HttpOut,
    conn: &Weak<Connection>,
    request_id: Option<Value>,
) -> Result<(), Failure> {
    let status = response.status();
    let mut answered = false;
    let mut said = None;
    if is_json(&response) {
        let deliver = |m: jsonrpc::Message| match m {
            jsonrpc::Message::Response { id, outcome } if Some(&id) != request_id.as_ref() => {
                if let Err(error) = outcome {
                    said = error
                        .get("message")
                        .and_then(Value::as_str)
                        .map(super::connection::bounded);
                }
            }
            m => {
                answered = true;
                if let Some(conn) = conn.upgrade() {
                    conn.deliver(m);
                }
            }
        };
        let _ = read_messages(response, &out.endpoint, deliver).await;
    }
    if answered {
        return Ok(());
    }
    let said = said.map(|m| format!(" ({m})")).unwrap_or_default();
    Err(Failure::Request(RequestError::Http(format!(
        "the server answered HTTP {status}{said}"
    ))))
}

impl HttpOut {
    fn running(&self) -> std::sync::MutexGuard<'_, std::collections::HashMap<u64, tokio::task::AbortHandle>> {
        self.running.lock().unwrap_or_else(|e| e.into_inner())
    }

    pub(super) fn negotiated(&self) -> std::sync::MutexGuard<'_, Negotiated> {
        self.negotiated.lock().unwrap_or_else(|e| e.into_inner())
    }
}

/// The server's own event stream (GET), when it offers one, until it or the
/// connection ends.
async fn listen(endpoint: Arc<Endpoint>, negotiated: Arc<Mutex<Negotiated>>, conn: Weak<Connection>) {
    let Some(mut ended) = conn.upgrade().map(|c| c.ended()) else {
        return;
    };
    let out = HttpOut {
        endpoint,
        negotiated,
        conn: Mutex::new(conn.clone()),
        running: Mutex::default(),
    };
    let stream = async {
        let Ok(response) = send(&out, Method::GET, &out.endpoint.target, None).await else {
            return;
        };
        if response.status() != StatusCode::OK {
            // 405: the server has no stream of its own.
            return;
        }
        let deliver = |m| {
            if let Some(conn) = conn.upgrade() {
                conn.deliver(m);
            }
        };
        let _ = read_messages(response, &out.endpoint, deliver).await;
    };
    let ended = async move {
        let _ = ended.wait_for(|e| *e).await;
    };
    crate::race::race(stream, ended).await;
}

pub(super) type Response = http::Response<hyper::body::Incoming>;

/// Sends one request to `target` (path and query) on a new connection.
pub(super) async fn send(
    out: &HttpOut,
    method: Method,
    target: &str,
    body: Option<Bytes>,
) -> Result<Response, Failure> {
    send_with(out, method, target, body, Vec::new()).await
}

/// [`send`] with `routing` headers too (a stateless request's).
async fn send_with(
    out: &HttpOut,
    method: Method,
    target: &str,
    body: Option<Bytes>,
    routing: Vec<(HeaderName, HeaderValue)>,
) -> Result<Response, Failure> {
    let e = &out.endpoint;
    let unreachable = |why: String| Failure::Gone(format!("unreachable: {why}"));
    let addrs: Vec<_> = tokio::net::lookup_host((e.host.as_str(), e.port))
        .await
        .map_err(|err| unreachable(format!("{}: {err}", e.host)))?
        .collect();
    let tcp = connect_tcp(addrs)
        .await
        .map_err(|err| unreachable(err.to_string()))?;
    let stream = wrap(tcp, e.tls.then_some(e.host.as_str()))
        .await
        .map_err(|err| unreachable(err.to_string()))?;
    let (mut sender, connection) = handshake(stream)
        .await
        .map_err(|err| unreachable(err.to_string()))?;
    tokio::spawn(connection);
    let mut request = Request::builder()
        .method(method.clone())
        .uri(target)
        .header(header::HOST, e.authority.as_str())
        .header(header::ACCEPT, accept(&method))
        .body(Full::new(body.unwrap_or_default()))
        .map_err(|_| unreachable("the URL is not a valid request target".into()))?;
    let headers = request.headers_mut();
    if method == Method::POST {
        headers.insert(header::CONTENT_TYPE, HeaderValue::from_static("application/json"));
    }
    for (name, value) in &e.headers {
        headers.insert(name, value.clone());
    }
    {
        let negotiated = out.negotiated();
        if let Some(session) = &negotiated.session {
            headers.insert("mcp-session-id", session.clone());
        }
        if let Some(version) = &negotiated.version {
            headers.insert("mcp-protocol-version", version.clone());
        }
    }
    for (name, value) in routing {
        headers.insert(name, value);
    }
    sender
        .send_request(request)
        .await
        .map_err(|err| Failure::Request(RequestError::Http(format!("the HTTP exchange failed: {err}"))))
}

fn is_json(response: &Response) -> bool {
    response
        .headers()
        .get(header::CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
        .is_some_and(|v| v.starts_with("application/json"))
}

fn accept(method: &Method) -> HeaderValue {
    HeaderValue::from_static(if method == Method::GET {
        "text/event-stream"
    } else {
        "application/json, text/event-stream"
    })
}

/// The messages of a JSON or event-stream body, each within `max_message_kb`.
async fn read_messages(
    response: Response,
    e: &Endpoint,
    mut deliver: impl FnMut(jsonrpc::Message),
) -> Result<(), RequestError> {
    let too_large = || {
        RequestError::Http(format!(
            "the server sent a message larger than max_message_kb ({} KiB)",
            e.max_kb
        ))
    };
    let is_sse = response
        .headers()
        .get(header::CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
        .is_some_and(|v| v.starts_with("text/event-stream"));
    let mut body = response.into_body();
    if !is_sse {
        let bytes = http_body_util::Limited::new(body, e.max_message)
            .collect()
            .await
            .map_err(|_| too_large())?
            .to_bytes();
        return payload(&bytes, &mut deliver);
    }
    let mut parser = crate::sse::Parser::new(e.max_message);
    let mut events = Vec::new();
    while let Some(frame) = body.frame().await {
        let frame =
            frame.map_err(|err| RequestError::Http(format!("reading the event stream failed: {err}")))?;
        let Ok(data) = frame.into_data() else { continue };
        parser
            .feed(&data, &mut |event| events.push(event.data.to_string()))
            .map_err(|_| too_large())?;
        for data in events.drain(..) {
            if !data.is_empty() {
                payload(data.as_bytes(), &mut deliver)?;
            }
        }
    }
    Ok(())
}

pub(super) fn payload(bytes: &[u8], deliver: &mut impl FnMut(jsonrpc::Message)) -> Result<(), RequestError> {
    match jsonrpc::parse(bytes) {
        Ok(Payload::Single(m)) => deliver(m),
        Ok(Payload::Batch(ms)) => ms.into_iter().for_each(deliver),
        Err(e) => {
            return Err(RequestError::Http(format!(
                "the server sent a body that is not JSON-RPC ({})",
                e.message
            )));
        }
    }
    Ok(())
}
