//! Model names to ordered targets, and the fallback across them: the one place
//! the proxy (`/v1/chat/completions`), the UI stream (`/api/ui/chat/completions`)
//! and the agent loop try a model's targets in turn.
//!
//! A `[[models]]` name resolves to its `targets` in order: model first, then the
//! providers of each (`provider/model` names one; a bare model name every provider
//! whose patterns match it, in configuration order). Any other name goes to the
//! one provider that serves it ([`Providers::route`]). Every attempt gets the same
//! request; only `model` (the target's own name) and, where the caller asks, the
//! target's own tool settings differ. Each target's provider first spends its own
//! retries (`upstream`), then the chain moves on:
//!
//! - a failure before the first event (no connection, a non-2xx answer, a stream
//!   that ends or fails before its first event) moves on with a log line;
//! - a failure mid-stream on a UI stream gives up the attempt: its open parts are
//!   closed, its started tool inputs end in `tool-input-error` (never run), the
//!   recording sink drops its parts ([`UiSink::retract_attempt`]), a
//!   `data-llm-fallback` part says what happened, and the next target answers the
//!   same step. On the raw proxy the client already holds the relayed events and
//!   OpenAI chunks cannot take them back, so a failure after the first relayed
//!   event ends that stream with an error frame, as without a chain.
//!
//! The last target's failure is reported as it would be without a chain, and so
//! is a failure once the hub shuts down (`Llm::shut_down`): no next target then.

use super::Closed;
use super::Llm;
use super::openai::ChatChunk;
use super::providers::{KeyError, ProviderError, Providers, Route, RouteError, glob_match};
use super::stream::{EventReader, UiSink};
use super::stream_error::StreamError;
use super::terminal::{self, Unfinished};
use super::transform::{StepOptions, StepSummary, StepTransformer};
use super::ui::UiChunk;
use super::upstream::UpstreamError;
use crate::config::{ModelConfig, ToolChoice};
use crate::sse::OwnedEvent;
use bytes::Bytes;
use http::{HeaderMap, StatusCode, header};
use serde_json::{Value, json};
use std::collections::HashMap;

/// Largest non-streamed upstream answer read (and relayed).
pub(crate) const MAX_UPSTREAM_BODY: usize = 64 << 20;

/// A target's settings: its `[[providers.model_settings]]` entry (the first whose
/// glob matches the model) over its provider's keys. `None`: not configured.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Tuning {
    /// The model's context window, in tokens.
    pub context_window: Option<u64>,
    /// Tokens kept free for the answer.
    pub max_output_tokens: Option<u64>,
    /// Tokens kept free besides the answer.
    pub context_buffer: Option<u64>,
    /// `tool_choice` sent with the agent's tools.
    pub tool_choice: Option<ToolChoice>,
    /// `parallel_tool_calls` sent with the agent's tools.
    pub parallel_tool_calls: Option<bool>,
}

impl Route {
    /// `provider/model`, as metadata and logs name a target.
    pub fn target(&self) -> String {
        format!("{}/{}", self.provider.config.name, self.model)
    }

    /// This target's `[[providers.model_settings]]` entry: the first whose glob
    /// matches the model.
    pub fn settings(&self) -> Option<&crate::config::ModelSettings> {
        let p = &self.provider.config;
        p.model_settings
            .iter()
            .find(|s| glob_match(&s.model, &self.model))
    }

    /// This target's settings (see [`Tuning`]).
    pub fn tuning(&self) -> Tuning {
        let p = &self.provider.config;
        let m = self.settings();
        Tuning {
            context_window: m.and_then(|m| m.context_window).or(p.context_window),
            max_output_tokens: m.and_then(|m| m.max_output_tokens).or(p.max_output_tokens),
            context_buffer: m.and_then(|m| m.context_buffer).or(p.context_buffer),
            tool_choice: m.and_then(|m| m.tool_choice).or(p.tool_choice),
            parallel_tool_calls: m.and_then(|m| m.parallel_tool_calls).or(p.parallel_tool_calls),
        }
    }

