//! The call protocol: what happens to every operation call, whoever makes it (a
//! `hub_call` batch, the CLI, or a plugin's nested `host.call`).
//!
//! Each call gets an id, its parent's id, a deadline (never later than its
//! parent's), and a child of its parent's cancel token. Before the plugin runs the
//! hub checks the call graph (depth, fan-out, cycles), the caller's allowlist (the
//! original caller's, for nested calls), and validates the input against the
//! operation's JSON Schema; after it returns, the output is checked against the
//! declared output schema. Every call, failed or not, is counted in the metrics
//! and written to the audit log and accounting (`hub::records::CallRecorder`).
//!
//! Where a call sits in the call graph, and the bounds a nested call is checked
//! against, are in `hub::graph`; this module runs calls and routes a plugin's
//! nested `host.call` back into them.

use super::approval;
use super::audit::CallOutcome;
use super::state::{CallScope, Core};

use super::checks::{Checker, check_input, check_output};
use super::error::{CallError, ErrorCode, Limit, cancelled, did_you_mean};
use super::graph::Frame;
use super::meta_tools::OperationCall;
use super::records::{CallOrigin, CallRecorder};
use super::registry::{OpRef, Registry};

use super::search::suggest;

use crate::race::{Race, race};
use crate::runtime::{CallFailure, Deadline, Invocation, NestedCallError, NestedCalls};
use crate::timing::{self, Stage};
use serde_json::Value;
use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;
use std::time::Duration;
use tokio::time::Instant;

/// A finished call in a `hub_call` batch, for progress reporting.
#[derive(Debug, Clone)]
pub struct ProgressEvent {
    /// Position of the call in the batch.
    pub index: usize,
    /// Calls in the batch.
    pub total: usize,
    /// The operation called, `plugin.operation`.
    pub tool: String,
    /// `None` when the call succeeded.
    pub error: Option<ErrorCode>,
    /// How long the call took.
    pub duration: Duration,
}

/// Called once per finished call of a batch, in completion order.
pub type ProgressFn = Arc<dyn Fn(ProgressEvent) + Send + Sync>;

/// Runs one top-level call.
pub(crate) async fn call(scope: &CallScope<'_>, tool: &str, input: Value) -> Result<Value, CallError> {
    run(scope, scope.parent.map(|p| &**p), tool, input).await
}

/// Runs the calls of a batch concurrently (one task each, aborted if this future
/// is dropped); results in input order.
pub(crate) async fn call_batch(
    scope: &CallScope<'_>,
    calls: Vec<OperationCall>,
    progress: Option<&ProgressFn>,
) -> Vec<Result<Value, CallError>> {
    let total = calls.len();
    let report =
        |index: usize, tool: &str, result: &Result<Value, CallError>, started: std::time::Instant| {
            if let Some(progress) = progress {
                progress(ProgressEvent {
                    index,
                    total,
                    tool: tool.to_string(),
                    error: result.as_ref().err().map(|e| e.code),
                    duration: started.elapsed(),
                });
            }
        };
    if total == 1 {
        // No task for a single call: saves a spawn on the most common batch.
        let OperationCall { tool, input } = calls.into_iter().next().expect("one call");
        let started = std::time::Instant::now();
        let result = call(scope, &tool, Value::Object(input)).await;
        report(0, &tool, &result, started);
        return vec![result];
    }
    let mut tasks = tokio::task::JoinSet::new();
    let mut tools = Vec::with_capacity(total);
    for (index, OperationCall { tool, input }) in calls.into_iter().enumerate() {
        tools.push(tool.clone());
        let (core, registry, caller, cancel) = (
            scope.core.clone(),
            scope.registry.clone(),
            scope.caller.clone(),
            scope.cancel.clone(),
        );
        let approved_by = scope.approved_by.map(str::to_string);
        let session = scope.session.cloned();
        let agent = scope.agent.cloned();
        let parent = scope.parent.cloned();
        tasks.spawn(crate::telemetry::carry(async move {
            let started = std::time::Instant::now();
            let scope = CallScope {
                core: &core,
                registry: &registry,
                caller: &caller,
                cancel: &cancel,
                approved_by: approved_by.as_deref(),
                session: session.as_ref(),
                agent: agent.as_ref(),
                parent: parent.as_ref(),
            };
            let result = call(&scope, &tool, Value::Object(input)).await;
            (index, result, started)
        }));
    }
    let mut results: Vec<Option<Result<Value, CallError>>> = (0..total).map(|_| None).collect();
    while let Some(joined) = tasks.join_next().await {
        match joined {
            Ok((index, result, started)) => {
                report(index, &tools[index], &result, started);
                results[index] = Some(result);
            }
            Err(e) => crate::error!("hub_call: a call task failed: {e}"),
        }
    }
    results
        .into_iter()
        .map(|r| {
            r.unwrap_or_else(|| {
                Err(CallError::new(
                    ErrorCode::Trap,
                    "the hub's task for this call failed; see the hub log",
                ))
            })
        })
        .collect()
}

