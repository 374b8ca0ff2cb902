//! Calls to a provider: request building (API key injection, extra and forwarded
//! headers), retries with backoff, and the model list.
//!
//! Retries happen only before any byte of a response was passed on: on connect
//! failures and on 429/5xx answers, at most `max_retries` times, waiting
//! `Retry-After` (or `retry-after-ms`) when the upstream says so and otherwise
//! `retry_base_ms * 2^attempt` with jitter. Once a 2xx head is returned the caller
//! streams it and nothing is ever retried.

use super::adapter::{Call, RequestError};
use super::client::{Client, Response, SendError, Timeouts};
use super::providers::{KeyError, Provider};
use super::trace::Trace;
use crate::config::ProviderKind;
use bytes::Bytes;
use http::{HeaderMap, HeaderValue, Method, StatusCode, header};
use http_body_util::Full;
use std::sync::Arc;
use std::time::Duration;

/// The header naming the Messages API version: an `anthropic` provider is sent
/// `2023-06-01` unless its `headers` set another.
const ANTHROPIC_VERSION: &str = "anthropic-version";

/// OpenRouter's app attribution, sent unless the provider's `headers` set them
/// (`HTTP-Referer`, the app's URL, is one of those headers:
/// `Config::apply_openrouter_referer` puts `[oauth] public_url` there); `User-Agent`
/// is `wasmhub/<version>` as for every provider.
const OPENROUTER_HEADERS: [(&str, &str); 2] = [("x-openrouter-title", "wasmhub"), ("x-title", "wasmhub")];

/// Longest `Retry-After` the hub waits; a longer one is passed to the client.
const MAX_RETRY_WAIT: Duration = Duration::from_secs(60);
/// Longest backoff between attempts without `Retry-After`.
const MAX_BACKOFF: Duration = Duration::from_secs(8);

/// Why a provider call failed without a response to relay.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum UpstreamError {
    /// The provider's API key cannot be sent (a hub configuration problem).
    MissingKey(KeyError),
    /// The request cannot be put in the provider's API (the client's to change).
    Request {
        /// The provider's name.
        provider: String,
        /// What the provider cannot take.
        source: RequestError,
    },
    /// No response after all attempts.
    Send {
        /// The provider's name.
        provider: String,
        /// How many times the request was sent (retries included).
        attempts: u32,
        /// Why the last attempt failed.
        error: SendError,
    },
}

impl std::fmt::Display for UpstreamError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            UpstreamError::MissingKey(e) => e.fmt(f),
            UpstreamError::Request { provider, source } => write!(f, "provider {provider:?}: {source}"),
            UpstreamError::Send {
                provider,
                attempts,
                error,
            } => {
                write!(f, "provider {provider:?}: {error}")?;
                if *attempts > 1 {
                    write!(f, " (after {attempts} attempts)")?;
                }
                Ok(())
            }
        }
    }
}

impl std::error::Error for UpstreamError {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        match self {
            UpstreamError::MissingKey(e) => Some(e),
            UpstreamError::Request { source, .. } => Some(source),
            UpstreamError::Send { error, .. } => Some(error),
        }
    }
}

/// Client request headers passed on to the upstream. Everything else (cookies, the
/// client's own `Authorization`, hop-by-hop headers) stays at the hub.
pub(crate) fn forwarded_headers(client: &HeaderMap) -> HeaderMap {
    let mut out = HeaderMap::new();
    for (name, value) in client {
        let n = name.as_str();
        if n.starts_with("openai-") || n == "idempotency-key" || n == "x-request-id" {
            out.append(name.clone(), value.clone());
        }
    }
    out
}

