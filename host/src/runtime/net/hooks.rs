//! The per-call wasi:http send hook: applies the plugin's [`NetPolicy`] to each
//! request, resolves and filters its addresses, and makes the request through the
//! shared [`crate::http_client`] with every timeout clamped to the call's deadline.

use super::super::budget::{HttpBudget, LogBudget, call_log};
use super::super::secrets::{CallSecrets, Scrubber};
use super::policy::{NetPolicy, Target, public_only};
use crate::http_client::{self, ConnectError, Connection};
use crate::logging::Level;
use crate::telemetry::{Kind, Span};
use bytes::Bytes;
use http_body::{Body, Frame};
use http_body_util::BodyExt;
use std::future::Future;
use std::net::SocketAddr;
use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll};
use std::time::Duration;
use tokio::time::{Instant, Sleep};
use wasmtime_wasi_http::{Error as HttpError, RequestOptions, WasiBody, WasiHttpHooks};

/// The per-call wasi:http hooks: one plugin's policy, the call's deadline, its
/// HTTP and log budgets, and the tags for log lines.
pub(crate) struct NetHooks {
    pub policy: Arc<NetPolicy>,
    pub deadline: Instant,
    pub plugin: Arc<str>,
    pub call_id: Arc<str>,
    pub log: Arc<LogBudget>,
    pub http: Arc<HttpBudget>,
    /// The plugin's secrets, injected into requests to their declared hosts.
    pub secrets: Arc<CallSecrets>,
    /// The call's span: each request is a CLIENT span under it.
    pub trace: Option<crate::telemetry::SpanContext>,
}

type IoFuture = Box<dyn Future<Output = Result<(), HttpError>> + Send>;
type SendResult = Result<(http::Response<WasiBody>, IoFuture), HttpError>;

impl WasiHttpHooks for NetHooks {
    fn send_request(
        &mut self,
        request: http::Request<WasiBody>,
        options: Option<RequestOptions>,
        _fut: Box<dyn Future<Output = Result<(), HttpError>> + Send>,
    ) -> Box<dyn Future<Output = SendResult> + Send> {
        let (plugin, call_id, deadline) = (self.plugin.clone(), self.call_id.clone(), self.deadline);
        let log = self.log.clone();
        // A value the call was given (revealed, or echoed back to it) never leaves
        // in a URL or a header.
        let scrubber = self.secrets.scrubber();
        if carries(&scrubber, &request) {
            call_log!(
                log,
                Level::Warn,
                "plugin {plugin} call {call_id}: HTTP request refused: its URL or a header carries a secret of the call"
            );
            return Box::new(async { Err(HttpError::HttpRequestDenied) });
        }
        let mut request = request;
        let mut span = request_span(self.trace.as_ref(), &request);
        if self.policy.trace_context {
            crate::telemetry::inject(request.headers_mut(), span.context());
        }
        // Admitted now, when the guest calls `handle`, so requests it has not
        // polled yet count as open too; the permit lives as long as the connection.
        let admitted = self.policy.check(request.uri()).map(|t| (t, self.http.start()));
        let secrets = self.secrets.clone();
        Box::new(async move {
            let (target, permit) = match admitted {
                Ok((target, Ok(permit))) => (target, permit),
                Ok((_, Err(limit))) => {
                    call_log!(
                        log,
                        Level::Warn,
                        "plugin {plugin} call {call_id}: HTTP request refused: {limit}"
                    );
                    return Err(HttpError::InternalError(Some(limit.to_string())));
                }
                Err(reason) => {
                    let reason = scrubber.text(&reason.to_string());
                    call_log!(
                        log,
                        Level::Warn,
                        "plugin {plugin} call {call_id}: HTTP request denied: {reason}"
                    );
                    return Err(HttpError::HttpRequestDenied);
                }
            };
            let result = send(target, request, options, deadline, &log, &secrets).await;
            match &result {
                Ok((response, _)) => {
                    span.set("http.response.status_code", i64::from(response.status().as_u16()))
                }
                Err(e) => {
                    // The variant's name (`ConnectionRefused`, `DnsTimeout`, ...).
                    let kind = format!("{e:?}");
                    let kind = kind.split(['(', ' ', '{']).next().unwrap_or("HttpError");
                    span.fail(kind, &e.to_string())
                }
            }
            match result {
                Ok((response, io)) => {
                    let io: IoFuture = Box::new(async move {
                        let _permit = permit;
                        Pin::from(io).await
                    });
                    Ok((response, io))
                }
                Err(e) => {
                    call_log!(
                        log,
                        Level::Warn,
                        "plugin {plugin} call {call_id}: HTTP request failed: {e}"
                    );
                    Err(e)
                }
            }
        })
    }
}

