//! The hub's agent loop and its conversations.
//!
//! - [`message`]: the `UIMessage` shape stored and served;
//! - [`convert`]: UIMessages -> OpenAI messages;
//! - [`plan`]: the `useChat` trigger semantics against the stored session;
//! - [`store`]: where sessions are kept (the embedded backend's sled tables or PostgreSQL), with the lease of
//!   the session whose turn is live; [`lease`]: a turn's lease while it runs;
//! - [`live`]: turns in progress (one per session), resumable by late joiners;
//!   [`bus`]: their chunks published to watchers on any replica;
//! - [`builder`] and [`sink`]: the assistant message built from the streamed chunks;
//! - [`approval`]: tool calls that wait for the user's approval, and checking
//!   the answers against the approvals the hub issued;
//! - [`profiles`]: the agents (`[agent]`, `[[agents]]`, the agents folder) a turn
//!   runs as, and their sampling parameters;
//! - [`structured`]: a final answer as JSON satisfying a schema;
//! - [`task`]: one task run to its final answer (the REST route, sub-agents),
//!   [`answer`] what its chunks amount to; [`temporary`]: a one-off turn's
//!   session, deleted when the turn ends even if its request went away; [`subagents`]: the agents as the hub's
//!   `agents.NAME` operations;
//! - [`run`]: the loop itself; [`context_guard`]: the context guard, whose activations
//!   [`guard_metrics`] counts; [`prompt`]: the default system prompt; [`usage`]:
//!   each step reported to the accounting.
//!
//! [`Agent`] ties them together for the chat surface: start a turn (waiting in
//! [`queue`] behind a running one), and through [`access`] join, stop, list,
//! delete and hand over sessions. Every session belongs to the principal whose
//! turn created it; each operation takes the [`Caller`] and shows it only what it
//! may see (`Caller::may_access`), another principal's session being exactly as
//! missing as an unknown id. This layer uses `llm`, `hub` and `storage`, never the
//! HTTP surfaces.

mod access;
mod answer;
mod approval;
mod builder;
mod bus;
mod context_guard;
mod convert;
pub(crate) mod counted;
mod guard_metrics;
mod lease;
mod live;
mod message;
mod plan;
mod profiles;
mod prompt;
mod queue;
mod run;
mod sink;
mod store;
mod structured;
mod subagents;
mod task;
mod temporary;
mod tool_result;
mod usage;

pub use answer::{Added, Collected};
pub use bus::{TurnBus, Watch};
pub(crate) use context_guard::Counter;
pub use live::{Busy, LiveTurn, LiveTurns, Subscription, TurnLimits};
pub use message::{Part, PartError, Role, TextState, ToolApproval, ToolPart, ToolState, UiMessage};
pub use plan::{Approver, ChatRequest, PlanError, Trigger};
pub use profiles::{
    OnProfiles, Profile, ProfileError, ProfileSet, ProfileSource, Profiles, Sampling, SamplingError,
};
pub use queue::QueueFull;
pub use store::{
    Conflict, IssuedApproval, Lease, SaveOutcome, SaveRequest, Session, SessionInfo, SessionStore,
};
pub use structured::{JsonOutput, SchemaError, check_schema};
pub use task::{Task, TaskAnswer, TaskError};
pub use temporary::TemporarySession;