    /// The tokenizer this target's text is counted with: its `model_settings`
    /// entry's, else its provider's; `None`: the 4-bytes estimate.
    pub fn tokenizer(&self) -> Option<&crate::config::Spec> {
        let m = self.settings().and_then(|m| m.tokenizer.as_ref());
        m.or(self.provider.config.tokenizer.as_ref())
    }

    /// Sets this target's `tool_choice` and `parallel_tool_calls` on a request that
    /// offers tools (a request without tools must not carry them).
    pub fn apply_tool_settings(&self, body: &mut Value) {
        let tuning = self.tuning();
        let Some(obj) = body.as_object_mut().filter(|o| o.contains_key("tools")) else {
            return;
        };
        if let Some(choice) = tuning.tool_choice {
            obj.insert("tool_choice".into(), Value::String(choice.as_str().into()));
        }
        if let Some(parallel) = tuning.parallel_tool_calls {
            obj.insert("parallel_tool_calls".into(), Value::Bool(parallel));
        }
    }
}

/// The `[[models]]` chains, resolved once at start-up.
#[derive(Debug, Default)]
pub(crate) struct Chains {
    by_name: HashMap<String, Vec<Route>>,
}

impl Chains {
    /// Resolves every target of `models`; a target no provider serves is an error.
    pub(crate) fn new(models: &[ModelConfig], providers: &Providers) -> Result<Chains, ProviderError> {
        let mut by_name = HashMap::new();
        for m in models {
            if m.targets.is_empty() {
                return Err(ProviderError::NoTargets {
                    model: m.name.clone(),
                });
            }
            let mut routes = Vec::with_capacity(m.targets.len());
            for target in &m.targets {
                let serving = providers
                    .serving(target)
                    .map_err(|source| ProviderError::Target {
                        model: m.name.clone(),
                        target: target.clone(),
                        source,
                    })?;
                routes.extend(serving);
            }
            by_name.insert(m.name.clone(), routes);
        }
        Ok(Chains { by_name })
    }
}

/// Whether `targets` can be called: `Ok` when at least one target's provider has
/// its API key (the others fail over to it), else the first target's key error.
pub fn check_keys(targets: &[Route]) -> Result<(), KeyError> {
    let mut first = None;
    for t in targets {
        match t.provider.auth_header() {
            Ok(_) => return Ok(()),
            Err(e) => {
                first.get_or_insert(e);
            }
        }
    }
    first.map_or(Ok(()), Err)
}

/// What the proxy relays: the answer of the target that answered.
pub(crate) struct Relayed {
    /// The target that answered.
    pub route: Route,
    /// Its status and headers.
    pub status: StatusCode,
    pub headers: HeaderMap,
    pub body: RelayBody,
}

/// The body of a [`Relayed`] answer.
pub(crate) enum RelayBody {
    /// A non-streamed answer (or an error answer), read whole.
    Whole(Bytes),
    /// An event stream; `first` is the event already read from it.
    Stream {
        first: Option<OwnedEvent>,
        reader: Box<EventReader>,
    },
}

/// Why the proxy has nothing to relay: the last target failed.
#[derive(Debug)]
pub(crate) enum RelayError {
    /// No response from the last target.
    Upstream(UpstreamError),
    /// The last target's answer broke off while it was read, or ended early.
    Body { route: Route, error: Unfinished },
    /// The chain is empty (never, for a chain from [`Llm::targets`]).
    NoTargets,
}

/// The target of `targets` named `provider/model` by a step's summary (the first
/// when the summary names none of them). `targets` is not empty.
pub(crate) fn answering_route<'a>(targets: &'a [Route], answered: Option<&str>) -> &'a Route {
    answered
        .and_then(|name| targets.iter().find(|r| r.target() == name))
        .unwrap_or(&targets[0])
}

impl Llm {
    /// The targets of `model`, in the order they are tried: a `[[models]]` name's
    /// targets, else the one provider that serves it.
    pub fn targets(&self, model: &str) -> Result<Vec<Route>, RouteError> {
        match self.chains.by_name.get(model) {
            Some(routes) => Ok(routes.clone()),
            None => Ok(vec![self.providers.route(model)?]),
        }
    }