/// The CLIENT span of a plugin's request (named by its method, the HTTP
/// conventions' client span name), with the destination but not the URL's path
/// or query, which may carry data.
fn request_span(parent: Option<&crate::telemetry::SpanContext>, request: &http::Request<WasiBody>) -> Span {
    let mut span = Span::child_of(parent, Kind::Client, format_args!("{}", request.method()));
    if span.recording() {
        span.set("http.request.method", request.method().as_str());
        if let Some(host) = request.uri().host() {
            span.set("server.address", host);
        }
        if let Some(port) = request.uri().port_u16() {
            span.set("server.port", i64::from(port));
        }
    }
    span
}

/// Whether the URL or a header of `request` holds a value `scrubber` recognises.
fn carries(scrubber: &Scrubber, request: &http::Request<WasiBody>) -> bool {
    !scrubber.is_empty()
        && (scrubber.finds(&request.uri().to_string())
            || request
                .headers()
                .values()
                .any(|v| scrubber.finds(&String::from_utf8_lossy(v.as_bytes()))))
}

/// Resolves `target` and keeps the addresses the policy allows.
async fn resolve(target: &Target, deadline: Instant, log: &LogBudget) -> Result<Vec<SocketAddr>, HttpError> {
    if let Some(ip) = target.literal {
        return Ok(vec![SocketAddr::new(ip, target.port)]);
    }
    let lookup = tokio::net::lookup_host((target.host.as_str(), target.port));
    let addrs: Vec<SocketAddr> = match tokio::time::timeout_at(deadline, lookup).await {
        Err(_) => return Err(HttpError::DnsTimeout),
        Ok(Err(e)) => {
            return Err(HttpError::DnsError {
                rcode: Some(e.to_string()),
                info_code: None,
            });
        }
        Ok(Ok(addrs)) => addrs.collect(),
    };
    let public = public_only(&addrs);
    if public.is_empty() {
        call_log!(
            log,
            Level::Warn,
            "HTTP request to {} refused: it resolves only to non-public addresses {addrs:?} \
             (grant the IP literal to allow that)",
            target.host
        );
        return Err(HttpError::DestinationIpProhibited);
    }
    Ok(public)
}

fn clamp(requested: Option<Duration>, deadline: Instant) -> Duration {
    let left = deadline.saturating_duration_since(Instant::now());
    requested.unwrap_or(left).min(left)
}

async fn send(
    target: Target,
    mut request: http::Request<WasiBody>,
    options: Option<RequestOptions>,
    deadline: Instant,
    log: &LogBudget,
    secrets: &CallSecrets,
) -> SendResult {
    let addrs = resolve(&target, deadline, log).await?;
    // After the grant and address checks: only a request that will go to the
    // declared destination gets its headers.
    super::inject::inject(&target, request.headers_mut(), secrets).await?;
    let connect_by = Instant::now() + clamp(options.and_then(|o| o.connect_timeout), deadline);
    let tcp = tokio::time::timeout_at(connect_by, http_client::connect_tcp(addrs))
        .await
        .map_err(|_| HttpError::ConnectionTimeout)?
        .map_err(connect_error)?;

    // Only the origin-form path goes on the wire; the Host header carries the name.
    let path = request
        .uri()
        .path_and_query()
        .map(|p| p.as_str())
        .unwrap_or("/")
        .to_string();
    *request.uri_mut() = http::Uri::builder()
        .path_and_query(path)
        .build()
        .map_err(|_| HttpError::HttpRequestUriInvalid)?;

    let first_byte_by = Instant::now() + clamp(options.and_then(|o| o.first_byte_timeout), deadline);
    let between = clamp(options.and_then(|o| o.between_bytes_timeout), deadline);
    let tls_host = target.tls.then_some(target.host.as_str());
    let stream = tokio::time::timeout_at(connect_by, http_client::wrap(tcp, tls_host))
        .await
        .map_err(|_| HttpError::ConnectionTimeout)?
        .map_err(connect_error)?;
    let (sender, conn) = tokio::time::timeout_at(first_byte_by, http_client::handshake(stream))
        .await
        .map_err(|_| HttpError::ConnectionTimeout)??;
    exchange(sender, conn, request, first_byte_by, between, deadline).await
}