use crate::config::Config;
use crate::hub::{Caller, Hub, QuotaExceeded};
use crate::llm::tokenizer::Tokenizers;
use crate::llm::{KeyError, Llm, RouteError};
use crate::storage::{Backend, StorageError};
use lease::{HeldLease, Leases};
use run::{Turn, TurnEnv};
use serde_json::{Value, json};
use std::sync::Arc;
use std::time::Duration;

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
    /// No session with this id that the caller may see (404; another principal's
    /// session answers exactly like a missing one).
    NotFound(String),
    /// An operator asked to continue another principal's conversation (403):
    /// only its owner does; an operator may hand it over.
    NotOwner {
        /// The session.
        session: String,
        /// Its owner.
        principal: String,
    },
    /// The caller is at one of its storage limits (403).
    Quota(QuotaExceeded),
    /// A hand-over by a caller that is not an operator (403).
    NotOperator(String),
    /// A turn runs in the session and `agent.queued_turns` requests already wait
    /// for it (409).
    QueueFull(QueueFull),
    /// The request names an agent there is no profile of (404).
    UnknownAgent(String),
    /// A requested sampling parameter is outside the operator's limits (400).
    Sampling(SamplingError),
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
            AgentError::NotFound(id) => write!(f, "no session {id:?}"),
            AgentError::NotOwner { session, principal } => write!(
                f,
                "session {session:?} belongs to {principal:?}: only its principal continues it \
                 (an operator may hand it over: POST /api/sessions/{session}/handover)"
            ),
            AgentError::Quota(e) => e.fmt(f),
            AgentError::QueueFull(e) => e.fmt(f),
            AgentError::UnknownAgent(name) => write!(
                f,
                "no agent named {name:?}; GET /v1/models lists the agents (owned_by \"wasmhub-agent\")"
            ),
            AgentError::Sampling(e) => e.fmt(f),
            AgentError::NotOperator(name) => write!(
                f,
                "{name:?} is not an operator: only operators hand sessions over"
            ),
        }
    }
}

impl std::error::Error for AgentError {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        match self {
            AgentError::Route(e) => Some(e),
            AgentError::ProviderKey(e) => Some(e),
            AgentError::Storage(e) => Some(e),
            AgentError::Quota(e) => Some(e),
            AgentError::QueueFull(e) => Some(e),
            AgentError::Sampling(e) => Some(e),
            AgentError::UnknownAgent(_)
            | AgentError::Invalid(_)
            | AgentError::Busy(_)
            | AgentError::NoModel
            | AgentError::Approval(_)
            | AgentError::NotFound(_)
            | AgentError::NotOwner { .. }
            | AgentError::NotOperator(_) => None,
        }
    }
}

impl From<StorageError> for AgentError {
    fn from(e: StorageError) -> Self {
        AgentError::Storage(e)
    }
}

/// How often a request waiting for a session's lease tries again when the turn
/// holding it is not on the bus (starting, ending, or its replica gone).
const LEASE_RETRY: Duration = Duration::from_millis(200);

/// The agent: sessions, turns in progress, and what a turn needs.
pub struct Agent {
    env: TurnEnv,
    profiles: Arc<Profiles>,
    bus: Arc<dyn TurnBus>,
    leases: Leases,
    queue: queue::TurnQueue,
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

/// The live-turn limits `agent` configures.
fn turn_limits(agent: &crate::config::AgentConfig) -> TurnLimits {
    TurnLimits {
        detached: Duration::from_secs(agent.detached_turn_secs),
        resume_buffer: agent.resume_buffer_kb.saturating_mul(1024),
        lagging_watcher: agent.lagging_watcher_kb.saturating_mul(1024),
    }
}

impl Agent {
    /// The configured tokenizers (`[tokenizers]`), shared with the surfaces that
    /// count a call's tokens when its provider reports none.
    pub(crate) fn tokenizers(&self) -> &Arc<Tokenizers> {
        &self.env.tokenizers
    }

    /// The agent for `config`, keeping sessions in `backend` and calling models
    /// through `llm` and operations through `hub`. Turns hold their session's
    /// lease for `storage.lease_secs` at a time, as this replica.
    pub async fn new(
        config: &Config,
        llm: Arc<Llm>,
        hub: Arc<Hub>,
        backend: &Backend,
    ) -> Result<Arc<Agent>, StorageError> {
        let sessions = store::open(backend).await?;
        let owner = crate::ids::replica_id();
        let ttl = Duration::from_secs(config.storage.lease_secs);
        let agent = &config.agent;
        let published = Arc::downgrade(&hub);
        let env = TurnEnv {
            llm,
            hub: hub.clone(),
            sessions: sessions.clone(),
            tools: Arc::new(openai_tools()),
            context_window: agent.context_window,
            tokenizers: Arc::new(Tokenizers::new(
                config.tokenizers.dir(&config.data_dir),
                config.tokenizers.max_file_kb,
            )),
            guard: Default::default(),
        };
        // The named agents are the hub's `agents.NAME` operations, kept current.
        let profiles = Profiles::start(
            config,
            Box::new(move |set: &ProfileSet| {
                if let Some(hub) = published.upgrade() {
                    subagents::publish(&hub, set);
                }
            }),
        );
        let agent = Arc::new(Agent {
            env,
            profiles,
            bus: bus::open(backend, owner, ttl, turn_limits(agent)).await?,
            leases: Leases {
                store: sessions,
                owner: owner.to_string(),
                ttl,
            },
            queue: queue::TurnQueue::new(agent.queued_turns),
        });
        subagents::register(&hub, &agent);
        Ok(agent)
    }