/// Checks, runs and accounts one call; `parent` is set for nested calls.
async fn run(
    scope: &CallScope<'_>,
    parent: Option<&Frame>,
    tool: &str,
    input: Value,
) -> Result<Value, CallError> {
    // Before any waiting for a loading plugin, so the wait counts as in flight.
    let origin = CallOrigin {
        tool,
        caller: scope.caller.name(),
        client: scope.caller.client(),
        parent: parent.map(|p| p.id.as_str()),
        session: scope.session,
        agent: scope.agent,
        // A nested call's parent span is its parent call's (the guest may run on
        // another thread); a top-level call's is the task's current span.
        trace: parent.map_or_else(crate::telemetry::current, |p| p.trace.clone()),
    };
    let mut recorder = CallRecorder::start(scope.core, origin, &input);
    let (loaded, still_loading) = match scope.registry.get(tool) {
        None if scope.registry.is_loading_tool(tool) => match wait_for_plugin(scope, parent, tool).await {
            Ok(registry) => (Some(registry), None),
            Err(e) => (None, Some(e)),
        },
        _ => (None, None),
    };
    let reloaded;
    let scope = match &loaded {
        Some(registry) => {
            reloaded = CallScope { registry, ..*scope };
            &reloaded
        }
        None => scope,
    };
    let op = scope.registry.get(tool);
    recorder.known = op.is_some();
    let result = match (op, still_loading) {
        (_, Some(still_loading)) => Err(still_loading),
        (None, _) if scope.core.agents().get(tool).is_some() => {
            recorder.known = true;
            // The sub-agent's turn (`invoke_agent`) runs under this call's span.
            let span = recorder.span.context().cloned();
            let call = super::agent_calls::execute::execute(scope, parent, tool, input, &mut recorder);
            crate::telemetry::within(span, call).await
        }
        (None, _) => Err(not_found(scope, tool)),
        (Some(op), _) => execute(scope, parent, op, input, &mut recorder).await,
    };
    let started = std::time::Instant::now();
    recorder.finish(match &result {
        Ok(_) => CallOutcome::Ok,
        Err(e) => CallOutcome::Failed {
            code: e.code,
            message: e.message.clone(),
        },
    });
    timing::record(Stage::Record, started);
    result
}

