//! The SERVER span of one MCP request, per the OpenTelemetry MCP conventions:
//! named `{mcp.method.name} {target}` (the tool of a `tools/call`), the parent
//! the client put in `params._meta.traceparent` (the HTTP request's span is then
//! only a link), `error.type` the JSON-RPC error code or `tool_error` when a
//! tool's result has `isError: true`; `mcp.session.id` (a handshake-era
//! session) and `network.transport` (`tcp` for HTTP, `pipe` for stdio).

use super::dispatch::CallCtx;
use super::jsonrpc::{Request, RpcError};
use super::revision::{Revision, STATELESS_VERSION};
use crate::telemetry::{self, Kind, Span};
use serde_json::Value;

/// The span of `req`, started now.
pub(super) fn start(req: &Request, ctx: &CallCtx) -> Span {
    let meta_parent = telemetry::from_meta(req.params.as_ref());
    let around = telemetry::current();
    let parent = meta_parent.as_ref().or(around.as_ref());
    let tool = req
        .params_object()
        .and_then(|p| p.get("name"))
        .and_then(Value::as_str)
        .filter(|_| req.method == "tools/call");
    let mut span = match tool {
        Some(tool) => Span::child_of(parent, Kind::Server, format_args!("{} {tool}", req.method)),
        None => Span::child_of(parent, Kind::Server, format_args!("{}", req.method)),
    };
    if !span.recording() {
        return span;
    }
    if meta_parent.is_some()
        && let Some(http) = around
    {
        span.link(http);
    }
    span.set("mcp.method.name", req.method.as_str());
    let id = match &req.id {
        Value::String(s) => s.clone(),
        other => other.to_string(),
    };
    span.set("jsonrpc.request.id", id);
    if ctx.revision == Revision::Stateless {
        span.set("mcp.protocol.version", STATELESS_VERSION);
    }
    if let Some(session) = &ctx.session {
        span.set("mcp.session.id", session.as_str());
    }
    span.set("network.transport", ctx.transport);
    if let Some(tool) = tool {
        span.set("gen_ai.tool.name", tool);
        span.set("gen_ai.operation.name", "execute_tool");
    }
    span
}

/// Records how the request ended.
pub(super) fn finish(span: &mut Span, result: &Result<Value, RpcError>) {
    match result {
        Err(e) => span.fail(&e.code.to_string(), &e.message),
        Ok(v) if v.get("isError") == Some(&Value::Bool(true)) => {
            span.fail("tool_error", "the tool's result has isError: true")
        }
        Ok(_) => {}
    }
}
