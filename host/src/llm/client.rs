//! The upstream HTTP client: HTTP/1.1 over the shared [`crate::http_client`] (TLS
//! by rustls with the webpki roots; plain HTTP for local servers such as Ollama),
//! a small keep-alive pool, the connect / first-byte / idle timeouts, and the end
//! of every upstream exchange when the hub shuts down.
//!
//! The pool is ours rather than hyper-util's legacy client: one `Vec` of idle
//! connections per (scheme, host, port), most recently used first. A connection
//! returns to the pool only after its response body was read to the end; a body
//! dropped early drops the connection, which is how a cancelled stream closes the
//! upstream request at once.
//!
//! A hub that shuts down gives its in-flight requests `server.shutdown_grace_secs`
//! (`surfaces::server`); those still reading from a provider then are ended here,
//! in the one place every upstream byte passes: [`Client::shut_down`] makes every
//! wait for a response head fail with [`SendError::ShuttingDown`] and every body
//! read with [`ResponseBodyError::ShuttingDown`], so each surface reports it the
//! way it reports any broken upstream read (`llm::terminal`): an error, never a
//! stream that looks finished.

use super::providers::BaseUrl;
use super::trace::Trace;
use crate::http_client;
use crate::race::{Race, race};
use bytes::Bytes;
use http_body_util::{BodyExt, Full};
use hyper::body::Incoming;
use hyper::client::conn::http1::SendRequest;
use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};
use tokio::sync::watch;

type Sender = SendRequest<Full<Bytes>>;

/// Idle connections older than this are not reused (servers close theirs after a
/// while, and a request on a half-closed socket fails).
const POOL_IDLE: Duration = Duration::from_secs(30);
/// Idle connections kept per host.
const POOL_PER_HOST: usize = 8;

#[derive(Clone, PartialEq, Eq, Hash, Debug)]
struct PoolKey {
    https: bool,
    host: String,
    port: u16,
}

impl PoolKey {
    fn of(base: &BaseUrl) -> PoolKey {
        PoolKey {
            https: base.https,
            host: base.host.clone(),
            port: base.port,
        }
    }
}

#[derive(Default)]
struct Pool {
    idle: Mutex<HashMap<PoolKey, Vec<(Sender, Instant)>>>,
}

impl Pool {
    fn take(&self, key: &PoolKey) -> Option<Sender> {
        let mut idle = self.idle.lock().unwrap_or_else(|e| e.into_inner());
        let list = idle.get_mut(key)?;
        while let Some((sender, since)) = list.pop() {
            if since.elapsed() < POOL_IDLE && !sender.is_closed() {
                return Some(sender);
            }
        }
        None
    }

    fn put(&self, key: PoolKey, sender: Sender) {
        if sender.is_closed() {
            return;
        }
        let mut idle = self.idle.lock().unwrap_or_else(|e| e.into_inner());
        let list = idle.entry(key).or_default();
        list.retain(|(s, since)| since.elapsed() < POOL_IDLE && !s.is_closed());
        if list.len() < POOL_PER_HOST {
            list.push((sender, Instant::now()));
        }
    }
}

/// The error behind a [`SendError`] or a [`ResponseBodyError`]: the failure itself
/// (returned by their `source()`) and the text they show for it. Shared behind an
/// `Arc` so the errors holding it (`UpstreamError`, `StreamError`) stay `Clone`;
/// two causes are equal when their texts are, as `hyper::Error` and `io::Error`
/// have no equality of their own.
#[derive(Clone)]
pub struct Cause {
    text: String,
    error: Arc<dyn std::error::Error + Send + Sync>,
}

impl Cause {
    /// `error`, shown as its own text.
    pub(crate) fn new(error: impl std::error::Error + Send + Sync + 'static) -> Cause {
        Cause {
            text: error.to_string(),
            error: Arc::new(error),
        }
    }

    /// `error`, shown as `text` (which adds what was being done).
    pub(crate) fn with_text(text: String, error: impl std::error::Error + Send + Sync + 'static) -> Cause {
        Cause {
            text,
            error: Arc::new(error),
        }
    }

    /// The underlying error.
    pub fn error(&self) -> &(dyn std::error::Error + Send + Sync + 'static) {
        self.error.as_ref()
    }
}

