//! Upstream model providers and the OpenAI -> AI SDK UI message stream transform.
//!
//! This layer owns everything between the hub and a model provider: routing a
//! model name to a provider ([`providers`]) or a chain of targets tried in turn
//! ([`route`]), each provider kind's API mapped to and from the hub's one
//! internal request and stream, OpenAI chat completions ([`adapter`]), the HTTP
//! client with its pool,
//! timeouts and retries ([`client`], [`upstream`]), the wire types ([`openai`],
//! [`ui`]), the pure chunk transformer ([`transform`]), the rule for whether an
//! upstream answer arrived whole ([`terminal`]), streaming a call as UI chunks
//! ([`stream`]) and the wire trace of every upstream exchange ([`trace`]). It knows nothing about the HTTP surfaces above it.

pub(crate) mod adapter;
pub(crate) mod anthropic_wire;
pub(crate) mod client;
pub(crate) mod client_metrics;
mod models;
pub(crate) mod openai;
pub(crate) mod providers;
pub(crate) mod route;
mod spans;
pub(crate) mod stream;
pub(crate) mod stream_error;
pub(crate) mod terminal;
pub(crate) mod tokenizer;
pub mod trace;
pub(crate) mod transform;
pub(crate) mod ui;
pub(crate) mod upstream;

pub use client::{Cause, Response, ResponseBody, ResponseBodyError, SendError};
pub use openai::Usage;
pub use providers::{BaseUrl, BaseUrlError, KeyError, Provider, ProviderError, Route, RouteError};
pub use route::{Tuning, check_keys};
pub(crate) use spans::{RelayedAnswer, chat_span, end_chat, end_relay};
pub use stream::{Closed, EventReader, SseSink, UiSink};
pub use transform::{ModelToolCall, StepOptions, StepSummary, StepTransformer};
pub use ui::{FinishReason, Text, UiChunk};
pub use upstream::UpstreamError;

use client::Client;
use http::HeaderMap;
use providers::Providers;
use serde_json::{Value, json};
use std::sync::Arc;

/// The providers and the client that talks to them. One per hub.
pub struct Llm {
    providers: Providers,
    chains: route::Chains,
    client: Arc<Client>,
    /// The wire trace, when `[llm_trace] enabled` is on.
    trace: Option<Arc<trace::Trace>>,
}

impl Llm {
    /// Builds the provider table; fails on an invalid base URL or header.
    pub fn new(configs: &[crate::config::ProviderConfig]) -> Result<Llm, ProviderError> {
        Llm::with_models(configs, &[])
    }

    /// [`Llm::new`] with the `[[models]]` chains; fails also on a target no
    /// provider serves.
    pub fn with_models(
        configs: &[crate::config::ProviderConfig],
        models: &[crate::config::ModelConfig],
    ) -> Result<Llm, ProviderError> {
        let providers = Providers::new(configs)?;
        Ok(Llm {
            chains: route::Chains::new(models, &providers)?,
            providers,
            client: Arc::new(Client::new()),
            trace: None,
        })
    }

    /// Writes every upstream exchange to `trace` from now on (see [`trace`]).
    pub fn set_trace(&mut self, trace: Option<trace::Trace>) {
        self.trace = trace.map(Arc::new);
    }

    /// Ends every upstream exchange still running, with an error each surface
    /// reports as such (see `client`): the hub is shutting down and its grace for
    /// in-flight requests ran out (`surfaces::server`).
    pub fn shut_down(&self) {
        self.client.shut_down();
    }

    /// Whether [`Llm::shut_down`] was called: no target is tried any more.
    pub(crate) fn is_shut_down(&self) -> bool {
        self.client.is_shut_down()
    }

    /// The configured providers, in configuration order.
    pub fn providers(&self) -> &[Arc<Provider>] {
        self.providers.all()
    }

    /// Which provider serves `model`, and the name to send it.
    pub fn route(&self, model: &str) -> Result<Route, RouteError> {
        self.providers.route(model)
    }

    /// Sends `body`, an OpenAI chat-completions request whose `model` is
    /// `route`'s, to `route`'s provider in its own API, with retries (see
    /// [`upstream`]), and returns the answer read as OpenAI's (see [`adapter`]).
    /// Non-2xx answers are returned for the caller to relay. Dropping the response
    /// (or its body) cancels the upstream request.
    pub async fn chat(
        &self,
        route: &Route,
        body: &Value,
        forwarded: &HeaderMap,
    ) -> Result<Response, UpstreamError> {
        let provider = &route.provider;
        let call = adapter::prepare(route, body).map_err(|source| UpstreamError::Request {
            provider: provider.config.name.clone(),
            source,
        })?;
        let resp = upstream::call(&self.client, provider, &call, forwarded, self.trace.as_ref()).await?;
        Ok(adapter::answer(route, &call, resp, route::MAX_UPSTREAM_BODY))
    }

    /// The union of every provider's models as `provider/model`, in OpenAI's list
    /// shape. Each provider's own `/models` (an `ollama` one's `/api/tags`) is asked (concurrently, 5 s each, no
    /// retries); a provider that does not answer with a list contributes its literal
    /// model patterns instead (wildcard patterns name no model and are left out).
    /// A `gemini` provider's list is read page by page (see `models`).
    pub async fn list_models(&self) -> Value {
        let mut tasks = tokio::task::JoinSet::new();
        for (i, p) in self.providers.all().iter().enumerate() {
            let (p, client) = (p.clone(), self.client.clone());
            tasks.spawn(async move {
                (
                    i,
                    models::fetch(&client, &p)
                        .await
                        .unwrap_or_else(|| models::configured(&p)),
                )
            });
        }
        let mut lists = Vec::new();
        while let Some(joined) = tasks.join_next().await {
            if let Ok(list) = joined {
                lists.push(list);
            }
        }
        lists.sort_by_key(|(i, _)| *i);
        json!({ "object": "list", "data": lists.into_iter().flat_map(|(_, l)| l).collect::<Vec<_>>() })
    }
}
