//! Agents as operations: each named agent is the operation `agents.NAME` (input
//! `{task, format?, schema?, temperature?, top_p?, max_output_tokens?}`, output
//! `{output, corrections}`), listed, searched,
//! described and called through the four meta-tools like a plugin's.
//!
//! The hub owns the seam and never sees the agent loop: the agent layer registers
//! an [`AgentRunner`] ([`super::Hub::register_agents`]) and publishes the agents it
//! has whenever they change ([`super::Hub::publish_agents`]). A call to
//! `agents.NAME` ([`execute`]) goes through the call protocol as any call does:
//! an id and a parent, the call graph's bounds (a cycle of agents is refused, depth
//! and the tree's call budget apply), the caller's allowlist, an input checked
//! against [`input_schema`], a deadline (`limits.agent_timeout_ms`, never later
//! than a parent's), a child cancel token, and its audit and accounting records.
//! The runner gets a [`ParentCall`]: the sub-agent's own calls run as children of
//! this one, under the same principal, allowlist and tree budget.

pub(super) mod execute;

use super::approval;
use super::auth::Caller;
use super::cancel::CancelToken;
use super::error::{CallError, ErrorCode};
use super::graph::Frame;
use super::search::{SearchDoc, SearchIndex};
use super::validate;
use crate::runtime::Hints;
use serde_json::{Value, json};
use std::future::Future;
use std::pin::Pin;
use std::sync::{Arc, LazyLock};

/// The namespace of the agents' operations.
pub const NAMESPACE: &str = "agents";

/// A named agent as an operation.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct AgentOperation {
    /// The agent's name (the operation is `agents.NAME`).
    pub name: String,
    /// What it is for.
    pub description: String,
}

/// The call a sub-agent runs inside: its calls are this call's children.
#[derive(Clone)]
pub struct ParentCall(pub(super) Arc<Frame>);

impl std::fmt::Debug for ParentCall {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_tuple("ParentCall").field(&self.0.id).finish()
    }
}

/// What a sub-agent runs under.
pub struct AgentCall {
    /// The caller of `agents.NAME`: the sub-agent's principal and allowlist.
    pub caller: Caller,
    /// Cancelled with the call (its parent's cancel, its deadline).
    pub cancel: CancelToken,
    /// The call the sub-agent's own calls belong to.
    pub parent: ParentCall,
}

/// The checked input of `agents.NAME`.
#[derive(Debug, Clone, PartialEq)]
pub struct AgentInput {
    /// The task.
    pub task: String,
    /// `format: "json"`: the answer must be JSON.
    pub json: bool,
    /// The schema a JSON answer must satisfy (else the agent's own).
    pub schema: Option<Value>,
    /// Over the agent's sampling temperature (within `agent.temperature_limit`).
    pub temperature: Option<f64>,
    /// Over the agent's `top_p`.
    pub top_p: Option<f64>,
    /// Over the agent's answer token limit (within `agent.max_output_tokens_limit`).
    pub max_output_tokens: Option<u64>,
}

/// A sub-agent's run: `{output, corrections}`, or why it failed.
pub type AgentFuture = Pin<Box<dyn Future<Output = Result<Value, CallError>> + Send>>;

/// The agent layer's side of the seam.
pub trait AgentRunner: Send + Sync {
    /// Runs agent `name` on `input` as a sub-agent of `call`: an isolated context
    /// whose final answer alone comes back.
    fn run(&self, name: &str, input: AgentInput, call: AgentCall) -> AgentFuture;
}

/// The agents published, and their search index.
pub(crate) struct AgentSet {
    pub ops: Vec<AgentOperation>,
    tools: Vec<String>,
    pub index: SearchIndex,
}

impl AgentSet {
    pub(crate) fn new(ops: Vec<AgentOperation>) -> AgentSet {
        let tools: Vec<String> = ops.iter().map(|o| format!("{NAMESPACE}.{}", o.name)).collect();
        let index = SearchIndex::build(ops.iter().zip(&tools).map(|(o, tool)| SearchDoc {
            tool,
            description: &o.description,
            input_schema: input_schema(),
        }));
        AgentSet { ops, tools, index }
    }

