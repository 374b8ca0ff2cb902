//! `wasmhub call TOOL 'JSON'`: runs one operation locally, without a server.
//!
//! It loads the plugins folder once and sends the call through `hub_call`, so the
//! input validation, nested calls, limits and error codes are exactly those a model
//! gets. The result goes to stdout as JSON; a failure goes to stderr as the
//! `{code, message, ...}` error object, with exit status 1. The call runs as the
//! local operator (every operation allowed), so configured tokens are not read.

use super::signals::Signals;
use crate::config::Config;
use crate::hub::{CallContext, Hub, MetaToolKind, MetaToolRequest};
use crate::race::{Race, race};
use crate::storage::Backend;
use serde_json::{Value, json};
use std::process::ExitCode;

/// Runs `tool` on the JSON object `input`; with `approve`, the person at the
/// terminal approves every call of it that the approval policy asks about.
pub fn run(tool: &str, input: &str, config: &Config, approve: bool) -> ExitCode {
    let input: Value = match serde_json::from_str(input) {
        Ok(v @ Value::Object(_)) => v,
        Ok(other) => return fail(&format!("the input must be a JSON object, got {}", kind(&other))),
        Err(e) => return fail(&format!("the input is not valid JSON: {e}")),
    };
    // Before the runtime starts its threads (see `signals`).
    let signals = match super::signals::install() {
        Ok(s) => s,
        Err(e) => return fail(&format!("cannot take over SIGINT and SIGTERM: {e}")),
    };
    let runtime = match tokio::runtime::Builder::new_multi_thread().enable_all().build() {
        Ok(rt) => rt,
        Err(e) => return fail(&format!("cannot start the async runtime: {e}")),
    };
    runtime.block_on(call(tool, input, config, signals, approve))
}

async fn call(tool: &str, input: Value, config: &Config, signals: Signals, approve: bool) -> ExitCode {
    let mut config = config.clone();
    config.tokens.clear();
    let (hub, _watcher) = match Hub::start(&config, open_backend(&config).await, None).await {
        Ok(started) => started,
        Err(e) => return fail(&e.to_string()),
    };
    let mut ctx = CallContext::new(hub.local_operator());
    if approve {
        ctx.approved_by = Some("local (wasmhub call --approve)".into());
    }
    let cancel = ctx.cancel.clone();
    let args = json!({ "calls": [{ "tool": tool, "input": input }] });
    let request = match MetaToolRequest::new(MetaToolKind::Call, args) {
        Ok(request) => request,
        Err(e) => return fail_json(&e.to_json()),
    };
    let answer = race(hub.invoke(request, ctx), signals.received()).await;
    // The [[mcp_servers]] it started: stopped and reaped before the process ends.
    hub.stop_mcp_servers().await;
    let answer = match answer {
        Race::First(answer) => answer,
        Race::Second(()) => {
            cancel.cancel();
            return fail("interrupted");
        }
    };
    let result = match answer {
        Ok(mut output) => output["results"][0].take(),
        Err(e) => return fail_json(&e.to_json()),
    };
    if result["ok"] == Value::Bool(true) {
        println!(
            "{}",
            serde_json::to_string_pretty(&result["result"]).unwrap_or_default()
        );
        ExitCode::SUCCESS
    } else {
        fail_json(&result["error"])
    }
}

/// The configured store (with the embedded backend, the data folder's), or a
/// temporary one, in memory, when it cannot be opened (a running server holds the
/// data folder's sled database).
async fn open_backend(config: &Config) -> Backend {
    match Backend::open(config).await {
        Ok(backend) => backend,
        Err(e) => {
            crate::debug!("using a temporary store: {e}");
            Backend::temporary().expect("a temporary embedded store opens")
        }
    }
}

fn kind(v: &Value) -> &'static str {
    match v {
        Value::Null => "null",
        Value::Bool(_) => "a boolean",
        Value::Number(_) => "a number",
        Value::String(_) => "a string",
        Value::Array(_) => "an array",
        Value::Object(_) => "an object",
    }
}

fn fail(message: &str) -> ExitCode {
    eprintln!("wasmhub call: {message}");
    ExitCode::FAILURE
}

fn fail_json(error: &Value) -> ExitCode {
    eprintln!("{}", serde_json::to_string_pretty(error).unwrap_or_default());
    ExitCode::FAILURE
}
