//! The GenAI conventions' `chat {gen_ai.request.model}` CLIENT span of one model
//! step: the provider and model asked, the model that answered, token usage and
//! finish reason, `error.type` when the step failed. Requests to providers carry
//! the span as `traceparent` (`upstream`), so a provider that traces joins the
//! hub's trace.

use super::providers::Route;
use super::transform::StepSummary;
use crate::telemetry::{Kind, Span};

/// The span of a step over `targets` (named by the first one's model).
pub(crate) fn chat_span(targets: &[Route]) -> Span {
    let model = targets.first().map_or("", |r| r.model.as_str());
    let mut span = Span::start(Kind::Client, format_args!("chat {model}"));
    if span.recording() {
        span.set("gen_ai.operation.name", "chat");
        span.set("gen_ai.request.model", model);
        if let Some(route) = targets.first() {
            span.set("gen_ai.provider.name", route.provider.config.name.as_str());
        }
    }
    span
}

/// What the step's summary says, on its span.
pub(crate) fn end_chat(span: &mut Span, summary: &StepSummary) {
    if !span.recording() {
        return;
    }
    if let Some(target) = &summary.target {
        span.set("wasmhub.llm.target", target.as_str());
    }
    if let Some(model) = &summary.model {
        span.set("gen_ai.response.model", model.as_str());
    }
    let reason = summary
        .upstream_finish_reason
        .clone()
        .unwrap_or_else(|| format!("{:?}", summary.finish_reason).to_lowercase());
    span.set("gen_ai.response.finish_reasons", reason);
    if let Some(usage) = &summary.usage {
        span.set("gen_ai.usage.input_tokens", usage.input_tokens);
        span.set("gen_ai.usage.output_tokens", usage.output_tokens);
    }
    span.set("wasmhub.llm.tool_calls", summary.tool_calls.len() as u64);
    if let Some(error) = &summary.error {
        span.fail("upstream_error", error);
    }
}