impl std::fmt::Debug for Cause {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Cause")
            .field("text", &self.text)
            .field("error", &self.error)
            .finish()
    }
}

impl std::fmt::Display for Cause {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.text)
    }
}

impl PartialEq for Cause {
    fn eq(&self, other: &Cause) -> bool {
        self.text == other.text
    }
}

impl Eq for Cause {}

/// Why a request got no response.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum SendError {
    /// DNS, TCP or TLS failed.
    Connect(Cause),
    /// Connecting took longer than the connect timeout.
    ConnectTimeout(Duration),
    /// No response head within the first-byte timeout.
    FirstByteTimeout(Duration),
    /// The connection broke before a response head arrived.
    Protocol(Cause),
    /// The hub is shutting down and its grace ran out (see the module docs).
    ShuttingDown,
}

impl SendError {
    /// Connect failures are safe to retry: the upstream never saw the request.
    pub fn is_connect(&self) -> bool {
        matches!(self, SendError::Connect(_) | SendError::ConnectTimeout(_))
    }

    /// The status a surface answers with when a request got no response: 504 for
    /// the timeouts, 503 while the hub shuts down, else 502.
    pub fn status(&self) -> http::StatusCode {
        match self {
            SendError::ConnectTimeout(_) | SendError::FirstByteTimeout(_) => {
                http::StatusCode::GATEWAY_TIMEOUT
            }
            SendError::ShuttingDown => http::StatusCode::SERVICE_UNAVAILABLE,
            SendError::Connect(_) | SendError::Protocol(_) => http::StatusCode::BAD_GATEWAY,
        }
    }

    /// The `code` of the OpenAI-style error that reports it: `hub_shutting_down`
    /// (as for a stream the shutdown ended, `llm::terminal`), else
    /// `upstream_unavailable`.
    pub fn code(&self) -> &'static str {
        match self {
            SendError::ShuttingDown => "hub_shutting_down",
            _ => "upstream_unavailable",
        }
    }
}

impl std::fmt::Display for SendError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            SendError::Connect(m) => write!(f, "cannot connect: {m}"),
            SendError::ConnectTimeout(d) => write!(f, "connecting took longer than {} ms", d.as_millis()),
            SendError::FirstByteTimeout(d) => write!(f, "no response within {} ms", d.as_millis()),
            SendError::Protocol(m) => write!(f, "the connection failed: {m}"),
            SendError::ShuttingDown => f.write_str(SHUTTING_DOWN),
        }
    }
}

impl std::error::Error for SendError {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        match self {
            SendError::Connect(cause) | SendError::Protocol(cause) => Some(cause.error()),
            SendError::ConnectTimeout(_) | SendError::FirstByteTimeout(_) | SendError::ShuttingDown => None,
        }
    }
}

/// Why reading a response body stopped.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ResponseBodyError {
    /// Nothing arrived for longer than the idle timeout.
    Idle(Duration),
    /// The connection failed while reading.
    Read(Cause),
    /// The body is larger than the limit given to `collect`.
    TooLarge(usize),
    /// The upstream's event stream cannot be read (a provider adapter parses it).
    Parse(crate::sse::ParseError),
    /// A line of an NDJSON stream is longer than the provider's `max_event_kb`
    /// (holds the limit in bytes).
    LineTooLong(usize),
    /// The hub is shutting down and its grace ran out (see the module docs).
    ShuttingDown,
}

/// What a request or a body read that the hub's shutdown ended says.
const SHUTTING_DOWN: &str =
    "the hub is shutting down: the upstream answer was not finished within its shutdown grace";

impl std::fmt::Display for ResponseBodyError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            ResponseBodyError::Idle(d) => write!(f, "the upstream sent nothing for {} ms", d.as_millis()),
            ResponseBodyError::Read(m) => write!(f, "the upstream connection failed mid-response: {m}"),
            ResponseBodyError::TooLarge(n) => write!(f, "the upstream response is larger than {n} bytes"),
            ResponseBodyError::Parse(e) => write!(f, "the upstream stream is unusable: {e}"),
            ResponseBodyError::LineTooLong(n) => write!(
                f,
                "an upstream stream line is longer than {n} bytes (the provider's max_event_kb)"
            ),
            ResponseBodyError::ShuttingDown => f.write_str(SHUTTING_DOWN),
        }
    }
}