async fn execute(
    scope: &CallScope<'_>,
    parent: Option<&Frame>,
    op: &OpRef,
    input: Value,
    recorder: &mut CallRecorder<'_>,
) -> Result<Value, CallError> {
    let started = std::time::Instant::now();
    let chain = scope.admit(parent, &op.tool)?;
    let tenant: Arc<str> = scope.caller.name().into();
    let checker = Checker {
        limits: &scope.core.validation,
        cpu: &scope.core.cpu,
        tenant: &tenant,
    };
    let input = check_input(op, input, &checker).await?;
    approve(scope, parent, approval::Operation::of(op), recorder).await?;
    // `serde_json::to_string`, not `Value`'s `Display` (through the formatter, twice as slow).
    let input_json = serde_json::to_string(&input).expect("a JSON value always serializes");
    recorder.input_bytes = input_json.len() as u64;
    // Computed once: the runtime stops the call at it and nested calls inherit it.
    let deadline = Deadline::new(
        recorder.started,
        op.source.timeout_ms(),
        parent.map(|p| p.deadline.at()),
    );
    let cancel = scope.cancel.child();
    if cancel.is_cancelled() {
        return Err(cancelled());
    }
    // Waiting for a slot eats into the call's own time, and stops if it is cancelled.
    let admitted = race(
        scope
            .core
            .scheduler
            .admit(op.source.name(), scope.caller.name(), deadline.at()),
        cancel.cancelled(),
    )
    .await;
    let _slot = match admitted {
        Race::First(slot) => slot?,
        Race::Second(()) => return Err(cancelled()),
    };
    let mut frame = scope.frame(
        parent,
        recorder.id.clone(),
        chain,
        deadline,
        cancel.clone(),
        scope.agent.cloned(),
    );
    frame.trace = recorder.span.context().cloned();
    let invocation = invocation(scope, frame, tenant.clone());
    timing::record(Stage::Checks, started);
    // Dropping the call future stops the guest at its next epoch tick.
    let output = match race(
        op.source.call(&op.operation().name, &input_json, invocation),
        cancel.cancelled(),
    )
    .await
    {
        // A guest that finished in the same poll as the cancel may have seen its
        // children cancelled: the request is gone, so the answer is `cancelled`.
        Race::First(_) if cancel.is_cancelled() => return Err(cancelled()),
        Race::First(result) => result,
        Race::Second(()) => return Err(cancelled()),
    };
    let output = output.map_err(|failure| failure_error(&op.tool, failure))?;
    recorder.output_bytes = output.json.len() as u64;
    recorder
        .span
        .set("wasmhub.call.instantiate_us", output.times.instantiate_us);
    recorder.span.set("wasmhub.call.guest_us", output.times.guest_us);
    if !output.logs.is_empty() {
        crate::debug!("{} ({}) wrote: {}", op.tool, recorder.id, output.logs.trim_end());
    }
    let started = std::time::Instant::now();
    let checked = check_output(op, output.json, &checker).await;
    timing::record(Stage::Output, started);
    if let Ok(output) = &checked {
        recorder.capture_output(output);
    }
    checked
}

/// The approval policy's word on the call (`hub::approval`); when a person was
/// involved, the plugin's time limit counts from their yes, not from the request.
pub(super) async fn approve(
    scope: &CallScope<'_>,
    parent: Option<&Frame>,
    op: approval::Operation<'_>,
    recorder: &mut CallRecorder<'_>,
) -> Result<(), CallError> {
    let asked = approval::Request {
        op,
        call_id: &recorder.id,
        caller: scope.caller,
        approved_by: scope.approved_by,
        cancel: scope.cancel,
        excerpt: recorder.excerpt.as_ref(),
        until: parent.map_or_else(far_future, |p| p.deadline.at()),
    };
    let checked = scope.core.approvals.check(asked, &mut recorder.approval).await;
    if let Some(record) = &recorder.approval {
        // The wait for a person, on the call's span.
        let waited = recorder.started.elapsed().as_millis() as u64;
        let attributes = vec![
            ("wasmhub.approval.decision", record.decision.as_str().into()),
            ("wasmhub.approval.waited_ms", waited.into()),
        ];
        recorder.span.event("wasmhub.approval", attributes);
        recorder.started = Instant::now();
    }
    checked?;
    Ok(())
}

/// No bound at all (a top-level call waits for an approval within
/// `approvals.wait_secs` only).
fn far_future() -> Instant {
    Instant::now() + Duration::from_secs(365 * 24 * 3600)
}

/// What the runtime gets for one call: its id, its deadline, and the way back in
/// for the guest's nested `host.call`s, which run as children of `frame`.
fn invocation(scope: &CallScope<'_>, frame: Frame, tenant: Arc<str>) -> Invocation {
    Invocation {
        call_id: frame.id.clone(),
        tenant,
        deadline: frame.deadline,
        trace: frame.trace.clone(),
        nested: Arc::new(NestedCaller {
            core: scope.core.clone(),
            frame: Arc::new(frame),
        }),
    }
}

