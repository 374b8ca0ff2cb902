//! The hub's agent loop and its conversations.
//!
//! - [`message`]: the `UIMessage` shape stored and served;
//! - [`convert`]: UIMessages -> OpenAI messages;
//! - [`plan`]: the `useChat` trigger semantics against the stored session;
//! - [`sessions`]: sessions in sled;
//! - [`live`]: turns in progress (one per session), resumable by late joiners;
//! - [`builder`] and [`sink`]: the assistant message built from the streamed chunks;
//! - [`approval`]: tool calls that wait for the user's approval, and checking
//!   the answers against the approvals the hub issued;
//! - [`run`]: the loop itself; [`budget`]: the context guard, whose activations
//!   [`guard_metrics`] counts; [`prompt`]: the default system prompt; [`usage`]:
//!   each step reported to the accounting.
//!
//! [`Agent`] ties them together for the chat surface: start a turn, join one,
//! list and delete sessions. This layer uses `llm`, `hub` and `storage`, never the
//! HTTP surfaces.

mod approval;
mod budget;
mod builder;
mod convert;
mod guard_metrics;
mod live;
mod message;
mod plan;
mod prompt;
mod run;
mod sessions;
mod sink;
mod usage;

pub use budget::{ContextGuardEvent, GuardOutcome, GuardTrigger};
pub use live::{Busy, LiveTurn, LiveTurns, Subscription};
pub use message::{Part, PartError, Role, TextState, ToolApproval, ToolPart, ToolState, UiMessage};
pub use plan::{ChatRequest, PlanError, Trigger};
pub use sessions::{IssuedApproval, Session, SessionInfo, Sessions};

use crate::config::AgentConfig;
use crate::hub::{Caller, Hub};
use crate::llm::{KeyError, Llm, RouteError};
use crate::storage::{Storage, StorageError};
use run::{Turn, TurnEnv};
use serde_json::{Value, json};
use std::sync::Arc;

/// Why a turn (or a session operation) could not start.
#[derive(Debug)]
pub enum AgentError {
    /// The request does not fit the session (400).
    Invalid(PlanError),
    /// A turn is already running in this session (409).
    Busy(Busy),
    /// Neither the request nor `[agent] model` names a model (400).
    NoModel,
    /// No provider serves the model (404/503).
    Route(RouteError),
    /// The provider's API key is not set (503).
    ProviderKey(KeyError),
    /// Reading or writing the session store failed (500).
    Storage(StorageError),
    /// An approval answer the hub cannot accept: an id it did not issue, for
    /// another call, a changed input, or an approval left unanswered (400).
    Approval(String),
}

impl std::fmt::Display for AgentError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            AgentError::Invalid(e) => e.fmt(f),
            AgentError::Busy(b) => write!(
                f,
                "a turn is already running in session {:?}; wait for it or stop it",
                b.session_id
            ),
            AgentError::NoModel => f.write_str(
                "no model: send \"model\" in the request body or set [agent] model in the configuration",
            ),
            AgentError::Route(e) => e.fmt(f),
            AgentError::ProviderKey(e) => e.fmt(f),
            AgentError::Storage(e) => e.fmt(f),
            AgentError::Approval(message) => f.write_str(message),
        }
    }
}

impl std::error::Error for AgentError {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        match self {
            AgentError::Route(e) => Some(e),
            AgentError::ProviderKey(e) => Some(e),
            AgentError::Storage(e) => Some(e),
            AgentError::Invalid(_) | AgentError::Busy(_) | AgentError::NoModel | AgentError::Approval(_) => {
                None
            }
        }
    }
}

impl From<StorageError> for AgentError {
    fn from(e: StorageError) -> Self {
        AgentError::Storage(e)
    }
}

/// The agent: sessions, turns in progress, and what a turn needs.
pub struct Agent {
    env: TurnEnv,
    default_model: Option<String>,
    live: LiveTurns,
}

/// The four meta-tools as OpenAI function tools.
pub fn openai_tools() -> Value {
    Value::Array(
        crate::hub::meta_tools()
            .iter()
            .map(|t| {
                json!({
                    "type": "function",
                    "function": { "name": t.name, "description": t.description, "parameters": t.input_schema },
                })
            })
            .collect(),
    )
}