impl std::error::Error for ResponseBodyError {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        match self {
            ResponseBodyError::Read(cause) => Some(cause.error()),
            ResponseBodyError::Parse(e) => Some(e),
            ResponseBodyError::Idle(_)
            | ResponseBodyError::TooLarge(_)
            | ResponseBodyError::LineTooLong(_)
            | ResponseBodyError::ShuttingDown => None,
        }
    }
}

/// Timeouts of one request.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Timeouts {
    pub connect: Duration,
    pub first_byte: Duration,
    pub idle: Duration,
}

/// A response head and its body.
pub struct Response {
    /// The upstream's status code.
    pub status: http::StatusCode,
    /// The upstream's response headers.
    pub headers: http::HeaderMap,
    /// The body, not yet read.
    pub body: ResponseBody,
}

/// A response body read frame by frame under the idle timeout.
pub struct ResponseBody {
    incoming: Incoming,
    idle: Duration,
    /// When the last bytes arrived: the idle deadline survives a cancelled `chunk()`
    /// (callers race it against keepalive timers).
    last: tokio::time::Instant,
    /// Where the connection goes back once the body is read to the end.
    release: Option<(Arc<Pool>, PoolKey, Sender)>,
    /// The client's shutdown (see [`Client::shut_down`]).
    closing: Closing,
    /// What the bytes read pass through before the caller sees them (a provider
    /// adapter's translation, `llm::adapter`), and whether it was finished.
    recode: Option<(Box<dyn Recode>, bool)>,
    /// The wire trace and this exchange's number in it (`llm::trace`).
    trace: Option<(Arc<Trace>, u64)>,
}

/// A translation of a response body into another one, bytes in, bytes out: how a
/// provider adapter (`llm::adapter`) turns a native answer into the OpenAI one
/// the hub reads. Its errors are what a body read fails with.
pub(crate) trait Recode: Send {
    /// Takes the next bytes of the upstream body, appending output to `out`.
    fn feed(&mut self, bytes: &[u8], out: &mut Vec<u8>) -> Result<(), ResponseBodyError>;
    /// The upstream body ended: appends what is left to `out`.
    fn finish(&mut self, out: &mut Vec<u8>) -> Result<(), ResponseBodyError>;
}

impl ResponseBody {
    /// This body with its bytes passed through `recode` (see [`Recode`]).
    pub(crate) fn recode(mut self, recode: Box<dyn Recode>) -> ResponseBody {
        self.recode = Some((recode, false));
        self
    }

    /// The next piece of the body (translated, when it is recoded); `None` at
    /// the end. Cancel-safe: a read that is dropped loses nothing.
    pub async fn chunk(&mut self) -> Result<Option<Bytes>, ResponseBodyError> {
        if self.recode.is_none() {
            return self.raw_chunk().await;
        }
        loop {
            if self.recode.as_ref().is_some_and(|(_, ended)| *ended) {
                return Ok(None);
            }
            let read = self.raw_chunk().await?;
            let (recode, ended) = self.recode.as_mut().expect("checked above");
            let mut out = Vec::new();
            match read {
                Some(bytes) => recode.feed(&bytes, &mut out)?,
                None => {
                    *ended = true;
                    recode.finish(&mut out)?;
                }
            }
            if !out.is_empty() {
                return Ok(Some(Bytes::from(out)));
            }
        }
    }

    /// This body with what it reads written to `trace` as exchange `id`.
    pub(crate) fn traced(mut self, trace: Arc<Trace>, id: u64) -> ResponseBody {
        self.trace = Some((trace, id));
        self
    }

    /// The next piece of the body as the upstream sent it (and traced); `None`
    /// at the end.
    async fn raw_chunk(&mut self) -> Result<Option<Bytes>, ResponseBodyError> {
        let read = self.untraced_chunk().await;
        if let Some((trace, id)) = &self.trace {
            match &read {
                Ok(Some(bytes)) => trace.body(*id, bytes),
                Ok(None) => trace.end(*id, None),
                Err(e) => trace.end(*id, Some(e)),
            }
        }
        read
    }

