//! The agent loop: one turn of a conversation, step by step.
//!
//! ```text
//! start
//! a continued message with answered approvals: run the approved calls,     (tool-output-available)
//!     report the denied ones                                            (tool-output-denied)
//! for step in 1..=max_steps:
//!     stream one model call through the shared transformer      (start-step, text, tool inputs)
//!     the last step offers no tools and asks the model to conclude  (finishReason max-steps)
//!     no tool calls?  -> finish-step, save, finish             (done)
//!     run every tool call of the step concurrently via the hub (tool-output-available / -error)
//!     calls needing the user's approval are not run               (tool-approval-request)
//!     finish-step, save durably
//!     any approval asked for? -> finish (finishReason tool-calls, metadata approval-requested)
//! ```
//!
//! Tool failures, invalid tool-call JSON and results too large for the context go
//! back to the model as tool results carrying the error, and the loop goes on. An
//! upstream failure the LLM client did not recover from by retrying ends the turn
//! with an `error` chunk. A stopped turn (`POST /api/chat/{id}/stop`, or nobody
//! watched it for `agent.detached_turn_secs`) stops the upstream request and the
//! running tool calls and is stored marked `aborted`, its `abort` chunk saying why.
//!
//! [`tools`] runs a step's tool calls, and the calls whose approval the user
//! answered; `spans` are the turn's and its tool calls' trace spans.

use super::approval;
use super::builder::MessageBuilder;
use super::context_guard::{Budget, ContextLimits, Counter};
use super::convert;
use super::guard_metrics::GuardMetrics;
use super::live::LiveTurn;
use super::message::{Part, ToolState, UiMessage};
use super::plan::Approver;
use super::profiles::{Profile, Sampling};
use super::prompt;
use super::sink::TurnSink;
use super::store::{SaveOutcome, SaveRequest, SessionInfo, SessionStore};
use super::structured::JsonOutput;
use super::tool_result::{ToolResult, result_chunk};
use super::usage;
use crate::hub::{CallContext, Caller, Hub, MetaToolRequest};
use crate::llm::openai::prepare_stream_body;
use crate::llm::tokenizer::Tokenizers;
use crate::llm::{FinishReason, Llm, ModelToolCall, Route, StepOptions, StepSummary, UiChunk, Usage};
use crate::race::{Race, race};
use serde_json::{Map, Value, json};
use std::sync::Arc;
use std::time::Duration;

mod spans;
mod tools;
use tokio::task::JoinSet;

/// How long running tool calls get to notice a cancellation (and record it) before
/// their tasks are dropped.
const CANCEL_GRACE: Duration = Duration::from_secs(2);

/// Everything one turn needs besides the conversation.
pub(crate) struct TurnEnv {
    pub llm: Arc<Llm>,
    pub hub: Arc<Hub>,
    pub sessions: Arc<dyn SessionStore>,
    /// The OpenAI `tools` array of the four meta-tools.
    pub tools: Arc<Value>,
    /// The window of targets whose provider names none.
    pub context_window: u64,
    /// The configured tokenizers, loaded on first use (`[tokenizers]`).
    pub tokenizers: Arc<Tokenizers>,
    /// The context guard's activations and the tokens left, for `/metrics`.
    pub guard: GuardMetrics,
}

/// One turn, planned and ready to run.
pub(crate) struct Turn {
    pub session: SessionInfo,
    pub history: Vec<UiMessage>,
    /// Leading messages of `history` already stored unchanged.
    pub unchanged: usize,
    pub assistant: UiMessage,
    /// The model's targets, tried in turn at every step (`llm::route`).
    pub targets: Vec<Route>,
    /// The model as the client named it (recorded in the metadata).
    pub model: String,
    pub caller: Caller,
    /// Who approves the calls the policy asks about.
    pub approvals: Approver,
    pub live: Arc<LiveTurn>,
    /// The agent the turn runs as: its prompt and step limit.
    pub profile: Arc<Profile>,
    /// What is sent as temperature, top_p and max_tokens.
    pub sampling: Sampling,
    /// The final answer must be JSON (`agent::structured`).
    pub output: Option<JsonOutput>,
    /// The `agents.NAME` call a sub-agent's turn runs inside: its calls are that
    /// call's children.
    pub parent: Option<crate::hub::agent_calls::ParentCall>,
    /// The chat surface that asked for the turn (`ChatRequest::surface`).
    pub surface: &'static str,
}

