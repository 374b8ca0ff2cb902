//! Streamable HTTP behaviour of both revisions, in process: a hyper server on a
//! loopback port serving only `/mcp` over the scripted backend, driven with raw
//! HTTP/1.1 requests so every status code and header is visible.

use super::McpState;
use super::dispatch::tests::FakeBackend;
use super::store::SessionLimits;
use crate::surfaces::parse::BodyParser;
use hyper::server::conn::http1;
use hyper::service::service_fn;
use serde_json::{Value, json};
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};
use wasmtime_wasi_http::io::TokioIo;

const META: &str = r#""_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{}}"#;

struct Server {
    addr: std::net::SocketAddr,
    /// `hub_wait` calls begun and cancelled so far.
    started: Arc<AtomicUsize>,
    cancelled: Arc<AtomicUsize>,
}

async fn start() -> Server {
    let backend = FakeBackend::default();
    let (started, cancelled) = (backend.started.clone(), backend.cancelled.clone());
    let state = Arc::new(McpState::new(Arc::new(backend), SessionLimits::default()));
    let limits = Arc::new(crate::surfaces::SurfaceLimits::new(&Default::default()));
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    tokio::spawn(async move {
        loop {
            let (stream, peer) = listener.accept().await.unwrap();
            let (state, limits) = (state.clone(), limits.clone());
            tokio::spawn(async move {
                let service = service_fn(move |req| {
                    let (state, limits) = (state.clone(), limits.clone());
                    async move {
                        Ok::<_, std::convert::Infallible>(
                            super::http::handle(&state, &limits, &BodyParser::in_place(4096), req, peer)
                                .await,
                        )
                    }
                });
                let _ = http1::Builder::new()
                    .serve_connection(TokioIo::new(stream), service)
                    .await;
            });
        }
    });
    Server {
        addr,
        started,
        cancelled,
    }
}

/// A parsed response: status, lower-case headers, body.
struct Reply {
    status: u16,
    headers: Vec<(String, String)>,
    body: String,
}

impl Reply {
    fn header(&self, name: &str) -> Option<&str> {
        self.headers
            .iter()
            .find(|(k, _)| k == name)
            .map(|(_, v)| v.as_str())
    }

    fn json(&self) -> Value {
        serde_json::from_str(&self.body).unwrap_or_else(|e| panic!("not JSON ({e}): {:?}", self.body))
    }

    /// The `data:` payloads of an event-stream body.
    fn events(&self) -> Vec<Value> {
        self.body
            .lines()
            .filter_map(|l| l.strip_prefix("data: "))
            .map(|d| serde_json::from_str(d).unwrap())
            .collect()
    }
}

fn request(method: &str, headers: &[(&str, &str)], body: &str) -> String {
    request_on(method, headers, body, "close")
}

/// A request asking for `connection: <connection>` (real clients keep connections alive).
fn request_on(method: &str, headers: &[(&str, &str)], body: &str, connection: &str) -> String {
    let mut text = format!("{method} /mcp HTTP/1.1\r\nhost: 127.0.0.1\r\nconnection: {connection}\r\n");
    for (k, v) in headers {
        text.push_str(&format!("{k}: {v}\r\n"));
    }
    text.push_str(&format!("content-length: {}\r\n\r\n{body}", body.len()));
    text
}

async fn send(s: &Server, method: &str, headers: &[(&str, &str)], body: &str) -> Reply {
    let mut stream = TcpStream::connect(s.addr).await.unwrap();
    stream
        .write_all(request(method, headers, body).as_bytes())
        .await
        .unwrap();
    let mut raw = Vec::new();
    tokio::time::timeout(Duration::from_secs(10), stream.read_to_end(&mut raw))
        .await
        .unwrap()
        .unwrap();
    let raw = String::from_utf8(raw).unwrap();
    let (head, body) = raw.split_once("\r\n\r\n").unwrap();
    let mut lines = head.lines();
    let status = lines.next().unwrap().split(' ').nth(1).unwrap().parse().unwrap();
    let headers: Vec<(String, String)> = lines
        .filter_map(|l| l.split_once(':'))
        .map(|(k, v)| (k.trim().to_ascii_lowercase(), v.trim().to_string()))
        .collect();
    let chunked = headers
        .iter()
        .any(|(k, v)| k == "transfer-encoding" && v == "chunked");
    let body = if chunked { dechunk(body) } else { body.to_string() };
    Reply {
        status,
        headers,
        body,
    }
}