    async fn untraced_chunk(&mut self) -> Result<Option<Bytes>, ResponseBodyError> {
        loop {
            let read = tokio::time::timeout_at(self.last + self.idle, self.incoming.frame());
            let read = match race(read, self.closing.wait()).await {
                Race::First(read) => read,
                Race::Second(()) => return Err(ResponseBodyError::ShuttingDown),
            };
            match read {
                Err(_) => return Err(ResponseBodyError::Idle(self.idle)),
                Ok(None) => {
                    if let Some((pool, key, sender)) = self.release.take() {
                        pool.put(key, sender);
                    }
                    return Ok(None);
                }
                Ok(Some(Err(e))) => return Err(ResponseBodyError::Read(Cause::new(e))),
                Ok(Some(Ok(frame))) => {
                    if let Ok(data) = frame.into_data()
                        && !data.is_empty()
                    {
                        self.last = tokio::time::Instant::now();
                        return Ok(Some(data));
                    }
                }
            }
        }
    }

    /// The whole body, refusing more than `limit` bytes.
    pub async fn collect(mut self, limit: usize) -> Result<Bytes, ResponseBodyError> {
        let mut buf = bytes::BytesMut::new();
        while let Some(chunk) = self.chunk().await? {
            if buf.len() + chunk.len() > limit {
                return Err(ResponseBodyError::TooLarge(limit));
            }
            buf.extend_from_slice(&chunk);
        }
        Ok(buf.freeze())
    }
}

/// Whether the hub shuts down: a receiver of [`Client::shut_down`]'s flag.
#[derive(Clone)]
struct Closing(watch::Receiver<bool>);

impl Closing {
    /// Resolves once the hub shuts down (never when the client is gone, which
    /// only happens once nothing reads through it). Cancel-safe.
    async fn wait(&mut self) {
        if self.0.wait_for(|closing| *closing).await.is_err() {
            std::future::pending::<()>().await;
        }
    }
}

/// The shared upstream client. Cheap to share behind an `Arc`.
pub(crate) struct Client {
    pool: Arc<Pool>,
    /// Set once by [`Client::shut_down`].
    closing: watch::Sender<bool>,
}

impl Default for Client {
    fn default() -> Client {
        Client {
            pool: Arc::default(),
            closing: watch::channel(false).0,
        }
    }
}

impl Client {
    pub(crate) fn new() -> Client {
        Client::default()
    }

    /// Whether [`Client::shut_down`] was called.
    pub(crate) fn is_shut_down(&self) -> bool {
        *self.closing.borrow()
    }

    /// Ends every upstream exchange: requests waiting for a response head and
    /// body reads fail with `ShuttingDown` at once, and so does every request sent
    /// after (see the module docs). Idempotent.
    pub(crate) fn shut_down(&self) {
        self.closing.send_replace(true);
    }

    /// Sends one request (no retries here). `req` carries path, method and headers;
    /// the `Host` header is set from `base`. Once the hub shuts down, `ShuttingDown`.
    pub(crate) async fn send(
        &self,
        base: &BaseUrl,
        req: http::Request<Full<Bytes>>,
        timeouts: Timeouts,
    ) -> Result<Response, SendError> {
        let mut closing = Closing(self.closing.subscribe());
        if *closing.0.borrow() {
            return Err(SendError::ShuttingDown);
        }
        match race(self.send_unless_closing(base, req, timeouts), closing.wait()).await {
            Race::First(response) => response,
            Race::Second(()) => Err(SendError::ShuttingDown),
        }
    }

    async fn send_unless_closing(
        &self,
        base: &BaseUrl,
        mut req: http::Request<Full<Bytes>>,
        timeouts: Timeouts,
    ) -> Result<Response, SendError> {
        let key = PoolKey::of(base);
        req.headers_mut().insert(
            http::header::HOST,
            http::HeaderValue::try_from(base.authority.as_str())
                .map_err(|e| SendError::Connect(Cause::new(e)))?,
        );
        // A pooled connection may have been closed by the server since; a request
        // that fails on one before any response is retried once on a fresh one.
        let pooled = self.pool.take(&key);
        let (mut sender, reused) = match pooled {
            Some(sender) => (sender, true),
            None => (self.connect(base, timeouts.connect).await?, false),
        };
        let first_try = if reused { Some(clone_request(&req)) } else { None };
        let result = send_on(&mut sender, req, timeouts.first_byte).await;
        let (sender, response) = match (result, first_try) {
            (Err(SendError::Protocol(_)), Some(req)) => {
                let mut fresh = self.connect(base, timeouts.connect).await?;
                let r = send_on(&mut fresh, req, timeouts.first_byte).await?;
                (fresh, r)
            }
            (result, _) => (sender, result?),
        };
        let (parts, incoming) = response.into_parts();
        Ok(Response {
            status: parts.status,
            headers: parts.headers,
            body: ResponseBody {
                incoming,
                idle: timeouts.idle,
                last: tokio::time::Instant::now(),
                release: Some((self.pool.clone(), key, sender)),
                closing: Closing(self.closing.subscribe()),
                recode: None,
                trace: None,
            },
        })
    }

