//! The network round trip over the raw wasi:http bindings (the `wasip2` crate):
//! send the GET, follow redirects, read at most `max_bytes` of the body, and turn
//! wasi:http error codes into the plugin's typed errors.
//!
//! Why not wstd's client: it sends the request body and awaits the response
//! concurrently and returns whichever fails first, so a request the host denies
//! surfaced as "connection reset" from the body stream instead of
//! `HttpRequestDenied` from the response. Here the (empty) body is finished before
//! the response is awaited, and the response's error code is the one reported.

use std::collections::BTreeMap;

use wasip2::http::outgoing_handler;
use wasip2::http::types::{ErrorCode, Fields, Method, OutgoingBody, OutgoingRequest, RequestOptions, Scheme};
use wasip2::io::streams::StreamError;
use wasmhub_guest::Error;

use crate::{
    GetOutput, MAX_REDIRECTS, Plan, USER_AGENT, body_text, parse_url, resolve_location, select_headers,
};

/// Per-phase timeouts (connect, first byte, between bytes), below the manifest's
/// 10 s call limit so a silent server fails with a message naming it.
const PHASE_TIMEOUT_NS: u64 = 8_000_000_000;
/// Bytes asked of the body stream per read.
const READ_CHUNK: u64 = 64 * 1024;

/// Maps a wasi:http error code to `forbidden` (the sandbox said no) or `failed`.
pub fn map_code(host: &str, code: &ErrorCode) -> Error {
    match code {
        ErrorCode::HttpRequestDenied => Error::forbidden(format!(
            "requests to {host} are not allowed: the host is not in this plugin's network allowlist \
             (the operator grants hosts in fetch.toml, [network] allow)"
        )),
        ErrorCode::DestinationIpProhibited => Error::forbidden(format!(
            "{host} resolves to an address the hub does not allow plugins to reach"
        )),
        ErrorCode::DnsTimeout => Error::failed(format!("DNS lookup for {host} timed out")),
        ErrorCode::DnsError(p) => Error::failed(format!(
            "DNS lookup for {host} failed ({})",
            p.rcode.clone().unwrap_or_else(|| "no such host".into())
        )),
        ErrorCode::DestinationNotFound => Error::failed(format!("{host} was not found (DNS)")),
        ErrorCode::ConnectionRefused => Error::failed(format!("{host} refused the connection")),
        ErrorCode::ConnectionTimeout => Error::failed(format!("connecting to {host} timed out")),
        ErrorCode::HttpResponseTimeout | ErrorCode::ConnectionReadTimeout => {
            Error::failed(format!("{host} did not answer in time"))
        }
        ErrorCode::TlsCertificateError => {
            Error::failed(format!("{host} presented an invalid TLS certificate"))
        }
        ErrorCode::HttpRequestUriInvalid => Error::invalid_input(format!("the URL for {host} is not valid")),
        other => Error::failed(format!("request to {host} failed: {other:?}")),
    }
}

/// A response whose body has not been read yet.
struct Head {
    status: u16,
    headers: Vec<(String, Vec<u8>)>,
    response: wasip2::http::types::IncomingResponse,
}