/// How a turn ended (the hub's own reason; `messageMetadata.finishReason`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Outcome {
    Stop,
    MaxSteps,
    /// The turn waits for the user to answer approval requests.
    ApprovalRequested,
    Error,
    Aborted,
}

impl Outcome {
    pub(crate) fn as_str(self) -> &'static str {
        match self {
            Outcome::Stop => "stop",
            Outcome::MaxSteps => "max-steps",
            Outcome::ApprovalRequested => "approval-requested",
            Outcome::Error => "error",
            Outcome::Aborted => "aborted",
        }
    }
}

/// How a step's tool calls ended.
enum ToolsDone {
    /// Every call that could run answered.
    Ran,
    /// Some calls wait for the user's approval: the turn pauses.
    Paused,
    /// The turn was cancelled meanwhile.
    Cancelled,
}

struct Runner<'a> {
    env: &'a TurnEnv,
    turn: Turn,
    sink: TurnSink,
    usage: Option<Usage>,
    /// Where saving the history starts (after the first save, only the assistant).
    save_from: usize,
    steps: u32,
    /// The target that answered the latest step.
    answered: Option<Route>,
}

/// Runs `turn` to its end; never panics on provider or tool failures (they become
/// chunks). Storage failures are logged and reported to the client as an error.
pub(crate) async fn run(env: &TurnEnv, turn: Turn) -> Outcome {
    let sink = TurnSink::new(turn.live.clone(), turn.assistant.clone());
    let save_from = turn.unchanged;
    let mut r = Runner {
        env,
        turn,
        sink,
        usage: None,
        save_from,
        steps: 0,
        answered: None,
    };
    let mut span = spans::turn_span(&r.turn);
    let outcome = crate::telemetry::within(span.context().cloned(), async {
        let outcome = r.run().await;
        r.close(outcome).await;
        outcome
    })
    .await;
    spans::end_turn(&mut span, outcome, r.steps, r.usage.as_ref());
    outcome
}

