//! The network round trip over wasi:http (through wstd): send the GET, follow
//! redirects, read at most `max_bytes` of the body, and turn wasi:http error codes
//! into the plugin's typed errors.

use std::time::Duration;

use http_body_util::BodyExt;
use wasmhub_guest::Error;
use wstd::http::error::ErrorCode;
use wstd::http::{Body, Client, Request};

use crate::{
    GetOutput, MAX_REDIRECTS, Plan, USER_AGENT, body_text, parse_url, resolve_location, select_headers,
};

/// Per-phase timeouts, so a silent server fails with a clear message before the
/// hub's per-call deadline kills the call without one.
const PHASE_TIMEOUT: Duration = Duration::from_secs(10);

/// Maps a failed request to `forbidden` (the sandbox said no) or `failed`.
pub fn network_error(host: &str, e: &wstd::http::Error) -> Error {
    match e.downcast_ref::<ErrorCode>() {
        Some(code) => map_code(host, code),
        None => Error::failed(format!("request to {host} failed: {e:#}")),
    }
}

fn map_code(host: &str, code: &ErrorCode) -> Error {
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

/// Runs the planned GET.
pub async fn fetch(plan: Plan) -> Result<GetOutput, Error> {
    let mut client = Client::new();
    client.set_connect_timeout(PHASE_TIMEOUT);
    client.set_first_byte_timeout(PHASE_TIMEOUT);
    client.set_between_bytes_timeout(PHASE_TIMEOUT);
    let mut url = plan.url.clone();
    let mut redirects = 0;
    loop {
        let host = parse_url(&url)?.host;
        let request = Request::get(&url)
            .header("user-agent", USER_AGENT)
            .header("accept", "*/*")
            .body(Body::empty())
            .map_err(|e| Error::invalid_input(format!("cannot build a request for {url}: {e}")))?;
        let response = client.send(request).await.map_err(|e| network_error(&host, &e))?;
        let status = response.status();
        let location = response
            .headers()
            .get("location")
            .and_then(|v| v.to_str().ok())
            .map(str::to_string);
        if plan.follow_redirects
            && status.is_redirection()
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
        let headers = select_headers(
            &plan.headers,
            response
                .headers()
                .iter()
                .map(|(name, value)| (name.as_str(), value.as_bytes())),
        );
        let mut body = response.into_body().into_boxed_body();
        let mut bytes: Vec<u8> = Vec::new();
        let mut truncated = false;
        while let Some(frame) = body.frame().await {
            let frame = frame.map_err(|e| network_error(&host, &e))?;
            let Ok(data) = frame.into_data() else { continue };
            let room = plan.max_bytes - bytes.len();
            if data.len() > room {
                bytes.extend_from_slice(&data[..room]);
                truncated = true;
                // Stop reading: the rest of a large body is never transferred into the guest.
                break;
            }
            bytes.extend_from_slice(&data);
        }
        return Ok(GetOutput {
            status: status.as_u16(),
            url,
            headers,
            body: body_text(&bytes, truncated),
            truncated,
            body_bytes: bytes.len() as u64,
        });
    }
}
