//! One task for an agent, run to its final answer: a turn in a session of its
//! own (deleted at the end, so nothing of it stays but the answer, also when the
//! task's future is dropped mid-turn: `agent::temporary`), stopped when its
//! caller's cancel token fires; with a JSON output, the answer checked and,
//! once, sent back with its violations for a correction (`agent::structured`).
//! `POST /v1/agents/{name}` and the `agents.NAME` operations (sub-agents) run
//! their tasks through [`Agent::run_task`].

use super::answer::Collected;
use super::structured::JsonOutput;
use super::{Agent, AgentError, Approver, ChatRequest, Sampling, Trigger, UiMessage};
use crate::hub::agent_calls::ParentCall;
use crate::hub::validate::Violation;
use crate::hub::{Caller, CancelToken};
use crate::llm::Usage;
use crate::race::{Race, race};
use serde_json::{Value, json};
use std::sync::Arc;

/// A task.
pub struct Task {
    /// The agent.
    pub agent: String,
    /// What to do: the conversation so far ([`Task::messages_of`] for one task
    /// in words).
    pub messages: Vec<UiMessage>,
    /// Sampling over the agent's.
    pub sampling: Sampling,
    /// The answer must be JSON (satisfying a schema, if any).
    pub output: Option<JsonOutput>,
    /// The call a sub-agent runs inside.
    pub parent: Option<ParentCall>,
    /// Stops the task (a sub-agent's call cancelled).
    pub cancel: Option<CancelToken>,
    /// The chat surface that asked (`agents`, `openai`, `anthropic`; `subagent`
    /// for an `agents.NAME` call), the label its steps' metrics carry.
    pub surface: &'static str,
}

/// A task's answer.
#[derive(Debug)]
pub struct TaskAnswer {
    /// The final text, or the JSON value.
    pub output: Value,
    /// The turn's own end (`stop`, `max-steps`).
    pub outcome: String,
    /// Summed over the turns.
    pub usage: Option<Usage>,
    /// 1 when a JSON answer needed its correction round.
    pub corrections: u32,
    /// The provider that answered the last step.
    pub provider: Option<String>,
}

/// Why a task has no answer.
#[derive(Debug)]
pub enum TaskError {
    /// The turn could not start.
    Start(AgentError),
    /// The turn failed (the model's provider, storage) or was stopped.
    Failed(String),
    /// The JSON answer still broke its schema after the correction round.
    InvalidOutput(Vec<Violation>),
}

impl std::fmt::Display for TaskError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            TaskError::Start(e) => e.fmt(f),
            TaskError::Failed(why) => f.write_str(why),
            TaskError::InvalidOutput(found) => {
                let listed: Vec<String> = found
                    .iter()
                    .map(|v| format!("{}: {}", v.path, v.message))
                    .collect();
                write!(
                    f,
                    "the agent's answer is not valid JSON output after one correction: {}",
                    listed.join("; ")
                )
            }
        }
    }
}

impl std::error::Error for TaskError {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        match self {
            TaskError::Start(e) => Some(e),
            TaskError::Failed(_) | TaskError::InvalidOutput(_) => None,
        }
    }
}

/// A message of a task's conversation.
fn message(id: &str, role: &str, text: &str) -> UiMessage {
    let parts = match role {
        "assistant" => json!([{ "type": "step-start" }, { "type": "text", "text": text, "state": "done" }]),
        _ => json!([{ "type": "text", "text": text }]),
    };
    serde_json::from_value(json!({ "id": id, "role": role, "parts": parts })).expect("a text message")
}

impl Task {
    /// The conversation of a task given in words: one user message.
    pub fn messages_of(input: &str) -> Vec<UiMessage> {
        vec![message("task", "user", input)]
    }
}

impl Agent {
    /// Runs `task` for `caller` to its final answer.
    pub async fn run_task(self: &Arc<Self>, task: Task, caller: Caller) -> Result<TaskAnswer, TaskError> {
        let answer = self.task_turn(&task, task.messages.clone(), &caller).await?;
        let Some(output) = &task.output else {
            return Ok(TaskAnswer {
                output: Value::String(answer.text),
                outcome: answer.outcome.unwrap_or_else(|| "stop".into()),
                usage: answer.usage,
                corrections: 0,
                provider: answer.provider,
            });
        };
        let found = match output.check(&answer.text) {
            Ok(value) => {
                return Ok(TaskAnswer {
                    output: value,
                    outcome: answer.outcome.unwrap_or_else(|| "stop".into()),
                    usage: answer.usage,
                    corrections: 0,
                    provider: answer.provider,
                });
            }
            Err(found) => found,
        };
        let mut again = task.messages.clone();
        again.push(message("answer", "assistant", &answer.text));
        again.push(message("correction", "user", &output.correction(&found)));
        let corrected = self.task_turn(&task, again, &caller).await?;
        let usage = match (answer.usage, corrected.usage) {
            (Some(a), Some(b)) => Some(a + b),
            (a, b) => a.or(b),
        };
        let value = output.check(&corrected.text).map_err(TaskError::InvalidOutput)?;
        Ok(TaskAnswer {
            output: value,
            outcome: corrected.outcome.unwrap_or_else(|| "stop".into()),
            usage,
            corrections: 1,
            provider: corrected.provider,
        })
    }

    /// One turn over `messages` in a session of its own, collected; the session
    /// is deleted when it ends.
    async fn task_turn(
        self: &Arc<Self>,
        task: &Task,
        messages: Vec<UiMessage>,
        caller: &Caller,
    ) -> Result<Collected, TaskError> {
        let chat = ChatRequest {
            // Nobody to ask: calls wait for an operator, as REST calls do.
            approvals: Approver::Operator,
            session_id: crate::ids::new_id("task"),
            messages,
            trigger: Trigger::SubmitMessage,
            message_id: None,
            model: None,
            agent: Some(task.agent.clone()),
            sampling: task.sampling,
            output: task.output.clone(),
            parent: task.parent.clone(),
            surface: task.surface,
        };
        let session = chat.session_id.clone();
        let mut sub = self.start(chat, caller.clone()).await.map_err(TaskError::Start)?;
        let turn = sub.turn().clone();
        // Deleted when the turn ends, even if this future is dropped before.
        let temporary = self.temporary_session(caller, &session, &turn);
        let mut answer = Collected::default();
        let follow = async {
            while let Some(batch) = sub.next_batch().await {
                for c in &batch {
                    answer.apply(c);
                }
            }
        };
        let stopped = match &task.cancel {
            Some(cancel) => matches!(race(follow, cancel.cancelled()).await, Race::Second(())),
            None => {
                follow.await;
                false
            }
        };
        if stopped {
            turn.stop("the call that asked the agent was cancelled");
        }
        temporary.finish().await;
        if stopped {
            return Err(TaskError::Failed(
                "the agent's turn was stopped: its call was cancelled".into(),
            ));
        }
        match answer.error.take() {
            Some(error) => Err(TaskError::Failed(error)),
            None => Ok(answer),
        }
    }
}