    /// The agent's metrics in Prometheus text format (the context guard's).
    pub fn metrics_text(&self) -> String {
        let mut text = self.env.guard.render();
        text.push_str(
            "# HELP wasmhub_chat_queued_turns Chat requests waiting for their session's turn to end.\n\
             # TYPE wasmhub_chat_queued_turns gauge\n",
        );
        text.push_str(&format!("wasmhub_chat_queued_turns {}\n", self.queue.waiting()));
        text
    }

    /// The agent profiles in force now.
    pub fn profiles(&self) -> Arc<ProfileSet> {
        self.profiles.current()
    }

    /// The stored conversations.
    pub fn sessions(&self) -> &Arc<dyn SessionStore> {
        &self.env.sessions
    }

    /// Starts a turn for `req` and returns the first client's subscription to it.
    /// The turn runs on its own task; it is cancelled when every watcher is gone.
    pub async fn start(
        self: &Arc<Self>,
        req: ChatRequest,
        caller: Caller,
    ) -> Result<Subscription, AgentError> {
        let (profile, sampling) = self.profile_of(&req)?;
        let (model, targets) = self.targets(&req, &profile)?;
        crate::llm::check_keys(&targets).map_err(AgentError::ProviderKey)?;
        // The agent calls what both its caller and its profile allow.
        let caller = match &profile.allow {
            Some(patterns) => caller.within(patterns),
            None => caller,
        };
        // ... under both their approval policies (a profile's only tightens).
        let caller = match &profile.approvals {
            Some(approvals) => caller.tightened(approvals.clone()),
            None => caller,
        };
        // Before the lease: another principal's busy session must answer as a
        // missing one, not as busy.
        access::owned_by(self.env.sessions.info(&req.session_id).await?.as_ref(), &caller)?;
        // From here on this request owns the session: nobody else writes it.
        let waited = std::time::Instant::now();
        let lease = self.lease_in_turn(&req.session_id).await?;
        crate::telemetry::storage_wait("wasmhub.session.lease", waited);
        let live = match self.bus.begin(&req.session_id, caller.name()).await {
            Ok(live) => live,
            Err(e) => {
                lease.release().await;
                return Err(e);
            }
        };
        let (info, plan) = match self.prepare(&req, &caller).await {
            Ok(ok) => ok,
            Err(e) => {
                self.bus.finish(&live);
                lease.release().await;
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
            version: 0,
            principal: caller.name().to_string(),
            client: caller.client().map(str::to_string),
            stored_bytes: 0,
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
            approvals: req.approvals,
            live: live.clone(),
            profile,
            sampling,
            output: req.output.clone(),
            parent: req.parent.clone(),
            surface: req.surface,
        };
        let agent = self.clone();
        tokio::spawn(crate::telemetry::carry(async move {
            let outcome = run::run(&agent.env, turn).await;
            crate::debug!(
                "chat session {}: turn ended ({})",
                live.session_id,
                outcome.as_str()
            );
            // Released before the watchers' streams end: a client that sends its
            // next request as soon as its stream closes must find the session free.
            lease.release().await;
            agent.bus.finish(&live);
        }));
        Ok(subscription)
    }

    /// The provider a task of the agent `name` asks first (its first model's first
    /// target), when it routes.
    pub fn first_provider(&self, name: &str) -> Option<String> {
        let profile = self.profiles.current().get(name)?.clone();
        let first = profile.models.first()?;
        let route = self.env.llm.targets(first).ok()?.into_iter().next()?;
        Some(route.provider.config.name.clone())
    }

    /// The profile `req` names (the default one when it names none) and the
    /// sampling parameters of its turn: the request's over the profile's.
    fn profile_of(&self, req: &ChatRequest) -> Result<(Arc<Profile>, Sampling), AgentError> {
        let set = self.profiles.current();
        let profile = match &req.agent {
            None => set.default_profile(),
            Some(name) => set
                .get(name)
                .ok_or_else(|| AgentError::UnknownAgent(name.clone()))?,
        };
        let sampling = profile
            .sampling
            .with(&req.sampling, self.profiles.limits())
            .map_err(AgentError::Sampling)?;
        Ok((profile.clone(), sampling))
    }

    /// The model the turn names (the request's, else the profile's) and its
    /// targets: a profile's list of models is one chain, each name's targets in turn.
    fn targets(
        &self,
        req: &ChatRequest,
        profile: &Profile,
    ) -> Result<(String, Vec<crate::llm::Route>), AgentError> {
        let names = match &req.model {
            Some(model) => std::slice::from_ref(model),
            None => profile.models.as_slice(),
        };
        let Some(first) = names.first() else {
            return Err(AgentError::NoModel);
        };
        let mut targets = Vec::new();
        for name in names {
            targets.extend(self.env.llm.targets(name).map_err(AgentError::Route)?);
        }
        Ok((first.clone(), targets))
    }

    /// The session's lease, once the turn running in it (if any) and the requests
    /// that came before this one (`agent.queued_turns`) are done.
    async fn lease_in_turn(&self, session: &str) -> Result<HeldLease, AgentError> {
        if !self.queue.has_waiting(session) {
            match self.leases.acquire(session).await {
                Err(AgentError::Busy(_)) if self.queue.enabled() => {}
                done => return done,
            }
        }
        let place = self.queue.enter(session).map_err(AgentError::QueueFull)?;
        let _head = place.head().await;
        loop {
            match self.leases.acquire(session).await {
                Err(AgentError::Busy(_)) => self.turn_ended(session).await?,
                done => return done,
            }
        }
    }

    /// Returns once the turn of `session` that holds its lease ended. Following it
    /// counts as watching it: a turn somebody waits behind is not detached.
    async fn turn_ended(&self, session: &str) -> Result<(), StorageError> {
        match self.bus.subscribe(session, None).await? {
            Some(mut watch) => while watch.next_batch().await.is_some() {},
            // The lease is held but its turn is not (or no longer) on the bus: one
            // starting or ending, or a dead replica's lease lapsing.
            None => tokio::time::sleep(LEASE_RETRY).await,
        }
        Ok(())
    }

    /// The stored session and the planned turn of `req`, once the session is
    /// known to be the caller's and the caller within its storage limits.
    async fn prepare(
        &self,
        req: &ChatRequest,
        caller: &Caller,
    ) -> Result<(Option<SessionInfo>, plan::TurnPlan), AgentError> {
        let stored = self.env.sessions.load(&req.session_id).await?;
        // Checked again under the lease: the session may have been made since.
        access::owned_by(stored.as_ref().map(|s| &s.info), caller)?;
        let usage = self.env.sessions.stored_usage(caller.name()).await?;
        caller
            .quota()
            .admit(caller.name(), usage, stored.is_none())
            .map_err(AgentError::Quota)?;
        let info = stored.as_ref().map(|s| s.info.clone());
        let mut plan = plan::plan_turn(stored.map(|s| s.messages), req, || crate::ids::new_id("msg"))
            .map_err(AgentError::Invalid)?;
        if plan.continued
            && let Some(client) = req.messages.last()
        {
            approval::apply_responses(&*self.env.sessions, &req.session_id, &mut plan.assistant, client)
                .await?;
        }
        Ok((info, plan))
    }
}
