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
pub(crate) mod client;
pub(crate) mod client_metrics;
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
pub use stream::{Closed, EventReader, SseSink, UiSink};
pub use transform::{ModelToolCall, StepOptions, StepSummary, StepTransformer};
pub use ui::{FinishReason, Text, UiChunk};
pub use upstream::UpstreamError;

use bytes::Bytes;
use client::{Client, Timeouts};
use http::HeaderMap;
use providers::Providers;
use serde_json::{Value, json};
use std::sync::Arc;
use std::time::Duration;

/// How long `/v1/models` waits for each provider's own list before using the
/// configured patterns instead.
const MODELS_TIMEOUT: Duration = Duration::from_secs(5);
/// Largest model list read from a provider.
const MAX_MODELS_BODY: usize = 8 << 20;

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
    pub async fn list_models(&self) -> Value {
        let mut tasks = tokio::task::JoinSet::new();
        for (i, p) in self.providers.all().iter().enumerate() {
            let (p, client) = (p.clone(), self.client.clone());
            tasks.spawn(async move {
                (
                    i,
                    fetch_models(&client, &p)
                        .await
                        .unwrap_or_else(|| configured_models(&p)),
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

fn model_entry(p: &Provider, id: &str, created: u64, owned_by: Option<&str>) -> Value {
    json!({
        "id": format!("{}/{id}", p.config.name),
        "object": "model",
        "created": created,
        "owned_by": owned_by.unwrap_or(&p.config.name),
    })
}

fn configured_models(p: &Provider) -> Vec<Value> {
    p.config
        .models
        .iter()
        .filter(|m| providers::is_literal(m))
        .map(|m| model_entry(p, m, 0, None))
        .collect()
}

async fn fetch_models(client: &Client, p: &Provider) -> Option<Vec<Value>> {
    let timeouts = Timeouts {
        connect: MODELS_TIMEOUT.min(Duration::from_millis(p.config.connect_timeout_ms.max(1))),
        first_byte: MODELS_TIMEOUT,
        idle: MODELS_TIMEOUT,
    };
    let list_path = match p.kind {
        crate::config::ProviderKind::Ollama => "/api/tags",
        crate::config::ProviderKind::Gemini => "/models?pageSize=1000",
        _ => "/models",
    };
    let mut req = http::Request::builder()
        .uri(p.base.endpoint(list_path))
        .body(http_body_util::Full::new(Bytes::new()))
        .expect("a path is a valid URI");
    for (name, value) in &p.headers {
        req.headers_mut().insert(name.clone(), value.clone());
    }
    if let Ok(Some((name, value))) = p.auth_header() {
        req.headers_mut().insert(name, value);
    }
    upstream::kind_headers(p, req.headers_mut());
    let fetch = async {
        let resp = client.send(&p.base, req, timeouts).await.ok()?;
        if !resp.status.is_success() {
            return None;
        }
        resp.body.collect(MAX_MODELS_BODY).await.ok()
    };
    let body = tokio::time::timeout(MODELS_TIMEOUT, fetch).await.ok()??;
    let list: Value = serde_json::from_slice(&body).ok()?;
    // OpenAI's `{"data": [{"id"}]}`, or Ollama's `{"models": [{"name"}]}`, or
    // Gemini's `{"models": [{"name": "models/…", "supportedGenerationMethods"}]}`
    // (only the models that generate content are listed).
    let (data, id_key) = match list.get("data") {
        Some(data) => (data.as_array()?, "id"),
        None => (list.get("models")?.as_array()?, "name"),
    };
    let generates = |m: &Value| match m.get("supportedGenerationMethods").and_then(Value::as_array) {
        Some(methods) => methods.iter().any(|x| x == "generateContent"),
        None => true,
    };
    Some(
        data.iter()
            .filter(|m| generates(m))
            .filter_map(|m| {
                let id = m.get(id_key)?.as_str()?;
                let id = match p.kind {
                    crate::config::ProviderKind::Gemini => id.strip_prefix("models/").unwrap_or(id),
                    _ => id,
                };
                Some(model_entry(
                    p,
                    id,
                    m.get("created").and_then(Value::as_u64).unwrap_or(0),
                    m.get("owned_by").and_then(Value::as_str),
                ))
            })
            .collect(),
    )
}