/// A streamed call waits `first_byte_timeout_ms` for its head; an unstreamed
/// one, whose head comes when the whole answer is ready, `request_timeout_ms`.
/// Then both wait at most `idle_timeout_ms` between reads.
fn timeouts(p: &Provider, streams: bool) -> Timeouts {
    let ms = |v: u64| Duration::from_millis(v.max(1));
    let first_byte = if streams {
        p.config.first_byte_timeout_ms
    } else {
        p.config.request_timeout_ms
    };
    Timeouts {
        connect: ms(p.config.connect_timeout_ms),
        first_byte: ms(first_byte),
        idle: ms(p.config.idle_timeout_ms),
    }
}

fn build_request(
    p: &Provider,
    method: Method,
    suffix: &str,
    body: &Bytes,
    forwarded: &HeaderMap,
) -> Result<http::Request<Full<Bytes>>, UpstreamError> {
    let auth = p.auth_header().map_err(UpstreamError::MissingKey)?;
    let mut req = http::Request::builder()
        .method(method)
        .uri(p.base.endpoint(suffix))
        .body(Full::new(body.clone()))
        .expect("method and path are valid");
    let h = req.headers_mut();
    for (name, value) in forwarded {
        h.append(name.clone(), value.clone());
    }
    // The hub's span (the model step's, or the proxied request's) is the parent.
    crate::telemetry::inject(h, crate::telemetry::current().as_ref());
    if !body.is_empty() {
        h.insert(header::CONTENT_TYPE, HeaderValue::from_static("application/json"));
    }
    h.insert(
        header::USER_AGENT,
        HeaderValue::from_static(concat!("wasmhub/", env!("CARGO_PKG_VERSION"))),
    );
    // The operator's headers win over forwarded ones; the key wins over both.
    for (name, value) in &p.headers {
        h.insert(name.clone(), value.clone());
    }
    h.remove(header::AUTHORIZATION);
    if let Some((name, value)) = auth {
        h.insert(name, value);
    }
    kind_headers(p, h);
    Ok(req)
}

/// The headers `p`'s kind sends by default, where `h` (the operator's `headers`
/// already in) has none of that name.
pub(crate) fn kind_headers(p: &Provider, h: &mut HeaderMap) {
    let defaults: &[(&str, &str)] = match p.kind {
        ProviderKind::Anthropic => &[(ANTHROPIC_VERSION, "2023-06-01")],
        ProviderKind::OpenRouter => &OPENROUTER_HEADERS,
        ProviderKind::OpenAi | ProviderKind::Ollama | ProviderKind::Gemini => &[],
    };
    for (name, value) in defaults {
        if !h.contains_key(*name) {
            h.insert(*name, HeaderValue::from_static(value));
        }
    }
}

fn retryable(status: StatusCode) -> bool {
    status == StatusCode::TOO_MANY_REQUESTS
        || (status.is_server_error()
            && status != StatusCode::NOT_IMPLEMENTED
            && status != StatusCode::HTTP_VERSION_NOT_SUPPORTED)
}

