//! `mcp.server.operation.duration` (the OpenTelemetry MCP conventions' metric) on
//! `/metrics` as `mcp_server_operation_duration_seconds{mcp_method_name,
//! error_type}`: every MCP request the server answers, over HTTP or stdio;
//! `error_type` is the JSON-RPC code, `tool_error` for an `isError` result, or
//! empty. Method names outside the known set share `_other`.

use super::jsonrpc::RpcError;
use super::method::McpMethod;
use crate::prom::Histograms;
use serde_json::Value;
use std::sync::OnceLock;
use std::time::Duration;

fn family() -> &'static Histograms {
    static FAMILY: OnceLock<Histograms> = OnceLock::new();
    FAMILY.get_or_init(Histograms::default)
}

/// Counts one answered request of `method`.
pub(crate) fn observe(method: Option<McpMethod>, answer: &Result<Value, RpcError>, elapsed: Duration) {
    let name = method.map_or("_other", McpMethod::as_str);
    let error = match answer {
        Err(e) => e.code.to_string(),
        Ok(v) if v.get("isError") == Some(&Value::Bool(true)) => "tool_error".into(),
        Ok(_) => String::new(),
    };
    family().observe(
        format!("mcp_method_name=\"{name}\",error_type=\"{error}\""),
        elapsed,
    );
}

/// The family's lines for `/metrics`.
pub(crate) fn metrics_text() -> String {
    let mut out = String::new();
    family().render(
        &mut out,
        "mcp_server_operation_duration_seconds",
        "MCP requests the server answered (mcp.server.operation.duration), by method and error type.",
    );
    out
}
