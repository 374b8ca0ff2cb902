//! A scripted OpenAI-compatible upstream on 127.0.0.1 for tests of everything that
//! calls a model provider (the proxy, the UI stream, the agent loop).
//!
//! Each request to a path takes the next [`Reply`] queued for that path (or the
//! path's default): a status, headers, and either a JSON body or SSE frames with
//! optional delays, an abrupt connection drop, or a hang. The upstream records every
//! request it got, counts accepted connections, and counts streams whose client went
//! away before the script ended (so tests can observe cancellation).

use bytes::Bytes;
use http::{HeaderMap, Request, Response, StatusCode};
use http_body::Frame as BodyFrame;
use http_body_util::BodyExt;
use hyper::body::Incoming;
use hyper::server::conn::http1;
use hyper::service::service_fn;
use serde_json::Value;
use std::collections::{HashMap, VecDeque};
use std::net::SocketAddr;
use std::path::PathBuf;
use std::pin::Pin;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::task::{Context, Poll};
use std::time::Duration;
use tokio::sync::{Notify, mpsc};
use wasmtime_wasi_http::io::TokioIo;

/// The chat completions path, relative to the base URL `http://addr/v1`.
pub const CHAT: &str = "/v1/chat/completions";
pub const MODELS: &str = "/v1/models";

/// One step of a scripted SSE body.
#[derive(Clone, Debug)]
pub enum Frame {
    /// `data: <text>\n\n`.
    Data(String),
    /// Bytes sent as they are (comments, odd line endings, partial frames).
    Raw(Bytes),
    /// Waits before the next frame.
    Delay(Duration),
    /// Closes the connection abruptly (the body never ends properly).
    Drop,
    /// Sends nothing more until the client goes away.
    Hang,
    /// Waits until the test lets it go on (`Notify::notify_one`).
    Until(Arc<tokio::sync::Notify>),
}

/// What the upstream answers to one request.
#[derive(Clone, Debug)]
pub struct Reply {
    pub status: u16,
    pub headers: Vec<(String, String)>,
    /// Waits this long before sending the response head.
    pub head_delay: Duration,
    pub body: ReplyBody,
}

#[derive(Clone, Debug)]
pub enum ReplyBody {
    Json(Value),
    Bytes(Bytes),
    Sse(Vec<Frame>),
}

impl Reply {
    /// `200 text/event-stream` with `frames`.
    pub fn sse(frames: Vec<Frame>) -> Reply {
        Reply {
            status: 200,
            headers: vec![("content-type".into(), "text/event-stream".into())],
            head_delay: Duration::ZERO,
            body: ReplyBody::Sse(frames),
        }
    }

    /// A JSON answer with `status`.
    pub fn json(status: u16, body: Value) -> Reply {
        Reply {
            status,
            headers: vec![("content-type".into(), "application/json".into())],
            head_delay: Duration::ZERO,
            body: ReplyBody::Json(body),
        }
    }

    /// An exact byte body with `status` and content type.
    pub fn bytes(status: u16, content_type: &str, body: impl Into<Bytes>) -> Reply {
        Reply {
            status,
            headers: vec![("content-type".into(), content_type.into())],
            head_delay: Duration::ZERO,
            body: ReplyBody::Bytes(body.into()),
        }
    }

    /// `200 application/x-ndjson` with one line per value (Ollama's stream).
    pub fn ndjson(lines: &[Value]) -> Reply {
        let frames = lines
            .iter()
            .map(|l| Frame::Raw(Bytes::from(format!("{l}\n"))))
            .collect();
        Reply {
            status: 200,
            headers: vec![("content-type".into(), "application/x-ndjson".into())],
            head_delay: Duration::ZERO,
            body: ReplyBody::Sse(frames),
        }
    }

    /// `200 text/event-stream` with one event per value, named by its `type`
    /// (Anthropic's stream).
    pub fn typed_events(events: &[Value]) -> Reply {
        let frames = events
            .iter()
            .map(|e| {
                Frame::Raw(Bytes::from(format!(
                    "event: {}\ndata: {e}\n\n",
                    e["type"].as_str().unwrap()
                )))
            })
            .collect();
        Reply::sse(frames)
    }

    /// An OpenAI-shaped error answer.
    pub fn error(status: u16, message: &str) -> Reply {
        Reply::json(
            status,
            serde_json::json!({"error": {"message": message, "type": "test_error", "param": null, "code": null}}),
        )
    }

    pub fn header(mut self, name: &str, value: &str) -> Reply {
        self.headers.push((name.into(), value.into()));
        self
    }