    /// The agent `tool` names, if it is one.
    pub(crate) fn get(&self, tool: &str) -> Option<&AgentOperation> {
        let i = self.tools.iter().position(|t| t == tool)?;
        Some(&self.ops[i])
    }

    /// `(tool, operation)` of every agent.
    pub(crate) fn tools(&self) -> impl Iterator<Item = (&str, &AgentOperation)> {
        self.tools.iter().map(String::as_str).zip(&self.ops)
    }
}

/// The hints of every `agents.NAME`, which the approval policy reads: open-world
/// (it sends its task to a model provider) and not read-only (it may change
/// things through its own calls, each of them checked by the policy as well). A
/// rule by name (`agents.*`) makes an operator's word on calling agents explicit.
pub const HINTS: Hints = Hints {
    read_only: false,
    destructive: false,
    idempotent: false,
    open_world: true,
};

/// What the approval policy sees of the agent `op` (called as `tool`).
pub(super) fn approval_operation<'a>(tool: &'a str, op: &'a AgentOperation) -> approval::Operation<'a> {
    approval::Operation {
        tool,
        description: &op.description,
        hints: HINTS,
    }
}

/// The input schema of every `agents.NAME`.
pub fn input_schema() -> &'static Value {
    static SCHEMA: LazyLock<Value> = LazyLock::new(|| {
        json!({
            "type": "object", "required": ["task"], "additionalProperties": false,
            "properties": {
                "task": { "type": "string", "minLength": 1, "description": "What the agent should do, in words." },
                "format": { "enum": ["text", "json"], "description": "\"json\": the answer is one JSON value (default \"text\")." },
                "schema": { "type": "object", "description": "With format \"json\": the JSON Schema the answer must satisfy." },
                "temperature": { "type": "number", "minimum": 0, "description": "Sampling temperature over the agent's own (at most the operator's agent.temperature_limit)." },
                "top_p": { "type": "number", "exclusiveMinimum": 0, "maximum": 1, "description": "Nucleus sampling mass over the agent's own." },
                "max_output_tokens": { "type": "integer", "minimum": 1, "description": "Most tokens of one model answer, over the agent's own (at most the operator's agent.max_output_tokens_limit)." }
            }
        })
    });
    &SCHEMA
}

/// The output schema of every `agents.NAME`.
pub fn output_schema() -> Value {
    json!({
        "type": "object", "required": ["output"],
        "properties": {
            "output": { "description": "The agent's final answer: text, or the JSON value asked for." },
            "corrections": { "type": "integer", "description": "1 when a JSON answer needed a correction round." }
        }
    })
}

/// `input` checked against [`input_schema`].
pub(super) fn checked(tool: &str, input: Value, max: usize) -> Result<AgentInput, CallError> {
    static VALIDATOR: LazyLock<jsonschema::Validator> = LazyLock::new(|| {
        jsonschema::validator_for(input_schema()).expect("the agents' input schema compiles")
    });
    let (violations, unlisted) = validate::violations(&VALIDATOR, input_schema(), &input, max);
    if !violations.is_empty() {
        let mut e = CallError::new(
            ErrorCode::InvalidInput,
            format!(
                "input does not match the input schema of {tool} ({}); fix it and call again (hub_schema shows the schema)",
                validate::summary(&violations, unlisted)
            ),
        );
        e.violations = violations;
        return Err(e);
    }
    Ok(AgentInput {
        task: input["task"].as_str().unwrap_or_default().to_string(),
        json: input["format"] == "json",
        schema: input.get("schema").cloned(),
        temperature: input.get("temperature").and_then(Value::as_f64),
        top_p: input.get("top_p").and_then(Value::as_f64),
        max_output_tokens: input.get("max_output_tokens").and_then(Value::as_u64),
    })
}
