//! Token counts the hub makes itself for a model call whose provider reported no
//! usage: the JSON text of the request's `messages` and `tools` (what the context
//! guard measures) and the answer's text, reasoning and tool calls, counted by the
//! answering target's tokenizer or the 4-bytes estimate ([`Counter`]); the model-step
//! record's `tokenizer` then says which counted. Used by the agent loop's steps and
//! by the surfaces' proxied calls (`surfaces::step_accounting`).

use super::context_guard::Counter;
use crate::hub::accounting::ModelStep;
use crate::llm::{StepSummary, Usage};
use serde_json::Value;

/// `step` as it is when the provider reported usage; otherwise with the tokens of
/// `request` and `output()` as `counter()` counts them, and its name.
pub(crate) fn fill_in(
    step: ModelStep,
    counter: impl FnOnce() -> Counter,
    request: &Value,
    output: impl FnOnce() -> String,
) -> ModelStep {
    if step.input_tokens.is_some() {
        return step;
    }
    let counter = counter();
    let usage = count(&counter, request, &output());
    ModelStep {
        input_tokens: Some(usage.input_tokens),
        output_tokens: Some(usage.output_tokens),
        tokenizer: Some(counter.name()),
        ..step
    }
}

/// The tokens of an OpenAI request's `messages` and `tools` and of `output`.
fn count(counter: &Counter, request: &Value, output: &str) -> Usage {
    let mut input = request.get("messages").map_or_else(String::new, Value::to_string);
    if let Some(tools) = request.get("tools") {
        input.push_str(&tools.to_string());
    }
    let (input_tokens, output_tokens) = (counter.count(&input), counter.count(output));
    Usage {
        input_tokens,
        output_tokens,
        total_tokens: input_tokens + output_tokens,
        reasoning_tokens: None,
        cached_input_tokens: None,
    }
}

/// The answer a step summary holds: text, reasoning, tool names and arguments.
pub(crate) fn summary_output(summary: &StepSummary) -> String {
    let mut out = summary.text.clone();
    out.push_str(&summary.reasoning);
    for call in &summary.tool_calls {
        out.push_str(&call.name);
        match &call.arguments {
            Ok(args) => out.push_str(&args.to_string()),
            Err(e) => out.push_str(&e.to_string()),
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;
    use std::time::Duration;

    #[test]
    fn the_estimate_fills_in_a_step_without_usage_only() {
        let request = json!({"model": "m", "messages": [{"role": "user", "content": "hello"}], "tools": [1]});
        let input = (request["messages"].to_string().len() + "[1]".len()).div_ceil(4) as u64;
        let bare = ModelStep::measured("p", "m", None, Duration::ZERO);
        let step = fill_in(bare, Counter::default, &request, || "12345".into());
        assert_eq!(
            (step.input_tokens, step.output_tokens, step.tokenizer.as_deref()),
            (Some(input), Some(2), Some("estimate"))
        );
        let usage = Usage {
            input_tokens: 7,
            output_tokens: 3,
            total_tokens: 10,
            reasoning_tokens: None,
            cached_input_tokens: None,
        };
        let reported = ModelStep::measured("p", "m", Some(usage), Duration::ZERO);
        let step = fill_in(
            reported,
            || unreachable!("not counted"),
            &request,
            || unreachable!(),
        );
        assert_eq!((step.input_tokens, step.tokenizer), (Some(7), None));
    }
}