    pub fn delayed(mut self, delay: Duration) -> Reply {
        self.head_delay = delay;
        self
    }
}

/// A request the upstream received.
#[derive(Clone, Debug)]
pub struct Recorded {
    pub method: String,
    pub path: String,
    /// The query string, if the request had one.
    pub query: Option<String>,
    pub headers: HeaderMap,
    pub body: Bytes,
}

impl Recorded {
    pub fn json(&self) -> Value {
        serde_json::from_slice(&self.body).expect("the recorded request body is JSON")
    }

    pub fn header(&self, name: &str) -> Option<&str> {
        self.headers.get(name).and_then(|v| v.to_str().ok())
    }
}

#[derive(Default)]
struct State {
    queues: Mutex<HashMap<String, VecDeque<Reply>>>,
    defaults: Mutex<HashMap<String, Reply>>,
    requests: Mutex<Vec<Recorded>>,
    connections: AtomicUsize,
    cancelled: AtomicUsize,
    changed: Notify,
}

/// A running scripted upstream. Stops when dropped.
pub struct Upstream {
    pub addr: SocketAddr,
    state: Arc<State>,
    task: tokio::task::JoinHandle<()>,
}

impl Drop for Upstream {
    fn drop(&mut self) {
        self.task.abort();
    }
}

impl Upstream {
    pub async fn start() -> Upstream {
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0")
            .await
            .expect("bind the test upstream");
        let addr = listener.local_addr().unwrap();
        let state = Arc::new(State::default());
        let st = state.clone();
        let task = tokio::spawn(async move {
            loop {
                let Ok((stream, _)) = listener.accept().await else {
                    continue;
                };
                st.connections.fetch_add(1, Ordering::SeqCst);
                let _ = stream.set_nodelay(true);
                let st = st.clone();
                tokio::spawn(async move {
                    let service = service_fn(move |req| {
                        let st = st.clone();
                        async move { Ok::<_, std::convert::Infallible>(handle(st, req).await) }
                    });
                    let _ = http1::Builder::new()
                        .serve_connection(TokioIo::new(stream), service)
                        .await;
                });
            }
        });
        Upstream { addr, state, task }
    }

    /// The base URL to configure a provider with.
    pub fn base_url(&self) -> String {
        format!("http://{}/v1", self.addr)
    }

    /// Queues `reply` for the next chat completions request.
    pub fn push(&self, reply: Reply) {
        self.push_for(CHAT, reply);
    }

    pub fn push_for(&self, path: &str, reply: Reply) {
        self.state
            .queues
            .lock()
            .unwrap()
            .entry(path.into())
            .or_default()
            .push_back(reply);
    }

    /// The reply for `path` once its queue is empty.
    pub fn set_default(&self, path: &str, reply: Reply) {
        self.state.defaults.lock().unwrap().insert(path.into(), reply);
    }

    pub fn requests(&self) -> Vec<Recorded> {
        self.state.requests.lock().unwrap().clone()
    }

    /// TCP connections accepted so far.
    pub fn connections(&self) -> usize {
        self.state.connections.load(Ordering::SeqCst)
    }

    /// Streams whose client disconnected before the script was done.
    pub fn cancelled(&self) -> usize {
        self.state.cancelled.load(Ordering::SeqCst)
    }

    /// Waits until `n` streams were cancelled; false if that did not happen in time.
    pub async fn wait_cancelled(&self, n: usize, within: Duration) -> bool {
        tokio::time::timeout(within, async {
            loop {
                let notified = self.state.changed.notified();
                if self.cancelled() >= n {
                    return;
                }
                notified.await;
            }
        })
        .await
        .is_ok()
    }
}

async fn handle(st: Arc<State>, req: Request<Incoming>) -> Response<ScriptBody> {
    let (parts, body) = req.into_parts();
    let body = body.collect().await.map(|c| c.to_bytes()).unwrap_or_default();
    let path = parts.uri.path().to_string();
    st.requests.lock().unwrap().push(Recorded {
        method: parts.method.to_string(),
        path: path.clone(),
        query: parts.uri.query().map(str::to_string),
        headers: parts.headers.clone(),
        body,
    });
    let next = st
        .queues
        .lock()
        .unwrap()
        .get_mut(&path)
        .and_then(VecDeque::pop_front);
    let reply = next
        .or_else(|| st.defaults.lock().unwrap().get(&path).cloned())
        .unwrap_or_else(|| Reply::error(500, &format!("the test upstream has no script for {path}")));
    if !reply.head_delay.is_zero() {
        tokio::time::sleep(reply.head_delay).await;
    }
    let (tx, rx) = mpsc::channel::<Item>(4);
    let mut resp = Response::new(ScriptBody(rx));
    *resp.status_mut() = StatusCode::from_u16(reply.status).unwrap();
    for (name, value) in &reply.headers {
        resp.headers_mut().append(
            http::HeaderName::try_from(name.as_str()).unwrap(),
            http::HeaderValue::try_from(value.as_str()).unwrap(),
        );
    }
    let frames = match reply.body {
        ReplyBody::Json(v) => vec![Frame::Raw(Bytes::from(serde_json::to_vec(&v).unwrap()))],
        ReplyBody::Bytes(b) => vec![Frame::Raw(b)],
        ReplyBody::Sse(frames) => frames,
    };
    tokio::spawn(play(st, frames, tx));
    resp
}