/// Sends `call` to provider `p` (`POST` to its path), retrying as described in
/// the module docs. A non-2xx response that is not retried (or is the last
/// attempt's) is returned for the caller to relay.
pub(crate) async fn call(
    client: &Client,
    p: &Provider,
    call: &Call,
    forwarded: &HeaderMap,
    trace: Option<&Arc<Trace>>,
) -> Result<Response, UpstreamError> {
    let max_retries = p.config.max_retries;
    let mut attempt = 0u32;
    loop {
        let req = build_request(p, Method::POST, &call.path, &call.body, forwarded)?;
        let last = attempt >= max_retries;
        let traced = trace.map(|t| (t, trace_request(t, p, &req, &call.body)));
        let sent = client.send(&p.base, req, timeouts(p, call.streams)).await;
        let sent = match (sent, traced) {
            (Ok(resp), Some((t, id))) => {
                t.response(id, resp.status, &resp.headers);
                Ok(Response {
                    body: resp.body.traced(t.clone(), id),
                    ..resp
                })
            }
            (Err(e), Some((t, id))) => {
                t.end(id, Some(&e));
                Err(e)
            }
            (sent, None) => sent,
        };
        match sent {
            Ok(resp) if !last && retryable(resp.status) => {
                let wait = match retry_after(&resp.headers) {
                    Some(wait) if wait > MAX_RETRY_WAIT => return Ok(resp),
                    Some(wait) => wait,
                    None => backoff(p.config.retry_base_ms, attempt),
                };
                crate::info!(
                    "provider {:?} answered {}; retrying in {} ms ({}/{max_retries})",
                    p.config.name,
                    resp.status,
                    wait.as_millis(),
                    attempt + 1
                );
                // Dropping the unread body closes that connection.
                drop(resp);
                tokio::time::sleep(wait).await;
            }
            Ok(resp) => return Ok(resp),
            Err(error) if !last && error.is_connect() => {
                let wait = backoff(p.config.retry_base_ms, attempt);
                crate::info!(
                    "provider {:?}: {error}; retrying in {} ms",
                    p.config.name,
                    wait.as_millis()
                );
                tokio::time::sleep(wait).await;
            }
            Err(error) => {
                return Err(UpstreamError::Send {
                    provider: p.config.name.clone(),
                    attempts: attempt + 1,
                    error,
                });
            }
        }
        attempt += 1;
    }
}

/// Writes `req` to the trace; returns its exchange number.
fn trace_request(trace: &Trace, p: &Provider, req: &http::Request<Full<Bytes>>, body: &[u8]) -> u64 {
    let scheme = if p.base.https { "https" } else { "http" };
    let url = format!("{scheme}://{}{}", p.base.authority, req.uri());
    trace.request(&p.config.name, req.method().as_str(), &url, req.headers(), body)
}

/// `base * 2^attempt`, capped, with "equal jitter": half fixed, half random, so
/// clients that failed together do not retry together.
pub(crate) fn backoff(base_ms: u64, attempt: u32) -> Duration {
    let full = base_ms
        .saturating_mul(1u64 << attempt.min(20))
        .min(MAX_BACKOFF.as_millis() as u64);
    let mut r = [0u8; 8];
    let random = if getrandom::fill(&mut r).is_ok() {
        u64::from_le_bytes(r)
    } else {
        0
    };
    let half = full / 2;
    Duration::from_millis(half + if half > 0 { random % (half + 1) } else { 0 })
}

/// The wait an upstream asked for: `retry-after-ms` (OpenAI), or `Retry-After` as
/// seconds or an HTTP date.
pub(crate) fn retry_after(headers: &HeaderMap) -> Option<Duration> {
    let get = |name: &str| headers.get(name).and_then(|v| v.to_str().ok()).map(str::trim);
    if let Some(ms) = get("retry-after-ms").and_then(|v| v.parse::<f64>().ok())
        && ms.is_finite()
        && ms >= 0.0
    {
        return Some(Duration::from_millis(ms as u64));
    }
    let value = get("retry-after")?;
    if let Ok(secs) = value.parse::<f64>() {
        return (secs.is_finite() && secs >= 0.0).then(|| Duration::from_millis((secs * 1000.0) as u64));
    }
    let at = parse_http_date(value)?;
    let now = crate::clock::now_ms() / 1000;
    Some(Duration::from_secs(at.saturating_sub(now)))
}

/// Parses an IMF-fixdate (`Sun, 06 Nov 1994 08:49:37 GMT`) into Unix seconds.
fn parse_http_date(s: &str) -> Option<u64> {
    let rest = s.split_once(", ")?.1;
    let parts: Vec<&str> = rest.split(' ').collect();
    let [day, month, year, time, "GMT"] = parts.as_slice() else {
        return None;
    };
    let month = [
        "Jan", "Feb", "Mar", "Apr", "May", "Jun", "Jul", "Aug", "Sep", "Oct", "Nov", "Dec",
    ]
    .iter()
    .position(|m| m == month)? as i64
        + 1;
    let (day, year): (i64, i64) = (day.parse().ok()?, year.parse().ok()?);
    let hms: Vec<u64> = time.split(':').map(|x| x.parse().ok()).collect::<Option<_>>()?;
    let [h, m, sec] = hms.as_slice() else { return None };
    crate::clock::days_from_civil(year, month, day).map(|d| d * 86_400 + h * 3600 + m * 60 + sec)
}

