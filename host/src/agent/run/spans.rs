//! A turn's trace spans, per the GenAI conventions: `invoke_agent {name}` around
//! the whole turn (the session as `gen_ai.conversation.id`, the summed usage and
//! the outcome at its end), and `execute_tool {meta-tool}` around each tool call
//! of a step, a sibling of the step's `chat {model}` span (`llm`), whose child
//! calls (`hub::protocol`) are its children. `error.type` is `tool_error` when
//! every call of a `hub_call` failed (what MCP reports as `isError`), or the
//! meta-tool's error code.

use super::{Outcome, Turn};
use crate::hub::ToolError;
use crate::llm::Usage;
use crate::telemetry::{Kind, Span};
use serde_json::Value;

/// The turn's span, under the current span (the request that started it).
pub(super) fn turn_span(turn: &Turn) -> Span {
    let name = turn.profile.name.as_str();
    let mut span = Span::start(Kind::Internal, format_args!("invoke_agent {name}"));
    if span.recording() {
        span.set("gen_ai.operation.name", "invoke_agent");
        span.set("gen_ai.agent.name", name);
        span.set("gen_ai.conversation.id", turn.session.id.as_str());
        span.set("gen_ai.request.model", turn.model.as_str());
        span.set("wasmhub.principal", turn.caller.name());
    }
    span
}

/// How the turn ended, on its span.
pub(super) fn end_turn(span: &mut Span, outcome: Outcome, steps: u32, usage: Option<&Usage>) {
    span.set("wasmhub.agent.outcome", outcome.as_str());
    span.set("wasmhub.agent.steps", u64::from(steps));
    if let Some(u) = usage {
        span.set("gen_ai.usage.input_tokens", u.input_tokens);
        span.set("gen_ai.usage.output_tokens", u.output_tokens);
    }
    if outcome == Outcome::Error {
        span.fail("agent_error", "the turn ended with an error");
    }
}

/// The span of the model's tool call `id` of meta-tool `name`.
pub(super) fn tool_span(name: &str, id: &str) -> Span {
    let mut span = Span::start(Kind::Internal, format_args!("execute_tool {name}"));
    if span.recording() {
        span.set("gen_ai.operation.name", "execute_tool");
        span.set("gen_ai.tool.name", name);
        span.set("gen_ai.tool.call.id", id);
        span.set("gen_ai.tool.type", "function");
    }
    span
}

/// The tool call's result on its span.
pub(super) fn end_tool(span: &mut Span, answer: &Result<Value, ToolError>) {
    match answer {
        Err(e) => span.fail(e.code().as_str(), &e.to_string()),
        Ok(value) if crate::hub::every_call_failed(value) => {
            span.fail("tool_error", "every call of the hub_call failed")
        }
        Ok(_) => {}
    }
}
