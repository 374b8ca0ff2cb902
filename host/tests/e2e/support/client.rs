//! A minimal HTTP/1.1 client for the tests: one request per connection, the body
//! read raw, as SSE events, or as JSON. Dropping a response closes its connection,
//! which is how tests act out a client that goes away mid-stream.

use bytes::Bytes;
use http::{HeaderMap, Method, Request, StatusCode};
use http_body_util::{BodyExt, Full};
use hyper::body::Incoming;
use serde_json::Value;
use std::collections::VecDeque;
use std::net::SocketAddr;
use std::time::Duration;
use wasmhub::sse;
use wasmtime_wasi_http::io::TokioIo;

pub struct ClientResp {
    pub status: StatusCode,
    pub headers: HeaderMap,
    body: Incoming,
    parser: sse::Parser,
    events: VecDeque<String>,
    ended: bool,
    /// Every body byte read so far.
    pub raw: Vec<u8>,
}

/// Sends `body` as JSON with `headers` on a fresh connection.
pub async fn send(
    addr: SocketAddr,
    method: Method,
    path: &str,
    body: Option<Bytes>,
    headers: &[(&str, &str)],
) -> ClientResp {
    let stream = tokio::net::TcpStream::connect(addr)
        .await
        .expect("connect to the hub");
    let (mut sender, conn) = hyper::client::conn::http1::handshake(TokioIo::new(stream))
        .await
        .unwrap();
    tokio::spawn(conn);
    let mut req = Request::builder()
        .method(method)
        .uri(path)
        .header("host", addr.to_string());
    if body.is_some() {
        req = req.header("content-type", "application/json");
    }
    for (k, v) in headers {
        req = req.header(*k, *v);
    }
    let resp = sender
        .send_request(req.body(Full::new(body.unwrap_or_default())).unwrap())
        .await
        .expect("a response");
    let (parts, body) = resp.into_parts();
    ClientResp {
        status: parts.status,
        headers: parts.headers,
        body,
        parser: sse::Parser::new(64 << 20),
        events: VecDeque::new(),
        ended: false,
        raw: Vec::new(),
    }
}

/// The value of the sample `name{labels}` (as written) on `/metrics`, `None` when
/// the page has no such sample.
pub async fn metric(addr: SocketAddr, sample: &str) -> Option<f64> {
    let text = send(addr, Method::GET, "/metrics", None, &[]).await.bytes().await;
    let text = String::from_utf8_lossy(&text);
    text.lines()
        .find_map(|l| l.strip_prefix(sample).and_then(|rest| rest.strip_prefix(' ')))
        .map(|n| n.trim().parse().unwrap_or_else(|e| panic!("{sample} {n}: {e}")))
}

pub async fn post(addr: SocketAddr, path: &str, body: &Value) -> ClientResp {
    send(
        addr,
        Method::POST,
        path,
        Some(Bytes::from(serde_json::to_vec(body).unwrap())),
        &[],
    )
    .await
}

impl ClientResp {
    pub fn header(&self, name: &str) -> Option<&str> {
        self.headers.get(name).and_then(|v| v.to_str().ok())
    }

    /// The whole body.
    pub async fn bytes(mut self) -> Bytes {
        while self.read_more().await {}
        Bytes::from(self.raw)
    }

    pub async fn json(self) -> Value {
        let bytes = self.bytes().await;
        serde_json::from_slice(&bytes)
            .unwrap_or_else(|e| panic!("not JSON ({e}): {}", String::from_utf8_lossy(&bytes)))
    }

    /// The data of the next SSE event; `None` at the end of the body.
    pub async fn next_event(&mut self) -> Option<String> {
        loop {
            if let Some(e) = self.events.pop_front() {
                return Some(e);
            }
            if !self.read_more().await {
                return None;
            }
        }
    }

    /// Every remaining event's data, failing the test after `within`.
    pub async fn events(mut self, within: Duration) -> (Vec<String>, Vec<u8>) {
        let mut out = Vec::new();
        tokio::time::timeout(within, async {
            while let Some(e) = self.next_event().await {
                out.push(e);
            }
        })
        .await
        .unwrap_or_else(|_| {
            panic!(
                "the stream did not end within {within:?}; events so far: {}",
                out.len()
            )
        });
        (out, self.raw)
    }

    /// Reads one more body frame into the parser; false at the end.
    async fn read_more(&mut self) -> bool {
        if self.ended {
            return false;
        }
        let events = &mut self.events;
        match self.body.frame().await {
            Some(Ok(frame)) => {
                if let Ok(data) = frame.into_data() {
                    self.raw.extend_from_slice(&data);
                    self.parser
                        .feed(&data, &mut |e| events.push_back(e.data.to_string()))
                        .unwrap();
                }
                true
            }
            Some(Err(e)) => panic!("the hub's response body failed: {e}"),
            None => {
                self.ended = true;
                self.parser
                    .finish(&mut |e| events.push_back(e.data.to_string()))
                    .unwrap();
                !self.events.is_empty()
            }
        }
    }
}