/// Waits until `tool`'s plugin, still loading since the hub started, has loaded,
/// or its MCP server has (re)started (or either was rejected): the registry to look `tool` up in then. Bounded by
/// `limits.load_wait_ms` (and a nested call by its parent's deadline); a cancel
/// stops it.
async fn wait_for_plugin(
    scope: &CallScope<'_>,
    parent: Option<&Frame>,
    tool: &str,
) -> Result<Arc<Registry>, CallError> {
    let wait_ms = scope.core.load_wait_ms;
    let mut until = Instant::now() + Duration::from_millis(wait_ms);
    if let Some(parent) = parent {
        until = until.min(parent.deadline.at());
    }
    let mut registry = scope.core.registry.subscribe();
    let loaded = registry.wait_for(|r| !r.is_loading_tool(tool));
    match race(tokio::time::timeout_at(until, loaded), scope.cancel.cancelled()).await {
        Race::First(Ok(Ok(registry))) => Ok(registry.clone()),
        Race::Second(()) => Err(cancelled()),
        // Timed out (or the hub is gone).
        Race::First(_) => Err(CallError::new(
            ErrorCode::Timeout,
            format!(
                "{tool}: its plugin or MCP server is still loading after {wait_ms} ms (limits.load_wait_ms); try again when GET /api/plugins or GET /api/mcp-servers lists it as active"
            ),
        )),
    }
}

fn not_found(scope: &CallScope<'_>, tool: &str) -> CallError {
    let caller = scope.caller;
    let suggestions = suggest(tool, scope.registry.tool_names().filter(|t| caller.may_call(t)));
    let mut message = format!("no operation named {tool:?}");
    if let Some(server) = scope.registry.rejected_server(tool) {
        let reason = server.state.reason().unwrap_or_default();
        message.push_str(&format!(
            "; its MCP server {} is not running: {reason}",
            server.name
        ));
    }
    let _ = did_you_mean(&mut message, &suggestions);
    if suggestions.is_empty() {
        message.push_str("; use hub_search to find operations");
    }
    let mut e = CallError::new(ErrorCode::NotFound, message);
    e.suggestions = suggestions;
    e
}

fn failure_error(tool: &str, failure: CallFailure) -> CallError {
    let message = match &failure {
        CallFailure::Plugin { message, .. } => format!("{tool}: {message}"),
        other => format!("{tool}: {other}"),
    };
    // The runtime's own budgets name their config key like the hub's do.
    let error = match &failure {
        CallFailure::MemoryBudget { .. } => CallError::limit(Limit::MemoryBudget, message),
        CallFailure::Busy { .. } => CallError::limit(Limit::Instances, message),
        other => CallError::new(other.code(), message),
    };
    error.caused_by(failure)
}

/// The hub's side of a plugin's `host.call`: a child call of `frame`.
struct NestedCaller {
    core: Arc<Core>,
    frame: Arc<Frame>,
}

impl NestedCalls for NestedCaller {
    fn call(
        &self,
        tool: String,
        input_json: String,
    ) -> Pin<Box<dyn Future<Output = Result<String, NestedCallError>> + Send>> {
        let (core, frame) = (self.core.clone(), self.frame.clone());
        Box::pin(async move {
            let input: Value = serde_json::from_str(&input_json).map_err(|e| NestedCallError {
                code: ErrorCode::InvalidInput,
                message: format!("the input passed to host.call({tool}) is not valid JSON: {e}"),
            })?;
            let scope = CallScope {
                core: &core,
                registry: &frame.registry,
                caller: &frame.caller,
                cancel: &frame.cancel,
                approved_by: frame.approved_by.as_deref(),
                session: frame.session.as_ref(),
                agent: frame.agent.as_ref(),
                parent: None,
            };
            match run(&scope, Some(&frame), &tool, input).await {
                Ok(output) => Ok(output.to_string()),
                Err(e) => Err(NestedCallError {
                    code: e.code,
                    message: e.message,
                }),
            }
        })
    }
}