fn dechunk(mut body: &str) -> String {
    let mut out = String::new();
    while let Some((size, rest)) = body.split_once("\r\n") {
        let n = usize::from_str_radix(size.trim(), 16).unwrap();
        if n == 0 {
            break;
        }
        out.push_str(&rest[..n]);
        body = &rest[n + 2..];
    }
    out
}

const JSON_AND_SSE: (&str, &str) = ("accept", "application/json, text/event-stream");
const JSON: (&str, &str) = ("content-type", "application/json");

async fn initialize(s: &Server, version: &str) -> String {
    let body = format!(
        r#"{{"jsonrpc":"2.0","id":1,"method":"initialize","params":{{"protocolVersion":"{version}","capabilities":{{}},"clientInfo":{{"name":"t","version":"1"}}}}}}"#
    );
    let r = send(s, "POST", &[JSON, JSON_AND_SSE], &body).await;
    assert_eq!(r.status, 200, "{}", r.body);
    assert_eq!(r.json()["result"]["protocolVersion"], version);
    r.header("mcp-session-id").expect("a session id").to_string()
}

#[tokio::test]
async fn handshake_sessions_live_and_end() {
    let s = start().await;
    let sid = initialize(&s, "2025-11-25").await;
    let with_session = [
        JSON,
        JSON_AND_SSE,
        ("mcp-session-id", &sid),
        ("mcp-protocol-version", "2025-11-25"),
    ];

    let r = send(
        &s,
        "POST",
        &with_session,
        r#"{"jsonrpc":"2.0","method":"notifications/initialized"}"#,
    )
    .await;
    assert_eq!((r.status, r.body.as_str()), (202, ""));
    let r = send(
        &s,
        "POST",
        &with_session,
        r#"{"jsonrpc":"2.0","id":2,"method":"tools/list"}"#,
    )
    .await;
    assert_eq!(r.status, 200);
    assert_eq!(r.header("content-type"), Some("application/json"));
    assert_eq!(r.json()["result"]["tools"].as_array().unwrap().len(), 4);
    let r = send(
        &s,
        "POST",
        &with_session,
        r#"{"jsonrpc":"2.0","id":3,"method":"ping"}"#,
    )
    .await;
    assert_eq!(r.json()["result"], json!({}));
    let r = send(
        &s,
        "POST",
        &with_session,
        r#"{"jsonrpc":"2.0","id":4,"method":"nope"}"#,
    )
    .await;
    assert_eq!(
        (r.status, r.json()["error"]["code"].as_i64()),
        (200, Some(-32601))
    );

    let no_session = [JSON, JSON_AND_SSE, ("mcp-protocol-version", "2025-11-25")];
    let r = send(
        &s,
        "POST",
        &no_session,
        r#"{"jsonrpc":"2.0","id":5,"method":"tools/list"}"#,
    )
    .await;
    assert_eq!(r.status, 400, "a request without a session: {}", r.body);
    let unknown = [JSON, JSON_AND_SSE, ("mcp-session-id", "mcp_nope")];
    let r = send(
        &s,
        "POST",
        &unknown,
        r#"{"jsonrpc":"2.0","id":6,"method":"tools/list"}"#,
    )
    .await;
    assert_eq!(r.status, 404, "an unknown session");
    let wrong_version = [
        JSON,
        JSON_AND_SSE,
        ("mcp-session-id", &sid),
        ("mcp-protocol-version", "2025-06-18"),
    ];
    let r = send(
        &s,
        "POST",
        &wrong_version,
        r#"{"jsonrpc":"2.0","id":7,"method":"tools/list"}"#,
    )
    .await;
    assert_eq!(r.status, 400, "a version other than the negotiated one");
    let r = send(
        &s,
        "POST",
        &with_session,
        r#"[{"jsonrpc":"2.0","id":8,"method":"ping"}]"#,
    )
    .await;
    assert_eq!(
        (r.status, r.json()["error"]["code"].as_i64()),
        (400, Some(-32600)),
        "no batches in 2025-11-25"
    );
    let r = send(&s, "POST", &with_session, "{oops").await;
    assert_eq!(
        (r.status, r.json()["error"]["code"].as_i64()),
        (400, Some(-32700))
    );

    assert_eq!(send(&s, "GET", &[("mcp-session-id", &sid)], "").await.status, 405);
    assert_eq!(
        send(&s, "DELETE", &[("mcp-session-id", &sid)], "").await.status,
        204
    );
    let r = send(
        &s,
        "POST",
        &with_session,
        r#"{"jsonrpc":"2.0","id":9,"method":"tools/list"}"#,
    )
    .await;
    assert_eq!(r.status, 404, "a deleted session");
    assert_eq!(
        send(&s, "DELETE", &[("mcp-session-id", &sid)], "").await.status,
        404
    );
}

