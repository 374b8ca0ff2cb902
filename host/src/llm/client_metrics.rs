//! The OpenTelemetry GenAI conventions' client metrics of the hub's model calls,
//! on `/metrics` under their Prometheus names (whether or not traces are on):
//!
//! - `gen_ai_client_operation_duration_seconds` (`gen_ai.client.operation.duration`):
//!   from sending a model call to the end of its answer, labelled
//!   `gen_ai_operation_name` (`chat`), `gen_ai_provider_name`,
//!   `gen_ai_request_model` and, for a call that failed, `error_type`;
//! - `gen_ai_client_token_usage` (`gen_ai.client.token.usage`, unit `{token}`):
//!   the tokens a call's usage reports, the same labels plus `gen_ai_token_type`
//!   (`input`, `output`), with the conventions' bucket bounds.
//!
//! Every model call the hub makes is recorded once: each step of the agent loop
//! and of `/api/ui/chat/completions` (`llm::route`), and the calls the OpenAI proxy
//! relays and the Anthropic surface forwards (recorded by those surfaces when
//! their answer is over).

use super::Usage;
use crate::prom::{Histograms, TOKEN_BUCKETS, escape};
use std::sync::OnceLock;
use std::time::Duration;

struct Families {
    duration: Histograms,
    tokens: Histograms,
}

fn families() -> &'static Families {
    static FAMILIES: OnceLock<Families> = OnceLock::new();
    FAMILIES.get_or_init(|| Families {
        duration: Histograms::default(),
        tokens: Histograms::with_bounds(&TOKEN_BUCKETS),
    })
}

/// One finished model call (`chat`) to `provider` asking for `model`: how long
/// it took, the usage it reported, and its `error.type` when it failed.
pub(crate) fn record(
    provider: &str,
    model: &str,
    elapsed: Duration,
    usage: Option<&Usage>,
    error_type: Option<&str>,
) {
    let f = families();
    let labels = format!(
        "gen_ai_operation_name=\"chat\",gen_ai_provider_name=\"{}\",gen_ai_request_model=\"{}\"",
        escape(provider),
        escape(model)
    );
    match error_type {
        Some(error) => f
            .duration
            .observe(format!("{labels},error_type=\"{}\"", escape(error)), elapsed),
        None => f.duration.observe(labels.clone(), elapsed),
    }
    if let Some(usage) = usage {
        for (kind, tokens) in [("input", usage.input_tokens), ("output", usage.output_tokens)] {
            f.tokens
                .observe_value(format!("{labels},gen_ai_token_type=\"{kind}\""), tokens as f64);
        }
    }
}

/// The families' lines for `/metrics`.
pub(crate) fn metrics_text() -> String {
    let f = families();
    let mut out = String::new();
    f.duration.render(
        &mut out,
        "gen_ai_client_operation_duration_seconds",
        "GenAI operation duration (gen_ai.client.operation.duration): a model call, sent to the end of its answer.",
    );
    f.tokens.render(
        &mut out,
        "gen_ai_client_token_usage",
        "Tokens a model call used (gen_ai.client.token.usage), by gen_ai_token_type.",
    );
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn calls_are_recorded_with_the_conventions_labels() {
        let usage = Usage {
            input_tokens: 12,
            output_tokens: 7,
            total_tokens: 19,
            ..Usage::default()
        };
        record("cm-test", "m1", Duration::from_millis(30), Some(&usage), None);
        record(
            "cm-test",
            "m1",
            Duration::from_millis(5),
            None,
            Some("upstream_error"),
        );
        let text = metrics_text();
        let labels =
            "gen_ai_operation_name=\"chat\",gen_ai_provider_name=\"cm-test\",gen_ai_request_model=\"m1\"";
        assert!(
            text.contains(&format!(
                "gen_ai_client_operation_duration_seconds_count{{{labels}}} 1\n"
            )),
            "{text}"
        );
        assert!(text.contains(&format!(
            "gen_ai_client_operation_duration_seconds_count{{{labels},error_type=\"upstream_error\"}} 1\n"
        )));
        assert!(text.contains(&format!(
            "gen_ai_client_token_usage_sum{{{labels},gen_ai_token_type=\"input\"}} 12\n"
        )));
        assert!(text.contains(&format!(
            "gen_ai_client_token_usage_bucket{{{labels},gen_ai_token_type=\"output\",le=\"16\"}} 1\n"
        )));
    }
}