impl Runner<'_> {
    async fn run(&mut self) -> Outcome {
        if let Err(e) = self.save(false).await {
            return self.fail(format!("cannot store the conversation: {e}"));
        }
        self.sink.emit(&[UiChunk::Start {
            message_id: Some(self.turn.assistant.id.clone()),
            message_metadata: Some(json!({ "model": self.turn.model, "sessionId": self.turn.session.id })),
        }]);
        let mut budget = Budget::new(ContextLimits::of(
            &self.turn.targets[0],
            self.env.context_window,
            &self.env.tokenizers,
        ));
        let profile = self.turn.profile.clone();
        let system = prompt::with_instructions(
            &profile.system_prompt,
            self.env.hub.instructions(&self.turn.caller),
        );
        if self.has_answered_approvals()
            && let Some(end) = self.resume_answered(&system, &mut budget).await
        {
            return end;
        }
        let max_steps = self.turn.profile.max_steps;
        for step in 0..max_steps {
            let last = step + 1 == max_steps;
            let (body, estimate) = self.request(&system, last, &budget.limits().counter);
            let opts = StepOptions {
                emit_start: false,
                emit_finish: false,
                message_id: None,
                step: self.steps_before() + step,
                ..StepOptions::default()
            };
            let started = std::time::Instant::now();
            let output = self.turn.output.clone();
            let prepare = move |route: &Route, body: &mut Value| {
                route.apply_tool_settings(body);
                if let Some(output) = &output {
                    output.prepare(route, body);
                }
            };
            let step = self
                .env
                .llm
                .run_step_chain(&self.turn.targets, &body, prepare, opts, &mut self.sink);
            let Ok(summary) = step.await else {
                return Outcome::Aborted;
            };
            self.measure(&summary, estimate, &mut budget);
            let provider = &self.answered.as_ref().unwrap_or(&self.turn.targets[0]).provider;
            crate::llm::terminal::count_skipped(
                self.turn.surface,
                &provider.config.name,
                summary.unknown_events,
            );
            let index = self.steps_before() + self.steps;
            let latency = started.elapsed();
            let ledger = self.ledger();
            let tokenizers = &self.env.tokenizers;
            usage::record_step(
                &ledger,
                &self.turn.targets,
                index,
                &summary,
                latency,
                &body,
                tokenizers,
            );
            if let Some(end) = self.step_ended(&summary, last) {
                return end;
            }
            let done = match self.run_tools(&summary.tool_calls, &mut budget).await {
                Ok(done) => done,
                Err(e) => return self.fail(format!("cannot store the approvals asked for: {e}")),
            };
            if matches!(done, ToolsDone::Cancelled) {
                return Outcome::Aborted;
            }
            self.env.guard.remaining(budget.limits(), budget.remaining());
            // Durable before `finish-step` is sent: a step reported finished survives
            // a crash.
            if let Err(e) = self.save(true).await {
                return self.fail(format!("cannot store the conversation: {e}"));
            }
            self.sink.emit(&[UiChunk::FinishStep]);
            if self.sink.is_cancelled() {
                return Outcome::Aborted;
            }
            if matches!(done, ToolsDone::Paused) {
                // As the AI SDK's own loop does: the step ended for its tool calls,
                // and the turn goes on once the user answered.
                self.finish(FinishReason::ToolCalls, Outcome::ApprovalRequested);
                return Outcome::ApprovalRequested;
            }
        }
        // Not reached: `max_steps` is at least 1 and its last step ends the turn above.
        self.finish(FinishReason::ToolCalls, Outcome::MaxSteps);
        Outcome::MaxSteps
    }

    /// Counts a finished model step and its usage; `Some` when the turn ends with it
    /// (the model failed, answered without calling a tool, or this was the last
    /// allowed step: tool calls the model sent anyway are reported as not run).
    fn step_ended(&mut self, summary: &StepSummary, last: bool) -> Option<Outcome> {
        self.steps += 1;
        if let Some(u) = summary.usage {
            self.usage = Some(self.usage.map_or(u, |t| t + u));
        }
        if summary.error.is_some() {
            // The `error` chunk was sent by the step; keep what the step produced.
            self.sink.emit(&[UiChunk::FinishStep]);
            self.finish(FinishReason::Error, Outcome::Error);
            return Some(Outcome::Error);
        }
        if last {
            let not_run = format!(
                "not run: the turn reached its step limit ({} = {})",
                self.turn.profile.max_steps_key(),
                self.turn.profile.max_steps
            );
            for call in summary.tool_calls.iter().filter(|c| c.arguments.is_ok()) {
                self.sink.emit(&[UiChunk::ToolOutputError {
                    tool_call_id: call.id.clone(),
                    error_text: not_run.clone(),
                }]);
            }
            self.sink.emit(&[UiChunk::FinishStep]);
            self.finish(summary.finish_reason, Outcome::MaxSteps);
            return Some(Outcome::MaxSteps);
        }
        if summary.tool_calls.is_empty() {
            self.sink.emit(&[UiChunk::FinishStep]);
            self.finish(summary.finish_reason, Outcome::Stop);
            return Some(Outcome::Stop);
        }
        None
    }

    /// The next model request and the tokens of its messages by `counter` (the
    /// current target's). The last allowed step offers no tools and asks for the
    /// answer, so the turn ends with one rather than with a cut-off.
    fn request(&self, system: &str, last: bool, counter: &Counter) -> (Value, u64) {
        let mut messages = self.messages(system);
        let estimate = counter.count(&Value::Array(messages.clone()).to_string());
        let mut body = if last {
            messages.push(json!({ "role": "user", "content": prompt::CONCLUDE }));
            json!({ "messages": messages })
        } else {
            json!({ "messages": messages, "tools": &*self.env.tools })
        };
        if let Value::Object(obj) = &mut body {
            self.turn.sampling.apply(obj);
        }
        prepare_stream_body(&mut body, &self.turn.targets[0].model);
        (body, estimate)
    }

    /// Notes which target answered the step and how full its context now is: the
    /// latest usage (input + output) when the provider sent it, else `estimate`.
    fn measure(&mut self, summary: &StepSummary, estimate: u64, budget: &mut Budget) {
        if let Some(target) = &summary.target {
            self.answered = self.turn.targets.iter().find(|r| &r.target() == target).cloned();
        }
        if let Some(route) = &self.answered {
            *budget = Budget::new(ContextLimits::of(
                route,
                self.env.context_window,
                &self.env.tokenizers,
            ));
        }
        budget.set_used(
            summary
                .usage
                .map(|u| u.input_tokens + u.output_tokens)
                .unwrap_or(estimate),
        );
        self.env.guard.remaining(budget.limits(), budget.remaining());
    }

    /// The conversation so far as OpenAI messages: the system prompt, the history and
    /// the assistant message being built.
    fn messages(&self, system: &str) -> Vec<Value> {
        let mut messages = convert::to_openai(Some(system), &self.turn.history);
        let assistant = self
            .sink
            .with_message(|m| convert::to_openai(None, std::slice::from_ref(m)));
        messages.extend(assistant);
        messages
    }

    /// Steps the continued assistant message already had, so part ids stay unique.
    fn steps_before(&self) -> u32 {
        self.turn
            .assistant
            .parts
            .iter()
            .filter(|p| matches!(p, super::message::Part::StepStart))
            .count() as u32
    }

    /// Where this turn's records go.
    fn ledger(&self) -> usage::Ledger<'_> {
        usage::Ledger {
            accounting: self.env.hub.accounting(),
            session: &self.turn.session.id,
            message: &self.turn.assistant.id,
            caller: self.turn.caller.name(),
            client: self.turn.caller.client(),
            agent: self
                .turn
                .profile
                .is_named()
                .then_some(self.turn.profile.name.as_str()),
        }
    }

    fn metadata(&self, outcome: Outcome) -> Value {
        let mut meta = Map::new();
        meta.insert("model".into(), Value::String(self.turn.model.clone()));
        if self.turn.profile.is_named() {
            meta.insert("agent".into(), Value::String(self.turn.profile.name.clone()));
        }
        let route = self.answered.as_ref().unwrap_or(&self.turn.targets[0]);
        meta.insert(
            "provider".into(),
            Value::String(route.provider.config.name.clone()),
        );
        meta.insert("target".into(), Value::String(route.target()));
        meta.insert("finishReason".into(), Value::String(outcome.as_str().into()));
        meta.insert("steps".into(), Value::from(self.steps));
        if let Some(u) = &self.usage {
            meta.insert("usage".into(), serde_json::to_value(u).expect("usage serializes"));
        }
        Value::Object(meta)
    }

    fn finish(&mut self, reason: FinishReason, outcome: Outcome) {
        let meta = self.metadata(outcome);
        self.sink.emit(&[UiChunk::Finish {
            finish_reason: Some(reason),
            message_metadata: Some(meta),
        }]);
    }

    fn fail(&mut self, message: String) -> Outcome {
        crate::error!("chat session {}: {message}", self.turn.session.id);
        self.sink.emit(&[UiChunk::Error { error_text: message }]);
        self.finish(FinishReason::Error, Outcome::Error);
        Outcome::Error
    }

    /// Ends the turn: an aborted turn gets its `abort` chunk, and the final message
    /// is stored durably.
    async fn close(&mut self, outcome: Outcome) {
        if outcome == Outcome::Aborted {
            self.sink.edit_message(MessageBuilder::close_open_parts);
            let why = self.turn.live.stop_reason();
            self.sink.emit(&[UiChunk::Abort {
                reason: Some(why.unwrap_or_else(|| "the turn was stopped".into())),
            }]);
            let meta = self.metadata(outcome);
            self.sink.edit_message(|b| b.message_mut().merge_metadata(&meta));
        }
        if let Err(e) = self.save(true).await {
            crate::error!(
                "chat session {}: cannot store the final message: {e}",
                self.turn.session.id
            );
        }
    }

    /// Stores the history and the assistant message as it is now, if nobody else
    /// wrote the session since this turn last did.
    async fn save(&mut self, durable: bool) -> Result<(), SaveError> {
        // A copy: the live turn keeps the message for joiners while it is stored.
        let assistant = self
            .sink
            .with_message(|m| (!m.parts.is_empty() || m.metadata.is_some()).then(|| m.clone()));
        self.turn.session.model = Some(self.turn.model.clone());
        let save = SaveRequest {
            info: &self.turn.session,
            head: &self.turn.history,
            tail: assistant.as_ref(),
            from: self.save_from,
            durable,
        };
        let started = std::time::Instant::now();
        let saved = self.env.sessions.save(save).await;
        crate::telemetry::storage_wait("wasmhub.session.save", started);
        match saved.map_err(SaveError::Storage)? {
            SaveOutcome::Saved(info) => self.turn.session = info,
            SaveOutcome::Conflict(c) => return Err(SaveError::Conflict(c)),
        }
        self.save_from = self.turn.history.len();
        Ok(())
    }
}

/// Why a save of the turn failed.
#[derive(Debug)]
enum SaveError {
    Storage(crate::storage::StorageError),
    /// Someone else wrote the session: this turn lost its lease.
    Conflict(super::store::Conflict),
}

impl std::fmt::Display for SaveError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            SaveError::Storage(e) => e.fmt(f),
            SaveError::Conflict(c) => c.fmt(f),
        }
    }
}
