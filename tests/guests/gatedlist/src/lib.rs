//! Test guest: `list()` first GETs the URL in the `GATE_URL` environment variable
//! and returns only once that request is answered, so a test decides when the
//! plugin finishes loading (a loopback server that holds its answer) instead of
//! guessing how long a compile takes. Its one operation, `echo`, returns its input.

wit_bindgen::generate!({ world: "plugin", path: "../../../wit/0.1.0" });

use exports::wasmhub::plugin::operations::{Error, Guest, OperationSpec};
use wasip2::http::outgoing_handler;
use wasip2::http::types::{Fields, OutgoingRequest, Scheme};
use wasmhub::plugin::types::Hints;

struct Gatedlist;

/// GETs `http://AUTHORITY/PATH` and waits for the response head; any failure
/// only ends the wait (the test then sees the plugin load anyway).
fn wait_for_gate(url: &str) {
    let Some(rest) = url.strip_prefix("http://") else { return };
    let (authority, path) = match rest.find('/') {
        Some(i) => (&rest[..i], &rest[i..]),
        None => (rest, "/"),
    };
    let request = OutgoingRequest::new(Fields::new());
    let _ = request.set_scheme(Some(&Scheme::Http));
    let _ = request.set_authority(Some(authority));
    let _ = request.set_path_with_query(Some(path));
    if let Ok(pending) = outgoing_handler::handle(request, None) {
        pending.subscribe().block();
    }
}

impl Guest for Gatedlist {
    fn list() -> Vec<OperationSpec> {
        if let Ok(url) = std::env::var("GATE_URL") {
            wait_for_gate(&url);
        }
        vec![OperationSpec {
            name: "echo".into(),
            description: "Returns its input.".into(),
            input_schema: r#"{"type":"object"}"#.into(),
            output_schema: None,
            hints: Hints::READ_ONLY,
        }]
    }

    fn call(_name: String, input_json: String) -> Result<String, Error> {
        Ok(input_json)
    }
}

export!(Gatedlist);