    /// [`Llm::run_step`] over a chain of targets (see the module docs): each
    /// attempt sends `body` with the target's `model`, after `prepare` (the agent
    /// sets the target's tool settings there). The summary names the target that
    /// answered, and so does the `finish` chunk's metadata (`provider`, `target`).
    pub async fn run_step_chain<S: UiSink>(
        &self,
        targets: &[Route],
        body: &Value,
        prepare: impl Fn(&Route, &mut Value) + Send + Sync,
        opts: StepOptions,
        sink: &mut S,
    ) -> Result<StepSummary, Closed> {
        let started = std::time::Instant::now();
        let mut span = super::spans::chat_span(targets, body);
        let chain = self.step_chain(targets, body, prepare, opts, sink);
        let summary = crate::telemetry::within(span.context().cloned(), chain).await;
        let first = targets.first();
        let answered = summary.as_ref().ok().and_then(|s| s.target.as_deref());
        let route = first.map(|_| answering_route(targets, answered));
        let (provider, model) =
            route.map_or(("", ""), |r| (r.provider.config.name.as_str(), r.model.as_str()));
        let model = first.map_or(model, |r| r.model.as_str());
        let (usage, error) = match &summary {
            Ok(summary) => {
                super::spans::end_chat(&mut span, summary);
                (
                    summary.usage.as_ref(),
                    summary.error.as_ref().map(|_| "upstream_error"),
                )
            }
            Err(Closed) => {
                span.fail("client_closed", "the step's client went away");
                (None, Some("client_closed"))
            }
        };
        super::client_metrics::record(provider, model, started.elapsed(), usage, error);
        summary
    }

    async fn step_chain<S: UiSink>(
        &self,
        targets: &[Route],
        body: &Value,
        prepare: impl Fn(&Route, &mut Value) + Send + Sync,
        opts: StepOptions,
        sink: &mut S,
    ) -> Result<StepSummary, Closed> {
        let mut t = StepTransformer::new(opts);
        let mut out = Vec::new();
        t.begin(&mut out);
        sink.send(&out).await?;
        out.clear();
        let mut answered = None;
        for (i, route) in targets.iter().enumerate() {
            t.set_provider(&route.provider.config);
            let mut request = body.clone();
            request["model"] = Value::String(route.model.clone());
            prepare(route, &mut request);
            self.attempt(route, &request, &mut t, sink).await?;
            answered = Some(route);
            let (Some(reason), Some(next)) = (t.failure().map(str::to_owned), targets.get(i + 1)) else {
                break;
            };
            if self.is_shut_down() {
                // The hub's shutdown ended the attempt: no other target will answer,
                // and the partial answer stays with its error.
                break;
            }
            let mid_stream = t.has_output();
            crate::warn!(
                "target {} failed {}: {reason}; trying {}",
                route.target(),
                if mid_stream {
                    "mid-stream"
                } else {
                    "before its first event"
                },
                next.target()
            );
            t.abandon(&reason, &mut out);
            sink.send(&out).await?;
            out.clear();
            if mid_stream {
                sink.retract_attempt();
                let data = json!({ "from": route.target(), "to": next.target(), "reason": reason, "discarded": true });
                sink.send(&[UiChunk::Data {
                    name: "llm-fallback".into(),
                    id: None,
                    data,
                    transient: None,
                }])
                .await?;
            }
        }
        if let Some(route) = answered {
            t.set_finish_metadata("provider", Value::String(route.provider.config.name.clone()));
            t.set_finish_metadata("target", Value::String(route.target()));
        } else {
            t.fail("the model has no targets", &mut out);
        }
        let mut summary = t.finish(&mut out);
        summary.target = answered.map(Route::target);
        sink.send(&out).await?;
        Ok(summary)
    }