#[tokio::test]
async fn batches_are_served_for_2025_03_26_sessions() {
    let s = start().await;
    let sid = initialize(&s, "2025-03-26").await;
    let h = [JSON, JSON_AND_SSE, ("mcp-session-id", &sid)];
    let body = r#"[{"jsonrpc":"2.0","id":1,"method":"ping"},{"jsonrpc":"2.0","method":"notifications/x"},{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"hub_echo","arguments":{"a":1}}},{"bad":1}]"#;
    let r = send(&s, "POST", &h, body).await;
    assert_eq!(r.status, 200);
    let answers = r.json();
    let answers = answers.as_array().unwrap();
    assert_eq!(answers.len(), 3);
    assert_eq!(answers[0]["id"], 1);
    assert_eq!(answers[1]["result"]["structuredContent"]["echo"]["a"], 1);
    assert_eq!(answers[2]["error"]["code"], -32600);
    let r = send(
        &s,
        "POST",
        &h,
        r#"[{"jsonrpc":"2.0","method":"notifications/x"}]"#,
    )
    .await;
    assert_eq!(r.status, 202, "a batch of notifications only");
}

#[tokio::test]
async fn stateless_requests_follow_the_2026_rules() {
    let s = start().await;
    let h = |method: &'static str| {
        [
            JSON,
            JSON_AND_SSE,
            ("mcp-protocol-version", "2026-07-28"),
            ("mcp-method", method),
        ]
    };
    let r = send(
        &s,
        "POST",
        &h("server/discover"),
        &format!(r#"{{"jsonrpc":"2.0","id":1,"method":"server/discover","params":{{{META}}}}}"#),
    )
    .await;
    assert_eq!(r.status, 200, "{}", r.body);
    assert!(r.header("mcp-session-id").is_none(), "no sessions in 2026-07-28");
    let d = r.json();
    assert_eq!(d["result"]["resultType"], "complete");
    assert_eq!(d["result"]["supportedVersions"][0], "2026-07-28");

    let r = send(
        &s,
        "POST",
        &h("server/discover"),
        r#"{"jsonrpc":"2.0","id":2,"method":"server/discover","params":{}}"#,
    )
    .await;
    assert_eq!(
        (
            r.status,
            r.json()["error"]["code"].as_i64(),
            r.json()["id"].as_i64()
        ),
        (400, Some(-32602), Some(2))
    );
    let r = send(
        &s,
        "POST",
        &h("tools/list"),
        &format!(r#"{{"jsonrpc":"2.0","id":3,"method":"server/discover","params":{{{META}}}}}"#),
    )
    .await;
    assert_eq!(
        (r.status, r.json()["error"]["code"].as_i64()),
        (400, Some(-32020))
    );
    for method in ["ping", "initialize", "logging/setLevel", "unknown/method"] {
        let body = format!(r#"{{"jsonrpc":"2.0","id":4,"method":"{method}","params":{{{META}}}}}"#);
        let r = send(&s, "POST", &h(method), &body).await;
        assert_eq!(
            (r.status, r.json()["error"]["code"].as_i64()),
            (404, Some(-32601)),
            "{method}"
        );
    }
    let future = [
        JSON,
        JSON_AND_SSE,
        ("mcp-protocol-version", "v999.0.0"),
        ("mcp-method", "server/discover"),
    ];
    let body = r#"{"jsonrpc":"2.0","id":5,"method":"server/discover","params":{"_meta":{"io.modelcontextprotocol/protocolVersion":"v999.0.0","io.modelcontextprotocol/clientCapabilities":{}}}}"#;
    let r = send(&s, "POST", &future, body).await;
    assert_eq!(
        (r.status, r.json()["error"]["code"].as_i64()),
        (400, Some(-32022))
    );
    assert_eq!(r.json()["error"]["data"]["requested"], "v999.0.0");

    let call = |name: &str| {
        format!(
            r#"{{"jsonrpc":"2.0","id":6,"method":"tools/call","params":{{"name":"{name}","arguments":{{}},{META}}}}}"#
        )
    };
    let mut call_headers = h("tools/call").to_vec();
    call_headers.push(("mcp-name", "hub_fail"));
    let r = send(&s, "POST", &call_headers, &call("hub_fail")).await;
    assert_eq!(r.status, 200);
    assert_eq!(r.json()["result"]["isError"], true);
    call_headers.pop();
    call_headers.push(("mcp-name", "nope"));
    let r = send(&s, "POST", &call_headers, &call("nope")).await;
    assert_eq!(
        (r.status, r.json()["error"]["code"].as_i64()),
        (400, Some(-32602)),
        "unknown tool"
    );

    let r = send(
        &s,
        "POST",
        &h("tools/list"),
        &format!(r#"[{{"jsonrpc":"2.0","id":7,"method":"tools/list","params":{{{META}}}}}]"#),
    )
    .await;
    assert_eq!(
        (r.status, r.json()["error"]["code"].as_i64()),
        (400, Some(-32600)),
        "no batches"
    );
    let r = send(
        &s,
        "POST",
        &h("notifications/cancelled"),
        r#"{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":1}}"#,
    )
    .await;
    assert_eq!(r.status, 202);
    let no_session = [("mcp-protocol-version", "2026-07-28")];
    assert_eq!(send(&s, "GET", &no_session, "").await.status, 405);
    assert_eq!(send(&s, "DELETE", &no_session, "").await.status, 405);
}

#[tokio::test]
async fn transport_checks_come_first() {
    let s = start().await;
    let body = r#"{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25"}}"#;
    let r = send(&s, "POST", &[JSON, ("accept", "text/html")], body).await;
    assert_eq!(r.status, 406);
    let r = send(&s, "POST", &[("content-type", "text/plain")], body).await;
    assert_eq!(r.status, 415);
    let r = send(
        &s,
        "POST",
        &[JSON],
        &format!("{{\"x\":\"{}\"}}", "a".repeat(5000)),
    )
    .await;
    assert_eq!(r.status, 413);
    let r = send(&s, "POST", &[JSON, ("authorization", "Bearer wrong")], body).await;
    assert_eq!(r.status, 401);
    assert!(r.header("www-authenticate").unwrap().starts_with("Bearer"));
    let r = send(&s, "POST", &[JSON, ("authorization", "Bearer good")], body).await;
    assert_eq!(r.status, 200);
    // A client that accepts only SSE gets its initialize answer as an event stream.
    let r = send(&s, "POST", &[JSON, ("accept", "text/event-stream")], body).await;
    assert_eq!(r.header("content-type"), Some("text/event-stream"));
    assert!(r.header("mcp-session-id").is_some());
    assert_eq!(r.events()[0]["result"]["protocolVersion"], "2025-11-25");
}

#[tokio::test]
async fn progress_tokens_get_an_event_stream() {
    let s = start().await;
    let sid = initialize(&s, "2025-11-25").await;
    let h = [JSON, JSON_AND_SSE, ("mcp-session-id", &sid)];
    let body = r#"{"jsonrpc":"2.0","id":"p","method":"tools/call","params":{"name":"hub_progress","arguments":{},"_meta":{"progressToken":42}}}"#;
    let r = send(&s, "POST", &h, body).await;
    assert_eq!(r.header("content-type"), Some("text/event-stream"));
    let events = r.events();
    assert_eq!(events.len(), 3, "{events:?}");
    assert_eq!(events[0]["method"], "notifications/progress");
    assert_eq!(
        events[0]["params"],
        json!({"progressToken": 42, "progress": 1.0, "total": 2.0})
    );
    assert_eq!(events[2]["id"], "p");
    assert_eq!(events[2]["result"]["structuredContent"]["done"], true);
}

/// Polls `counter` until it reaches `want`; the overall limit is only reached when
/// the event never comes (generous for a loaded machine).
async fn wait_for(what: &str, counter: &AtomicUsize, want: usize) {
    let deadline = tokio::time::Instant::now() + Duration::from_secs(30);
    while counter.load(Ordering::SeqCst) < want {
        assert!(
            tokio::time::Instant::now() < deadline,
            "{what}: {} (wanted {want})",
            counter.load(Ordering::SeqCst)
        );
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
}

#[tokio::test]
async fn cancelled_notifications_and_closed_streams_cancel_calls() {
    let s = start().await;
    let sid = initialize(&s, "2025-11-25").await;
    let h = [JSON, JSON_AND_SSE, ("mcp-session-id", sid.as_str())];
    let wait = |id: &str, meta: &str| {
        format!(
            r#"{{"jsonrpc":"2.0","id":"{id}","method":"tools/call","params":{{"name":"hub_wait"{meta}}}}}"#
        )
    };

    // notifications/cancelled names the request in this session.
    let pending = {
        let (addr, h) = (s.addr, h.map(|(k, v)| (k.to_string(), v.to_string())));
        let body = wait("a", "");
        tokio::spawn(async move {
            let s = Server {
                addr,
                started: Arc::default(),
                cancelled: Arc::default(),
            };
            let h: Vec<(&str, &str)> = h.iter().map(|(k, v)| (k.as_str(), v.as_str())).collect();
            send(&s, "POST", &h, &body).await
        })
    };
    wait_for("started", &s.started, 1).await;
    let r = send(
        &s,
        "POST",
        &h,
        r#"{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":"a"}}"#,
    )
    .await;
    assert_eq!(r.status, 202);
    wait_for("cancelled", &s.cancelled, 1).await;
    assert_eq!(pending.await.unwrap().json()["error"]["code"], -32800);

    // Closing a JSON response's connection cancels the call. Close once the answer
    // is committed (its head arrives): before that, closing drops the call unrun.
    let mut stream = TcpStream::connect(s.addr).await.unwrap();
    stream
        .write_all(request("POST", &h, &wait("b", "")).as_bytes())
        .await
        .unwrap();
    let mut head = [0u8; 64];
    let n = stream.read(&mut head).await.unwrap();
    assert!(String::from_utf8_lossy(&head[..n]).starts_with("HTTP/1.1 200"));
    assert_eq!(s.started.load(Ordering::SeqCst), 2);
    drop(stream);
    wait_for("cancelled", &s.cancelled, 2).await;

    // Closing an event stream cancels the call too.
    let mut stream = TcpStream::connect(s.addr).await.unwrap();
    stream
        .write_all(request("POST", &h, &wait("c", r#","_meta":{"progressToken":"t"}"#)).as_bytes())
        .await
        .unwrap();
    let mut head = [0u8; 64];
    let n = stream.read(&mut head).await.unwrap();
    assert!(String::from_utf8_lossy(&head[..n]).starts_with("HTTP/1.1 200"));
    drop(stream);
    wait_for("cancelled", &s.cancelled, 3).await;

    // Ending the session cancels what runs in it.
    let pending = {
        let (addr, h) = (s.addr, h.map(|(k, v)| (k.to_string(), v.to_string())));
        let body = wait("d", "");
        tokio::spawn(async move {
            let s = Server {
                addr,
                started: Arc::default(),
                cancelled: Arc::default(),
            };
            let h: Vec<(&str, &str)> = h.iter().map(|(k, v)| (k.as_str(), v.as_str())).collect();
            send(&s, "POST", &h, &body).await
        })
    };
    wait_for("started", &s.started, 4).await;
    assert_eq!(
        send(&s, "DELETE", &[("mcp-session-id", sid.as_str())], "")
            .await
            .status,
        204
    );
    wait_for("cancelled", &s.cancelled, 4).await;
    pending.await.unwrap();
}