/// The wasi-http error for a failed connect: the guest sees the same error codes
/// wasi-http's own client would report.
fn connect_error(e: ConnectError) -> HttpError {
    match e {
        ConnectError::NoAddress => HttpError::ConnectionRefused,
        ConnectError::Tcp { source, .. } => HttpError::Connect(source),
        ConnectError::ServerName { source, .. } => HttpError::from(source),
        ConnectError::Tls(e) => HttpError::Tls(e),
    }
}

/// Runs one HTTP/1 exchange on a connection: drives the connection while waiting
/// for the response head, then hands the connection driver back as the I/O future
/// wasi-http keeps polling while the body streams.
async fn exchange(
    mut sender: hyper::client::conn::http1::SendRequest<WasiBody>,
    conn: Connection<WasiBody>,
    request: http::Request<WasiBody>,
    first_byte_by: Instant,
    between: Duration,
    deadline: Instant,
) -> SendResult {
    let mut conn = Box::pin(conn);
    let mut conn_done = false;
    let mut response = std::pin::pin!(sender.send_request(request));
    // Drive the connection (until it ends) while the response head is awaited.
    let head = tokio::time::timeout_at(
        first_byte_by,
        std::future::poll_fn(|cx| {
            if !conn_done && let Poll::Ready(ended) = conn.as_mut().poll(cx) {
                conn_done = true;
                if let Err(e) = ended {
                    return Poll::Ready(Err(HttpError::from(e)));
                }
            }
            response.as_mut().poll(cx).map_err(HttpError::from)
        }),
    )
    .await
    .map_err(|_| HttpError::ConnectionReadTimeout)??;
    let (parts, incoming) = head.into_parts();
    let response = http::Response::from_parts(
        parts,
        DeadlineBody::new(incoming, between, deadline).boxed_unsync(),
    );
    let io: IoFuture = Box::new(async move {
        if conn_done {
            return Ok(());
        }
        conn.await.map_err(HttpError::from)
    });
    Ok((response, io))
}

/// A response body that fails with a read timeout when no frame arrives within the
/// between-bytes timeout, or when the call's deadline passes.
struct DeadlineBody {
    inner: hyper::body::Incoming,
    between: Duration,
    deadline: Instant,
    timer: Pin<Box<Sleep>>,
}

impl DeadlineBody {
    fn new(inner: hyper::body::Incoming, between: Duration, deadline: Instant) -> DeadlineBody {
        let timer = Box::pin(tokio::time::sleep_until((Instant::now() + between).min(deadline)));
        DeadlineBody {
            inner,
            between,
            deadline,
            timer,
        }
    }
}

impl Body for DeadlineBody {
    type Data = Bytes;
    type Error = HttpError;

    fn poll_frame(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
    ) -> Poll<Option<Result<Frame<Bytes>, HttpError>>> {
        match Pin::new(&mut self.inner).poll_frame(cx) {
            Poll::Ready(Some(Ok(frame))) => {
                let next = (Instant::now() + self.between).min(self.deadline);
                self.timer.as_mut().reset(next);
                Poll::Ready(Some(Ok(frame)))
            }
            Poll::Ready(Some(Err(e))) => Poll::Ready(Some(Err(HttpError::from(e)))),
            Poll::Ready(None) => Poll::Ready(None),
            Poll::Pending => match self.timer.as_mut().poll(cx) {
                Poll::Ready(()) => Poll::Ready(Some(Err(HttpError::ConnectionReadTimeout))),
                Poll::Pending => Poll::Pending,
            },
        }
    }

    fn is_end_stream(&self) -> bool {
        self.inner.is_end_stream()
    }

    fn size_hint(&self) -> http_body::SizeHint {
        self.inner.size_hint()
    }
}
