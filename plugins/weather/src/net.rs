//! The round trip over the raw wasi:http bindings: one GET, the whole (small) JSON
//! body. The request has no key; the host injects it.

use wasip2::http::outgoing_handler;
use wasip2::http::types::{ErrorCode, Fields, OutgoingBody, OutgoingRequest, Scheme};
use wasip2::io::streams::StreamError;
use wasmhub_guest::Error;

/// Largest answer read.
const MAX_BODY: usize = 256 * 1024;

fn refused(code: &ErrorCode) -> Error {
    match code {
        ErrorCode::HttpRequestDenied => {
            Error::forbidden("the weather API's host is not granted to this plugin")
        }
        ErrorCode::InternalError(Some(m)) => Error::failed(m.clone()),
        other => Error::failed(format!("the request to the weather API failed: {other:?}")),
    }
}

/// GETs `url`: its status and body text.
pub fn get(url: &str) -> Result<(u16, String), Error> {
    let (scheme, rest) = match url.split_once("://") {
        Some(("https", rest)) => (Scheme::Https, rest),
        Some(("http", rest)) => (Scheme::Http, rest),
        _ => {
            return Err(Error::invalid_input(format!(
                "WEATHER_API_URL must be http(s): {url}"
            )));
        }
    };
    let (authority, path) = rest.split_at(rest.find('/').unwrap_or(rest.len()));
    let request = OutgoingRequest::new(Fields::new());
    let bad = |what: &str| Error::invalid_input(format!("the URL's {what} is not acceptable: {url}"));
    request.set_scheme(Some(&scheme)).map_err(|()| bad("scheme"))?;
    request.set_authority(Some(authority)).map_err(|()| bad("host"))?;
    request
        .set_path_with_query(Some(path))
        .map_err(|()| bad("path"))?;
    let body = request
        .body()
        .map_err(|()| Error::failed("the request body was already taken"))?;
    let pending = outgoing_handler::handle(request, None).map_err(|e| refused(&e))?;
    let _ = OutgoingBody::finish(body, None);
    pending.subscribe().block();
    let response = match pending.get() {
        Some(Ok(Ok(response))) => response,
        Some(Ok(Err(code))) => return Err(refused(&code)),
        _ => return Err(Error::failed("the weather API produced no response")),
    };
    let status = response.status();
    let incoming = response
        .consume()
        .map_err(|()| Error::failed("no response body"))?;
    let stream = incoming
        .stream()
        .map_err(|()| Error::failed("no response body stream"))?;
    let mut bytes = Vec::new();
    loop {
        match stream.blocking_read(64 * 1024) {
            Ok(chunk) => bytes.extend_from_slice(&chunk),
            Err(StreamError::Closed) => break,
            Err(StreamError::LastOperationFailed(e)) => return Err(Error::failed(e.to_debug_string())),
        }
        if bytes.len() > MAX_BODY {
            return Err(Error::failed(format!(
                "the weather API's answer is larger than {MAX_BODY} bytes"
            )));
        }
    }
    Ok((status, String::from_utf8_lossy(&bytes).into_owned()))
}