impl Agent {
    /// The agent for `config`, storing sessions in `storage` and calling models
    /// through `llm` and operations through `hub`.
    pub fn new(
        config: &AgentConfig,
        llm: Arc<Llm>,
        hub: Arc<Hub>,
        storage: &Storage,
    ) -> Result<Agent, StorageError> {
        let env = TurnEnv {
            llm,
            hub,
            sessions: Sessions::open(storage)?,
            tools: Arc::new(openai_tools()),
            system_prompt: prompt::system_prompt(config.system_prompt.as_deref()).to_string(),
            max_steps: config.max_steps.max(1),
            context_window: config.context_window,
            guard: Default::default(),
        };
        Ok(Agent {
            env,
            default_model: config.model.clone(),
            live: LiveTurns::default(),
        })
    }

    /// The agent's metrics in Prometheus text format (the context guard's).
    pub fn metrics_text(&self) -> String {
        self.env.guard.render()
    }

    /// The stored conversations.
    pub fn sessions(&self) -> &Sessions {
        &self.env.sessions
    }

    /// The turns in progress, by session.
    pub fn live_turns(&self) -> &LiveTurns {
        &self.live
    }

    /// Starts a turn for `req` and returns the first client's subscription to it.
    /// The turn runs on its own task; it is cancelled when every subscriber is gone.
    pub fn start(self: &Arc<Self>, req: ChatRequest, caller: Caller) -> Result<Subscription, AgentError> {
        let model = req
            .model
            .clone()
            .or_else(|| self.default_model.clone())
            .ok_or(AgentError::NoModel)?;
        let targets = self.env.llm.targets(&model).map_err(AgentError::Route)?;
        crate::llm::check_keys(&targets).map_err(AgentError::ProviderKey)?;
        let live = self.live.begin(&req.session_id).map_err(AgentError::Busy)?;
        // From here on this request owns the session: nobody else writes it.
        let prepared = self
            .env
            .sessions
            .load(&req.session_id)
            .map_err(AgentError::from)
            .and_then(|stored| {
                let info = stored.as_ref().map(|s| s.info.clone());
                let mut plan =
                    plan::plan_turn(stored.map(|s| s.messages), &req, || crate::ids::new_id("msg"))
                        .map_err(AgentError::Invalid)?;
                if plan.continued
                    && let Some(client) = req.messages.last()
                {
                    approval::apply_responses(
                        &self.env.sessions,
                        &req.session_id,
                        &mut plan.assistant,
                        client,
                    )?;
                }
                Ok((info, plan))
            });
        let (info, plan) = match prepared {
            Ok(ok) => ok,
            Err(e) => {
                self.live.finish(&live);
                return Err(e);
            }
        };
        let now = crate::clock::now_ms();
        let session = info.unwrap_or_else(|| SessionInfo {
            id: req.session_id.clone(),
            title: String::new(),
            created_at: now,
            updated_at: now,
            message_count: 0,
            model: None,
        });
        let subscription = live.subscribe();
        let turn = Turn {
            session,
            history: plan.history,
            unchanged: plan.unchanged,
            assistant: plan.assistant,
            targets,
            model,
            caller,
            live: live.clone(),
        };
        let agent = self.clone();
        tokio::spawn(async move {
            let outcome = run::run(&agent.env, turn).await;
            crate::debug!(
                "chat session {}: turn ended ({})",
                live.session_id,
                outcome.as_str()
            );
            agent.live.finish(&live);
        });
        Ok(subscription)
    }

    /// Joins the turn running in `session_id`, if any.
    pub fn join(&self, session_id: &str) -> Option<Subscription> {
        self.live
            .get(session_id)
            .filter(|t| !t.is_ended())
            .map(|t| t.subscribe())
    }

    /// Session `id` with its messages, if it exists.
    pub fn session(&self, id: &str) -> Result<Option<Session>, StorageError> {
        self.env.sessions.load(id)
    }

    /// Every session's record, most recently updated first.
    pub fn list_sessions(&self) -> Result<Vec<SessionInfo>, StorageError> {
        self.env.sessions.list()
    }

    /// Deletes a session; refused while a turn runs in it.
    pub fn delete_session(&self, id: &str) -> Result<bool, AgentError> {
        // Registering a (never started) turn holds the session while it is deleted.
        let guard = self.live.begin(id).map_err(AgentError::Busy)?;
        let deleted = self.env.sessions.delete(id);
        if matches!(deleted, Ok(true)) {
            self.env.hub.forget_session_usage(id);
        }
        self.live.finish(&guard);
        Ok(deleted?)
    }
}
