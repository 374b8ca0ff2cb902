//! Test guest: imports wasi:http and GETs a URL, so tests can check the network
//! policy (granted host, rebinding to a private address, no grant at all) and
//! secret injection (headers the guest sets itself, a redirect it follows).

wit_bindgen::generate!({ world: "plugin", path: "../../../wit/0.1.0" });

use exports::wasmhub::plugin::operations::{Error, Guest, OperationSpec};
use serde_json::{Value, json};
use wasip2::http::outgoing_handler;
use wasip2::http::types::{ErrorCode, Fields, OutgoingRequest, Scheme};
use wasip2::io::streams::StreamError;
use wasmhub::plugin::types::Hints;

struct Fetcher;

fn http_error(e: ErrorCode) -> Error {
    match e {
        ErrorCode::HttpRequestDenied => Error::Forbidden("HTTP request denied".into()),
        ErrorCode::InternalError(Some(m)) => Error::Forbidden(m),
        other => Error::Failed(format!("{other:?}")),
    }
}

fn get(url: &str, headers: &[(String, String)]) -> Result<(u16, String, Option<String>), Error> {
    let (scheme, rest) = match url.split_once("://") {
        Some(("http", rest)) => (Scheme::Http, rest),
        Some(("https", rest)) => (Scheme::Https, rest),
        _ => return Err(Error::InvalidInput(format!("not an http(s) URL: {url}"))),
    };
    let (authority, path) = match rest.find('/') {
        Some(i) => (&rest[..i], &rest[i..]),
        None => (rest, "/"),
    };
    let fields = Fields::new();
    for (name, value) in headers {
        fields
            .append(name, &value.as_bytes().to_vec())
            .map_err(|e| Error::InvalidInput(format!("header {name}: {e:?}")))?;
    }
    let request = OutgoingRequest::new(fields);
    request.set_scheme(Some(&scheme)).map_err(|()| Error::Failed("scheme".into()))?;
    request.set_authority(Some(authority)).map_err(|()| Error::Failed("authority".into()))?;
    request.set_path_with_query(Some(path)).map_err(|()| Error::Failed("path".into()))?;
    let pending = outgoing_handler::handle(request, None).map_err(http_error)?;
    pending.subscribe().block();
    let response = match pending.get() {
        Some(Ok(Ok(response))) => response,
        Some(Ok(Err(e))) => return Err(http_error(e)),
        _ => return Err(Error::Failed("response future failed".into())),
    };
    let status = response.status();
    let location = response
        .headers()
        .get("location")
        .first()
        .map(|v| String::from_utf8_lossy(v).into_owned());
    let body = response.consume().map_err(|()| Error::Failed("body".into()))?;
    let stream = body.stream().map_err(|()| Error::Failed("stream".into()))?;
    let mut bytes = Vec::new();
    loop {
        match stream.blocking_read(64 * 1024) {
            Ok(chunk) => bytes.extend_from_slice(&chunk),
            Err(StreamError::Closed) => break,
            Err(StreamError::LastOperationFailed(e)) => {
                return Err(Error::Failed(e.to_debug_string()));
            }
        }
    }
    Ok((status, String::from_utf8_lossy(&bytes).into_owned(), location))
}

impl Guest for Fetcher {
    fn list() -> Vec<OperationSpec> {
        vec![OperationSpec {
            name: "get".into(),
            description: "GETs `url` (with `headers`; following one redirect with `follow`) and returns the \
                          status and body."
                .into(),
            input_schema: r#"{"type":"object","properties":{"url":{"type":"string"},"headers":{"type":"object","additionalProperties":{"type":"string"}},"follow":{"type":"boolean"}},"required":["url"]}"#.into(),
            output_schema: None,
            hints: Hints::READ_ONLY | Hints::OPEN_WORLD,
        }]
    }

    fn call(_name: String, input_json: String) -> Result<String, Error> {
        let input: Value =
            serde_json::from_str(&input_json).map_err(|e| Error::InvalidInput(e.to_string()))?;
        let url = input.get("url").and_then(Value::as_str).unwrap_or("");
        let headers: Vec<(String, String)> = input
            .get("headers")
            .and_then(Value::as_object)
            .map(|h| h.iter().map(|(k, v)| (k.clone(), v.as_str().unwrap_or("").to_string())).collect())
            .unwrap_or_default();
        let (mut status, mut body, location) = get(url, &headers)?;
        if input.get("follow").and_then(Value::as_bool) == Some(true)
            && let Some(next) = location
        {
            (status, body, _) = get(&next, &headers)?;
        }
        Ok(json!({ "status": status, "body": body }).to_string())
    }
}

export!(Fetcher);