    async fn connect(&self, base: &BaseUrl, timeout: Duration) -> Result<Sender, SendError> {
        match tokio::time::timeout(timeout, self.connect_inner(base)).await {
            Ok(result) => result,
            Err(_) => Err(SendError::ConnectTimeout(timeout)),
        }
    }

    async fn connect_inner(&self, base: &BaseUrl) -> Result<Sender, SendError> {
        let addrs = tokio::net::lookup_host((base.host.as_str(), base.port))
            .await
            .map_err(|e| SendError::Connect(Cause::with_text(format!("{}: {e}", base.host), e)))?;
        let tcp = http_client::connect_tcp(addrs).await.map_err(|e| match e {
            http_client::ConnectError::NoAddress => SendError::Connect(Cause::with_text(
                format!("{} resolved to no address", base.host),
                e,
            )),
            e => SendError::Connect(Cause::new(e)),
        })?;
        let stream = http_client::wrap(tcp, base.https.then_some(base.host.as_str()))
            .await
            .map_err(|e| SendError::Connect(Cause::new(e)))?;
        let (sender, conn) = http_client::handshake(stream)
            .await
            .map_err(|e| SendError::Connect(Cause::new(e)))?;
        tokio::spawn(async move {
            // Ends when the server closes, or when the sender and body are dropped.
            let _ = conn.await;
        });
        Ok(sender)
    }
}

async fn send_on(
    sender: &mut Sender,
    req: http::Request<Full<Bytes>>,
    first_byte: Duration,
) -> Result<http::Response<Incoming>, SendError> {
    let fut = async {
        sender
            .ready()
            .await
            .map_err(|e| SendError::Protocol(Cause::new(e)))?;
        sender
            .send_request(req)
            .await
            .map_err(|e| SendError::Protocol(Cause::new(e)))
    };
    match tokio::time::timeout(first_byte, fut).await {
        Ok(result) => result,
        Err(_) => Err(SendError::FirstByteTimeout(first_byte)),
    }
}

fn clone_request(req: &http::Request<Full<Bytes>>) -> http::Request<Full<Bytes>> {
    let mut builder = http::Request::builder()
        .method(req.method().clone())
        .uri(req.uri().clone());
    if let Some(h) = builder.headers_mut() {
        *h = req.headers().clone();
    }
    // Full<Bytes> is a cheap clone of the same buffer.
    builder
        .body(req.body().clone())
        .expect("a request that was valid once is valid again")
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::error::Error as _;
    use std::io::{Error, ErrorKind};

    #[test]
    fn errors_show_the_same_text_and_keep_their_cause() {
        let refused = Error::new(ErrorKind::ConnectionRefused, "refused");
        let e = SendError::Connect(Cause::with_text(format!("api.example: {refused}"), refused));
        assert_eq!(e.to_string(), "cannot connect: api.example: refused");
        let cause = e.source().expect("the cause").downcast_ref::<Error>();
        assert_eq!(cause.map(Error::kind), Some(ErrorKind::ConnectionRefused));
        assert_eq!(e.clone(), e);

        let e = ResponseBodyError::Read(Cause::new(Error::new(ErrorKind::UnexpectedEof, "cut")));
        assert_eq!(e.to_string(), "the upstream connection failed mid-response: cut");
        assert!(e.source().is_some_and(|c| c.is::<Error>()));
        assert_eq!(ResponseBodyError::TooLarge(1).source().map(|_| ()), None);
    }
}
