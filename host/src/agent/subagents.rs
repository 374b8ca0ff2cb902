//! The agents as the hub's operations `agents.NAME` (`hub::agent_calls`): the
//! agent layer's [`AgentRunner`], registered with the hub when the agent starts,
//! and the named agents published to the hub whenever the profiles change. A
//! sub-agent runs its task in a context of its own (a fresh session, deleted
//! after) as its caller's principal, within the caller's allowlist and its own
//! profile's, its calls children of the `agents.NAME` call; only its final answer
//! goes back: `{output, corrections}`. Sampling values of the call go over the
//! profile's within the operator's limits (past them: `invalid_input` naming the
//! limit).

use super::profiles::ProfileSet;
use super::structured::JsonOutput;
use super::task::{Task, TaskError};
use super::{Agent, AgentError, Sampling, SamplingError};
use crate::hub::agent_calls::{AgentCall, AgentFuture, AgentInput, AgentOperation, AgentRunner};
use crate::hub::{CallError, ErrorCode, Hub, Limit, Violation};
use serde_json::json;
use std::sync::{Arc, Weak};

/// The runner the hub calls.
pub(super) struct SubAgents(pub Weak<Agent>);

impl AgentRunner for SubAgents {
    fn run(&self, name: &str, input: AgentInput, call: AgentCall) -> AgentFuture {
        let agent = self.0.clone();
        let name = name.to_string();
        Box::pin(async move {
            let Some(agent) = agent.upgrade() else {
                return Err(CallError::new(
                    ErrorCode::NotFound,
                    "the agents are shutting down",
                ));
            };
            let profile = agent.profiles().get(&name).cloned();
            let output = match (input.json, profile) {
                (false, _) => None,
                (true, profile) => {
                    let schema = input
                        .schema
                        .or_else(|| profile.and_then(|p| p.output_schema.clone()));
                    let output = JsonOutput::new(schema)
                        .map_err(|e| CallError::new(ErrorCode::InvalidInput, e.to_string()))?;
                    Some(output)
                }
            };
            let task = Task {
                agent: name,
                messages: Task::messages_of(&input.task),
                sampling: Sampling {
                    temperature: input.temperature,
                    top_p: input.top_p,
                    max_output_tokens: input.max_output_tokens,
                },
                output,
                parent: Some(call.parent),
                cancel: Some(call.cancel),
                surface: "subagent",
            };
            match agent.run_task(task, call.caller).await {
                Ok(answer) => Ok(json!({ "output": answer.output, "corrections": answer.corrections })),
                Err(e) => Err(call_error(e)),
            }
        })
    }
}

/// A task's failure as the call's error.
fn call_error(e: TaskError) -> CallError {
    if let TaskError::Start(AgentError::Sampling(e)) = &e {
        return sampling_error(e);
    }
    let code = match &e {
        TaskError::Start(AgentError::UnknownAgent(_)) => ErrorCode::NotFound,
        TaskError::Start(AgentError::Sampling(_) | AgentError::Invalid(_)) => ErrorCode::InvalidInput,
        TaskError::Start(AgentError::Quota(_) | AgentError::QueueFull(_)) => ErrorCode::CallLimit,
        TaskError::Start(_) | TaskError::Failed(_) => ErrorCode::PluginError,
        TaskError::InvalidOutput(_) => ErrorCode::InvalidOutput,
    };
    let mut error = CallError::new(code, e.to_string());
    if let TaskError::InvalidOutput(found) = e {
        error.violations = found;
    }
    error
}

/// A sampling override past the operator's bounds: `invalid_input` with the
/// field's violation and, where an operator's key bounds it, that `limit`.
fn sampling_error(e: &SamplingError) -> CallError {
    let mut error = CallError::new(
        ErrorCode::InvalidInput,
        format!("{e}; call again with a value within it, or leave {} out", e.field),
    );
    error.violations = vec![Violation {
        path: format!("/{}", e.field),
        message: e.why.clone(),
    }];
    error.limit = match e.field {
        "temperature" => Some(Limit::AgentTemperature),
        "max_output_tokens" => Some(Limit::AgentMaxOutputTokens),
        _ => None,
    };
    error
}

/// Tells `hub` the named agents of `set`.
pub(super) fn publish(hub: &Hub, set: &ProfileSet) {
    hub.publish_agents(
        set.named()
            .map(|p| AgentOperation {
                name: p.name.clone(),
                description: if p.description.is_empty() {
                    format!(
                        "The agent {:?}: give it a task in words; it answers with its result.",
                        p.name
                    )
                } else {
                    p.description.clone()
                },
            })
            .collect(),
    );
}

/// Registers `agent` as the hub's agent runner.
pub(super) fn register(hub: &Hub, agent: &Arc<Agent>) {
    if !hub.register_agents(Arc::new(SubAgents(Arc::downgrade(agent)))) {
        crate::warn!("agents: another agent already runs the hub's agents.* operations");
    }
}