    /// The proxy's call over a chain of targets: the first answer that is a 2xx
    /// with its first event (streams) or its whole body (otherwise) is relayed;
    /// the last target's answer, whatever it is, too.
    pub(crate) async fn relay_chain(
        &self,
        targets: &[Route],
        body: &Value,
        forwarded: &HeaderMap,
    ) -> Result<Relayed, RelayError> {
        let stream = super::openai::wants_stream(body);
        for (i, route) in targets.iter().enumerate() {
            let last = i + 1 == targets.len();
            let mut request = body.clone();
            request["model"] = Value::String(route.model.clone());
            let resp = match self.chat(route, &request, forwarded).await {
                Ok(resp) => resp,
                Err(e) if last => return Err(RelayError::Upstream(e)),
                Err(e) => {
                    crate::warn!("target {} failed: {e}; trying the next target", route.target());
                    continue;
                }
            };
            let is_sse = resp
                .headers
                .get(header::CONTENT_TYPE)
                .and_then(|v| v.to_str().ok())
                .is_some_and(|v| v.starts_with("text/event-stream"));
            let (status, headers) = (resp.status, resp.headers);
            let relayed = |body| Relayed {
                route: route.clone(),
                status,
                headers: headers.clone(),
                body,
            };
            let reason = if stream && status.is_success() && is_sse {
                let max_event = (route.provider.config.max_event_kb.max(1) as usize).saturating_mul(1024);
                let mut reader = Box::new(EventReader::new(resp.body, max_event));
                if last {
                    return Ok(relayed(RelayBody::Stream { first: None, reader }));
                }
                match reader.next().await {
                    Ok(Some(first)) if !is_error_frame(&first.data) => {
                        let first = Some(first);
                        return Ok(relayed(RelayBody::Stream { first, reader }));
                    }
                    Ok(Some(event)) => event.data,
                    Ok(None) => "the stream ended before its first event".into(),
                    Err(e) => e.to_string(),
                }
            } else {
                // A 2xx answer whose JSON ends early was cut like a broken read.
                let whole = resp
                    .body
                    .collect(MAX_UPSTREAM_BODY)
                    .await
                    .map_err(|e| Unfinished::Broken(StreamError::Body(e)))
                    .and_then(|bytes| {
                        if status.is_success() && is_json(&headers) {
                            terminal::whole_answer(&bytes)?;
                        }
                        Ok(bytes)
                    });
                match whole {
                    Ok(bytes) if last || status.is_success() => return Ok(relayed(RelayBody::Whole(bytes))),
                    Ok(bytes) => format!("{status}: {}", super::upstream::error_message(&bytes)),
                    Err(error) if last => {
                        let route = route.clone();
                        return Err(RelayError::Body { route, error });
                    }
                    Err(e) => e.to_string(),
                }
            };
            crate::warn!(
                "target {} failed before its first event: {reason}; trying the next target",
                route.target()
            );
        }
        Err(RelayError::NoTargets)
    }
}