async fn play(st: Arc<State>, frames: Vec<Frame>, tx: mpsc::Sender<Item>) {
    let cancelled = || {
        st.cancelled.fetch_add(1, Ordering::SeqCst);
        st.changed.notify_waiters();
    };
    for frame in frames {
        let item = match frame {
            Frame::Data(text) => Item::Data(Bytes::from(format!("data: {text}\n\n"))),
            Frame::Raw(bytes) => Item::Data(bytes),
            Frame::Delay(d) => {
                tokio::select! {
                    _ = tokio::time::sleep(d) => continue,
                    _ = tx.closed() => return cancelled(),
                }
            }
            Frame::Until(gate) => {
                tokio::select! {
                    _ = gate.notified() => continue,
                    _ = tx.closed() => return cancelled(),
                }
            }
            Frame::Drop => Item::Abort,
            Frame::Hang => {
                tx.closed().await;
                return cancelled();
            }
        };
        if tx.send(item).await.is_err() {
            return cancelled();
        }
    }
}

enum Item {
    Data(Bytes),
    Abort,
}

/// The response body: frames from the script; `Abort` makes hyper cut the
/// connection mid-body.
struct ScriptBody(mpsc::Receiver<Item>);

impl http_body::Body for ScriptBody {
    type Data = Bytes;
    type Error = std::io::Error;

    fn poll_frame(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
    ) -> Poll<Option<Result<BodyFrame<Bytes>, std::io::Error>>> {
        match self.get_mut().0.poll_recv(cx) {
            Poll::Ready(Some(Item::Data(b))) => Poll::Ready(Some(Ok(BodyFrame::data(b)))),
            Poll::Ready(Some(Item::Abort)) => Poll::Ready(Some(Err(std::io::Error::new(
                std::io::ErrorKind::ConnectionAborted,
                "scripted drop",
            )))),
            Poll::Ready(None) => Poll::Ready(None),
            Poll::Pending => Poll::Pending,
        }
    }
}

/// `tests/fixtures/openai-streams` at the repository root.
pub fn fixtures_dir() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../tests/fixtures/openai-streams")
}

/// Names of the recorded streams (file names without `.chunks.txt`), sorted.
pub fn fixture_names() -> Vec<String> {
    let mut names: Vec<String> = std::fs::read_dir(fixtures_dir())
        .expect("the fixtures directory exists")
        .filter_map(|e| {
            e.ok()?
                .file_name()
                .to_str()?
                .strip_suffix(".chunks.txt")
                .map(str::to_string)
        })
        .collect();
    names.sort();
    names
}

/// The chunk payloads of a recorded stream, one per line.
pub fn fixture_lines(name: &str) -> Vec<String> {
    let text = std::fs::read_to_string(fixtures_dir().join(format!("{name}.chunks.txt"))).unwrap();
    text.lines()
        .filter(|l| !l.trim().is_empty())
        .map(str::to_string)
        .collect()
}

/// A recorded stream replayed as a provider sends it: each line, then `[DONE]`.
pub fn fixture_frames(name: &str) -> Vec<Frame> {
    let mut frames: Vec<Frame> = fixture_lines(name).into_iter().map(Frame::Data).collect();
    frames.push(Frame::Data("[DONE]".into()));
    frames
}

/// One OpenAI chunk with a text delta (for hand-written scripts).
pub fn text_chunk(text: &str) -> String {
    serde_json::json!({"id": "x", "object": "chat.completion.chunk", "model": "scripted",
        "choices": [{"index": 0, "delta": {"content": text}, "finish_reason": null}]})
    .to_string()
}

/// One OpenAI chunk that finishes the choice.
pub fn finish_chunk(reason: &str) -> String {
    serde_json::json!({"id": "x", "object": "chat.completion.chunk", "model": "scripted",
        "choices": [{"index": 0, "delta": {}, "finish_reason": reason}]})
    .to_string()
}