/// The human message in an OpenAI-shaped error body, else the body text (cut).
pub(crate) fn error_message(body: &[u8]) -> String {
    if let Ok(v) = serde_json::from_slice::<serde_json::Value>(body) {
        let m = v
            .pointer("/error/message")
            .or_else(|| v.get("message"))
            .or_else(|| v.get("error"));
        if let Some(serde_json::Value::String(m)) = m {
            return m.clone();
        }
    }
    let text = String::from_utf8_lossy(body);
    let text = text.trim();
    if text.chars().count() > 300 {
        format!("{}...", text.chars().take(300).collect::<String>())
    } else {
        text.to_string()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn retry_after_in_each_form() {
        let mut h = HeaderMap::new();
        assert_eq!(retry_after(&h), None);
        h.insert("retry-after", HeaderValue::from_static("2"));
        assert_eq!(retry_after(&h), Some(Duration::from_secs(2)));
        h.insert("retry-after-ms", HeaderValue::from_static("150"));
        assert_eq!(retry_after(&h), Some(Duration::from_millis(150)));
        let mut h = HeaderMap::new();
        h.insert(
            "retry-after",
            HeaderValue::from_static("Sun, 06 Nov 1994 08:49:37 GMT"),
        );
        assert_eq!(
            retry_after(&h),
            Some(Duration::ZERO),
            "a date in the past means now"
        );
        assert_eq!(
            parse_http_date("Sun, 06 Nov 1994 08:49:37 GMT"),
            Some(784_111_777)
        );
        assert_eq!(parse_http_date("Thu, 01 Jan 1970 00:00:00 GMT"), Some(0));
        assert_eq!(parse_http_date("yesterday"), None);
    }

    #[test]
    fn backoff_doubles_with_jitter_and_is_capped() {
        for attempt in 0..4 {
            let full = 100u64 << attempt;
            for _ in 0..50 {
                let d = backoff(100, attempt).as_millis() as u64;
                assert!(d >= full / 2 && d <= full, "attempt {attempt}: {d}");
            }
        }
        assert!(backoff(1000, 30) <= MAX_BACKOFF);
        assert_eq!(backoff(0, 3), Duration::ZERO);
    }

    #[test]
    fn which_statuses_are_retried() {
        for s in [429, 500, 502, 503, 504, 529] {
            assert!(retryable(StatusCode::from_u16(s).unwrap()), "{s}");
        }
        for s in [200, 400, 401, 404, 501, 505] {
            assert!(!retryable(StatusCode::from_u16(s).unwrap()), "{s}");
        }
    }

    #[test]
    fn only_safe_client_headers_are_forwarded() {
        let mut h = HeaderMap::new();
        h.insert("authorization", HeaderValue::from_static("Bearer client-secret"));
        h.insert("cookie", HeaderValue::from_static("s=1"));
        h.insert("openai-organization", HeaderValue::from_static("org"));
        h.insert("x-request-id", HeaderValue::from_static("r1"));
        let f = forwarded_headers(&h);
        assert_eq!(f.len(), 2);
        assert!(f.get("authorization").is_none());
    }

    #[test]
    fn error_messages_are_extracted() {
        assert_eq!(
            error_message(br#"{"error":{"message":"Incorrect API key","type":"x"}}"#),
            "Incorrect API key"
        );
        assert_eq!(error_message(br#"{"message":"flat"}"#), "flat");
        assert_eq!(error_message(b"  Bad Gateway \n"), "Bad Gateway");
    }
}
