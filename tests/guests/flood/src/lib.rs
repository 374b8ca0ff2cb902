//! Test guest for the per-call budgets: logs in a loop, fails with a huge error,
//! opens many outgoing HTTP requests at once, and holds memory for a while.

wit_bindgen::generate!({ world: "plugin", path: "../../../wit/0.1.0" });

use exports::wasmhub::plugin::operations::{Error, Guest, OperationSpec};
use serde_json::{Value, json};
use wasip2::http::outgoing_handler;
use wasip2::http::types::{ErrorCode, Fields, OutgoingRequest, Scheme};
use wasmhub::plugin::host;
use wasmhub::plugin::types::{Hints, LogLevel};

struct Flood;

const OPS: &[(&str, &str)] = &[
    (
        "log",
        "Writes `times` lines through host.log (at `level`: info or debug), then, given \
         `then_get` (an authority), GETs http://`then_get`/ before answering.",
    ),
    ("fail", "Fails with an error message of `bytes` bytes."),
    ("hold", "Allocates and touches `mb` MiB, keeps it `ms` milliseconds, then answers."),
    (
        "burst",
        "Starts `count` GET requests to http://`authority`/ at once, then waits for each; \
         returns each one's status or error.",
    ),
];

fn request(authority: &str) -> OutgoingRequest {
    let request = OutgoingRequest::new(Fields::new());
    let _ = request.set_scheme(Some(&Scheme::Http));
    let _ = request.set_authority(Some(authority));
    let _ = request.set_path_with_query(Some("/"));
    request
}

fn error_text(e: ErrorCode) -> String {
    match e {
        ErrorCode::InternalError(Some(m)) => m,
        other => format!("{other:?}"),
    }
}

fn burst(authority: &str, count: u64) -> Vec<Value> {
    let pending: Vec<_> = (0..count)
        .map(|_| outgoing_handler::handle(request(authority), None))
        .collect();
    pending
        .into_iter()
        .map(|p| match p {
            Err(e) => json!({ "error": error_text(e) }),
            Ok(future) => {
                future.subscribe().block();
                match future.get() {
                    Some(Ok(Ok(response))) => json!({ "status": response.status() }),
                    Some(Ok(Err(e))) => json!({ "error": error_text(e) }),
                    _ => json!({ "error": "response future failed" }),
                }
            }
        })
        .collect()
}

impl Guest for Flood {
    fn list() -> Vec<OperationSpec> {
        OPS.iter()
            .map(|(name, description)| OperationSpec {
                name: name.to_string(),
                description: description.to_string(),
                input_schema: r#"{"type":"object"}"#.into(),
                output_schema: None,
                hints: Hints::empty(),
            })
            .collect()
    }

    fn call(name: String, input_json: String) -> Result<String, Error> {
        let input: Value =
            serde_json::from_str(&input_json).map_err(|e| Error::InvalidInput(e.to_string()))?;
        let n = |key: &str| input.get(key).and_then(Value::as_u64).unwrap_or(1);
        match name.as_str() {
            "log" => {
                let level = match input.get("level").and_then(Value::as_str) {
                    Some("debug") => LogLevel::Debug,
                    _ => LogLevel::Info,
                };
                for i in 0..n("times") {
                    host::log(level, &format!("flood line {i}"));
                }
                // Keeps the call in progress for as long as that server holds the request.
                if let Some(authority) = input.get("then_get").and_then(Value::as_str) {
                    burst(authority, 1);
                }
                Ok(json!({ "logged": n("times") }).to_string())
            }
            "hold" => {
                let hoard = vec![1u8; (n("mb") as usize) << 20];
                let ms = input.get("ms").and_then(Value::as_u64).unwrap_or(0);
                wasip2::clocks::monotonic_clock::subscribe_duration(ms * 1_000_000).block();
                Ok(json!({ "held": std::hint::black_box(hoard).len() }).to_string())
            }
            "fail" => Err(Error::Failed("x".repeat(n("bytes") as usize))),
            "burst" => {
                let authority = input.get("authority").and_then(Value::as_str).unwrap_or("");
                Ok(json!({ "results": burst(authority, n("count")) }).to_string())
            }
            other => Err(Error::NotFound(format!("no operation {other}"))),
        }
    }
}

export!(Flood);