/// Sends one GET and waits for the response head.
fn send(url: &str) -> Result<Head, Error> {
    let target = parse_url(url)?;
    let host = target.host.clone();
    let headers = Fields::from_list(&[
        ("user-agent".to_string(), USER_AGENT.as_bytes().to_vec()),
        ("accept".to_string(), b"*/*".to_vec()),
    ])
    .map_err(|e| Error::failed(format!("cannot build request headers: {e:?}")))?;
    let request = OutgoingRequest::new(headers);
    let scheme = if target.scheme == "https" {
        Scheme::Https
    } else {
        Scheme::Http
    };
    let refused = |what: &str| Error::invalid_input(format!("the URL's {what} is not acceptable: {url}"));
    request.set_method(&Method::Get).map_err(|()| refused("method"))?;
    request
        .set_scheme(Some(&scheme))
        .map_err(|()| refused("scheme"))?;
    request
        .set_authority(Some(&target.authority))
        .map_err(|()| refused("host"))?;
    request
        .set_path_with_query(Some(&target.path_and_query))
        .map_err(|()| refused("path"))?;
    let body = request
        .body()
        .map_err(|()| Error::failed("the request body was already taken"))?;
    let options = RequestOptions::new();
    // A host may not support setting a timeout; the hub's deadline still applies.
    let _ = options.set_connect_timeout(Some(PHASE_TIMEOUT_NS));
    let _ = options.set_first_byte_timeout(Some(PHASE_TIMEOUT_NS));
    let _ = options.set_between_bytes_timeout(Some(PHASE_TIMEOUT_NS));

    let pending = outgoing_handler::handle(request, Some(options)).map_err(|e| map_code(&host, &e))?;
    // A GET has no body: finish it now. If the host refused the request this can
    // fail too; the response below carries the reason, so this error is not reported.
    let _ = OutgoingBody::finish(body, None);
    pending.subscribe().block();
    let response = match pending.get() {
        Some(Ok(Ok(response))) => response,
        Some(Ok(Err(code))) => return Err(map_code(&host, &code)),
        Some(Err(())) | None => return Err(Error::failed(format!("request to {host} produced no response"))),
    };
    Ok(Head {
        status: response.status(),
        headers: response.headers().entries(),
        response,
    })
}

/// Reads at most `max` body bytes; true when there was more.
fn read_body(host: &str, head: Head, max: usize) -> Result<(Vec<u8>, bool), Error> {
    let body = head
        .response
        .consume()
        .map_err(|()| Error::failed("the response body was already taken"))?;
    let stream = body
        .stream()
        .map_err(|()| Error::failed("the response body stream was already taken"))?;
    let mut bytes = Vec::new();
    loop {
        let room = max - bytes.len();
        // Ask for one byte past the limit to learn whether the body goes on, and no
        // more: the rest of a large body is never transferred into the guest.
        let want = (room as u64 + 1).min(READ_CHUNK);
        match stream.blocking_read(want) {
            Ok(chunk) => {
                if chunk.len() > room {
                    bytes.extend_from_slice(&chunk[..room]);
                    return Ok((bytes, true));
                }
                bytes.extend_from_slice(&chunk);
            }
            Err(StreamError::Closed) => return Ok((bytes, false)),
            Err(StreamError::LastOperationFailed(e)) => {
                return Err(match wasip2::http::types::http_error_code(&e) {
                    Some(code) => map_code(host, &code),
                    None => Error::failed(format!(
                        "reading the body from {host} failed: {}",
                        e.to_debug_string()
                    )),
                });
            }
        }
    }
}

/// Runs the planned GET.
pub fn fetch(plan: Plan) -> Result<GetOutput, Error> {
    let mut url = plan.url.clone();
    let mut redirects = 0;
    loop {
        let head = send(&url)?;
        let location = head
            .headers
            .iter()
            .find(|(name, _)| name.eq_ignore_ascii_case("location"))
            .map(|(_, value)| String::from_utf8_lossy(value).into_owned());
        if plan.follow_redirects
            && (300..400).contains(&head.status)
            && let Some(location) = location
        {
            if redirects == MAX_REDIRECTS {
                return Err(Error::failed(format!(
                    "more than {MAX_REDIRECTS} redirects, last to {location}"
                )));
            }
            url = resolve_location(&url, &location)?;
            redirects += 1;
            continue;
        }
        let headers: BTreeMap<String, String> = select_headers(
            &plan.headers,
            head.headers.iter().map(|(n, v)| (n.as_str(), v.as_slice())),
        );
        let status = head.status;
        let host = parse_url(&url)?.host;
        let (bytes, truncated) = read_body(&host, head, plan.max_bytes)?;
        return Ok(GetOutput {
            status,
            url,
            headers,
            body: body_text(&bytes, truncated),
            truncated,
            body_bytes: bytes.len() as u64,
        });
    }
}