/// Whether an answer says it is JSON (`application/json`, `…+json`).
fn is_json(headers: &HeaderMap) -> bool {
    headers
        .get(header::CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
        .is_some_and(|v| v.split(';').next().unwrap_or("").trim().ends_with("json"))
}

/// Whether an upstream event is an error frame (`{"error": {...}}`).
fn is_error_frame(data: &str) -> bool {
    serde_json::from_str::<ChatChunk>(data).is_ok_and(|c| c.error_message().is_some())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::config::ProviderConfig;

    fn providers() -> Providers {
        let text = r#"
name = "local"
base_url = "http://127.0.0.1:9/v1"
models = ["qwen*"]
tool_choice = "required"
context_window = 32768
tokenizer = "tiktoken:o200k_base"

[[model_settings]]
model = "qwen2.5-7b*"
tool_choice = "auto"
parallel_tool_calls = false
max_output_tokens = 2048
tokenizer = "file:/srv/qwen.tiktoken"
"#;
        Providers::new(&[crate::toml::from_str(text).unwrap()]).unwrap()
    }

    #[test]
    fn a_models_settings_win_over_its_providers_and_go_only_with_tools() {
        let ps = providers();
        let small = ps.route("qwen2.5-7b-instruct").unwrap();
        assert_eq!(
            small.tuning(),
            Tuning {
                context_window: Some(32768),
                max_output_tokens: Some(2048),
                context_buffer: None,
                tool_choice: Some(ToolChoice::Auto),
                parallel_tool_calls: Some(false),
            }
        );
        let big = ps.route("local/qwen3").unwrap();
        assert_eq!(big.target(), "local/qwen3");
        let spec = |r: &Route| r.tokenizer().map(|s| s.to_string());
        assert_eq!(spec(&small).as_deref(), Some("file:/srv/qwen.tiktoken"));
        assert_eq!(spec(&big).as_deref(), Some("tiktoken:o200k_base"));
        assert_eq!(
            (big.tuning().tool_choice, big.tuning().max_output_tokens),
            (Some(ToolChoice::Required), None)
        );
        let mut body = json!({"messages": [], "tools": []});
        small.apply_tool_settings(&mut body);
        assert_eq!(
            (&body["tool_choice"], &body["parallel_tool_calls"]),
            (&json!("auto"), &json!(false))
        );
        let mut plain = json!({"messages": []});
        big.apply_tool_settings(&mut plain);
        assert_eq!(plain, json!({"messages": []}), "no tools, no tool settings");
    }

    #[test]
    fn chains_resolve_in_order_and_a_target_nobody_serves_is_an_error() {
        let ps = providers();
        let chain = |targets: &[&str]| ModelConfig {
            name: "smart".into(),
            targets: targets.iter().map(|t| t.to_string()).collect(),
        };
        let chains = Chains::new(&[chain(&["local/a", "qwen3"])], &ps).unwrap();
        let targets: Vec<String> = chains.by_name["smart"].iter().map(Route::target).collect();
        assert_eq!(targets, ["local/a", "local/qwen3"]);
        // A bare model name: every provider that serves it, in configuration order.
        let second: ProviderConfig = crate::toml::from_str(
            "name = \"cloud\"\nbase_url = \"http://127.0.0.1:9/v1\"\nmodels = [\"qwen3\", \"gpt-*\"]\n",
        )
        .unwrap();
        let both = Providers::new(&[ps.all()[0].config.clone(), second]).unwrap();
        let chains = Chains::new(&[chain(&["qwen3", "cloud/gpt-4o", "local/a"])], &both).unwrap();
        let targets: Vec<String> = chains.by_name["smart"].iter().map(Route::target).collect();
        assert_eq!(targets, ["local/qwen3", "cloud/qwen3", "cloud/gpt-4o", "local/a"]);
        let err = Chains::new(&[chain(&["local/a", "gpt-4o"])], &ps).unwrap_err();
        assert!(
            err.to_string().starts_with("models.smart: target \"gpt-4o\":"),
            "{err}"
        );
        assert!(std::error::Error::source(&err).is_some());
    }

    #[test]
    fn one_target_with_its_key_is_enough() {
        let keyed = crate::toml::from_str(
            "name = \"keyed\"\nbase_url = \"http://127.0.0.1:9/v1\"\napi_key_env = \"WASMHUB_TEST_ROUTE_KEY_UNSET\"\n",
        )
        .unwrap();
        let free = crate::toml::from_str("name = \"free\"\nbase_url = \"http://127.0.0.1:9/v1\"\n").unwrap();
        let ps = Providers::new(&[keyed, free]).unwrap();
        let (k, f) = (ps.route("keyed/m").unwrap(), ps.route("free/m").unwrap());
        let err = check_keys(std::slice::from_ref(&k)).unwrap_err();
        assert!(err.to_string().contains("WASMHUB_TEST_ROUTE_KEY_UNSET"), "{err}");
        assert!(check_keys(&[k, f]).is_ok());
        let empty = ModelConfig {
            name: "none".into(),
            targets: vec![],
        };
        assert!(
            Chains::new(&[empty], &ps)
                .unwrap_err()
                .to_string()
                .contains("models.none")
        );
    }
}
