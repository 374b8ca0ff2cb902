//! Running one call to an agent (`agents.NAME`) through the call protocol: the
//! graph's bounds, the allowlist, the input, the deadline, a child cancel token,
//! and the runner the agent layer registered, given the call's frame as the
//! sub-agent's parent.

use super::{AgentCall, NAMESPACE, ParentCall, approval_operation, checked};
use crate::hub::error::{CallError, ErrorCode, cancelled};
use crate::hub::graph::Frame;
use crate::hub::protocol::approve;
use crate::hub::records::CallRecorder;
use crate::hub::state::CallScope;
use crate::race::{Race, race};
use crate::runtime::Deadline;
use serde_json::Value;
use std::sync::Arc;

/// Runs one call to the agent `tool` (`agents.NAME`), a child of `parent` if any.
pub(in crate::hub) async fn execute(
    scope: &CallScope<'_>,
    parent: Option<&Frame>,
    tool: &str,
    input: Value,
    recorder: &mut CallRecorder<'_>,
) -> Result<Value, CallError> {
    let chain = scope.admit(parent, tool)?;
    recorder.input_bytes = input.to_string().len() as u64;
    let input = checked(tool, input, scope.core.validation.max_violations)?;
    let Some(runner) = scope.core.agent_runner.get() else {
        return Err(CallError::new(
            ErrorCode::NotFound,
            format!("{tool}: no agent runs in this process"),
        ));
    };
    let agents = scope.core.agents();
    let Some(agent) = agents.get(tool) else {
        return Err(CallError::new(
            ErrorCode::NotFound,
            format!("no operation named {tool:?}: the agent is gone"),
        ));
    };
    approve(scope, parent, approval_operation(tool, agent), recorder).await?;
    let name = tool
        .strip_prefix(&format!("{NAMESPACE}."))
        .unwrap_or(tool)
        .to_string();
    let deadline = Deadline::new(
        recorder.started,
        scope.core.agent_timeout_ms,
        parent.map(|p| p.deadline.at()),
    );
    let cancel = scope.cancel.child();
    let frame = scope.frame(
        parent,
        recorder.id.clone(),
        chain,
        deadline,
        cancel.clone(),
        Some(name.as_str().into()),
    );
    let call = AgentCall {
        caller: scope.caller.clone(),
        cancel: cancel.clone(),
        parent: ParentCall(Arc::new(frame)),
    };
    let run = tokio::time::timeout_at(deadline.at(), runner.run(&name, input, call));
    let output = match race(run, cancel.cancelled()).await {
        Race::First(Ok(result)) => result?,
        Race::First(Err(_elapsed)) => {
            cancel.cancel();
            return Err(CallError::new(
                ErrorCode::Timeout,
                format!(
                    "{tool}: the agent did not finish within {} ms (scope.core.agent_timeout_ms, or its parent's deadline)",
                    deadline.resolve(recorder.started, scope.core.agent_timeout_ms).1
                ),
            ));
        }
        Race::Second(()) => return Err(cancelled()),
    };
    recorder.output_bytes = output.to_string().len() as u64;
    Ok(output)
}
