//! The records of one operation call ([`CallRecorder`]): its metrics, its
//! accounting record and its audit record, written when the call finishes or when
//! its future is dropped unfinished (a parent that timed out or was cancelled
//! drops its nested calls), which is recorded as `cancelled`. The call protocol
//! (`hub::protocol`) fills in what it learns as the call runs. The call's trace
//! span (`execute_tool {tool}`) lives here too, started and ended with the records.

use crate::hub::accounting::{Entry, ToolCall};
use crate::hub::approval::ApprovalRecord;
use crate::hub::audit::{AuditLog, CallOutcome, CallRecord};
use crate::hub::checks::approx_len;
use crate::hub::error::ErrorCode;
use crate::hub::metrics::{InFlightCall, UNKNOWN_TOOL};
use crate::hub::state::Core;
use crate::telemetry::{Kind, Span};
use serde_json::Value;
use std::sync::Arc;
use tokio::time::Instant;

/// Inputs larger than this many bytes are not excerpted into the audit log.
const MAX_EXCERPT_SOURCE: usize = 16 * 1024;

/// Who made a call, and where it sits: what its records say besides its outcome.
pub(in crate::hub) struct CallOrigin<'a> {
    pub tool: &'a str,
    /// The token name it runs under.
    pub caller: &'a str,
    /// The OAuth client of a grant.
    pub client: Option<&'a str>,
    /// The call that made this one, for nested calls.
    pub parent: Option<&'a str>,
    /// The chat session it is accounted to.
    pub session: Option<&'a Arc<str>>,
    /// The named agent whose turn made it.
    pub agent: Option<&'a Arc<str>>,
    /// The span the call's span is a child of (its parent call's, or the task's).
    pub trace: Option<crate::telemetry::SpanContext>,
}

/// One call's metrics and records, written once.
pub(in crate::hub) struct CallRecorder<'a> {
    core: &'a Core,
    origin: CallOrigin<'a>,
    started_ms: u64,
    /// The input excerpt the audit record stores.
    pub excerpt: Option<Value>,
    finished: bool,
    _in_flight: InFlightCall<'a>,
    /// When the call's time started (again after an approval wait).
    pub started: Instant,
    /// The call's id (`call_...`).
    pub id: String,
    /// Whether the registry knows the tool (unknown names share one metrics label).
    pub known: bool,
    pub input_bytes: u64,
    pub output_bytes: u64,
    /// How a person approved (or refused) the call, when one was asked.
    pub approval: Option<ApprovalRecord>,
    /// The call's span (`execute_tool {tool}`), ended with the records.
    pub span: Span,
}

impl<'a> CallRecorder<'a> {
    /// Starts a call's records (and counts it in flight) before it does anything.
    pub(in crate::hub) fn start(core: &'a Core, origin: CallOrigin<'a>, input: &Value) -> CallRecorder<'a> {
        let id = crate::ids::new_id("call");
        let excerpt = excerpt(&core.audit, input);
        let mut span = call_span(&origin, &id);
        // Only when the operator opted in, and as the audit log keeps it (redacted).
        if span.recording()
            && let Some(text) = crate::telemetry::content(|| excerpt.clone().unwrap_or_default().to_string())
        {
            span.set("gen_ai.tool.call.arguments", text);
        }
        CallRecorder {
            core,
            started: Instant::now(),
            started_ms: crate::clock::now_ms(),
            id,
            span,
            known: false,
            input_bytes: 0,
            output_bytes: 0,
            excerpt,
            approval: None,
            finished: false,
            _in_flight: core.metrics.start(),
            origin,
        }
    }

    /// Records the call's output on its span when the operator opted in
    /// (`telemetry.capture_content`), redacted as the audit log redacts inputs.
    pub(in crate::hub) fn capture_output(&mut self, output: &Value) {
        if self.span.recording()
            && let Some(text) = crate::telemetry::content(|| self.core.audit.excerpt(output).to_string())
        {
            self.span.set("gen_ai.tool.call.result", text);
        }
    }

    /// Writes the metrics and records of the call, ended with `outcome`.
    pub(in crate::hub) fn finish(&mut self, outcome: CallOutcome) {
        if std::mem::replace(&mut self.finished, true) {
            return;
        }
        let elapsed = self.started.elapsed();
        let origin = &self.origin;
        end_span(&mut self.span, &outcome, self.input_bytes, self.output_bytes);
        let tool = if self.known { origin.tool } else { UNKNOWN_TOOL };
        self.core.metrics.observe(tool, outcome.as_str(), elapsed);
        let elapsed_us = elapsed.as_micros() as u64;
        self.core.accounting.account(
            origin.session.map(|s| &**s),
            origin.caller,
            origin.client,
            origin.agent.map(|a| &**a),
            Entry::ToolCall(ToolCall {
                call_id: self.id.clone(),
                parent: origin.parent.map(str::to_string),
                tool: origin.tool.to_string(),
                latency_us: elapsed_us,
                input_bytes: self.input_bytes,
                output_bytes: self.output_bytes,
                outcome: outcome.as_str().to_string(),
            }),
        );
        self.core.audit.record(CallRecord {
            id: std::mem::take(&mut self.id),
            tool: origin.tool.to_string(),
            caller: origin.caller.to_string(),
            client: origin.client.map(str::to_string),
            parent: origin.parent.map(str::to_string),
            agent: origin.agent.map(|a| a.to_string()),
            started_ms: self.started_ms,
            duration_us: elapsed_us,
            input_bytes: self.input_bytes,
            output_bytes: self.output_bytes,
            outcome,
            input: self.excerpt.take(),
            approval: self.approval.take(),
        });
    }
}

impl Drop for CallRecorder<'_> {
    fn drop(&mut self) {
        self.finish(CallOutcome::Failed {
            code: ErrorCode::Cancelled,
            message: "the call was stopped before it finished: its parent ended or the client went away"
                .into(),
        });
    }
}

/// The span of a call: `execute_tool {tool}` (the GenAI conventions' name for a
/// tool's execution), under the caller's span.
fn call_span(origin: &CallOrigin<'_>, id: &str) -> Span {
    let mut span = Span::child_of(
        origin.trace.as_ref(),
        Kind::Internal,
        format_args!("execute_tool {}", origin.tool),
    );
    if span.recording() {
        span.set("gen_ai.operation.name", "execute_tool");
        span.set("gen_ai.tool.name", origin.tool);
        span.set("gen_ai.tool.call.id", id);
        span.set("wasmhub.principal", origin.caller);
        if let Some(parent) = origin.parent {
            span.set("wasmhub.call.parent_id", parent);
        }
        if let Some(agent) = origin.agent {
            span.set("gen_ai.agent.name", &**agent);
        }
    }
    span
}

/// The outcome and sizes of a finished call on its span; `error.type` is the
/// call's error code.
fn end_span(span: &mut Span, outcome: &CallOutcome, input_bytes: u64, output_bytes: u64) {
    span.set("wasmhub.call.outcome", outcome.as_str());
    span.set("wasmhub.call.input_bytes", input_bytes);
    span.set("wasmhub.call.output_bytes", output_bytes);
    if let CallOutcome::Failed { code, message } = outcome {
        span.fail(code.as_str(), message);
    }
}

fn excerpt(audit: &AuditLog, input: &Value) -> Option<Value> {
    // Serializing a huge input only to cut it would put its cost on every call.
    if approx_len(input, MAX_EXCERPT_SOURCE) < MAX_EXCERPT_SOURCE {
        Some(audit.excerpt(input))
    } else {
        Some(Value::String("(input too large to excerpt)".into()))
    }
}
