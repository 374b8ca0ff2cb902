//! One provider's models for `/v1/models`: its own list (`/models`; an
//! `ollama` provider's `/api/tags`; a `gemini` one's `models.list`, page after
//! page by `nextPageToken`, at most [`MAX_MODEL_PAGES`] pages of 1000), or,
//! when it does not answer with one, its literal model patterns.

use super::client::{Client, Timeouts};
use super::providers::{self, Provider};
use super::upstream;
use crate::config::ProviderKind;
use bytes::Bytes;
use serde_json::{Value, json};
use std::time::Duration;

/// How long `/v1/models` waits for each page of a provider's own list before
/// using the configured patterns instead.
const MODELS_TIMEOUT: Duration = Duration::from_secs(5);
/// Largest model list page read from a provider.
const MAX_MODELS_BODY: usize = 8 << 20;
/// Pages of a `gemini` provider's model list read at most (1000 models each);
/// the models past them are left out.
pub(crate) const MAX_MODEL_PAGES: usize = 10;

fn model_entry(p: &Provider, id: &str, created: u64, owned_by: Option<&str>) -> Value {
    json!({
        "id": format!("{}/{id}", p.config.name),
        "object": "model",
        "created": created,
        "owned_by": owned_by.unwrap_or(&p.config.name),
    })
}

/// The provider's literal model patterns as list entries.
pub(super) fn configured(p: &Provider) -> Vec<Value> {
    p.config
        .models
        .iter()
        .filter(|m| providers::is_literal(m))
        .map(|m| model_entry(p, m, 0, None))
        .collect()
}

/// The provider's own list; `None` when a page of it does not come.
pub(super) async fn fetch(client: &Client, p: &Provider) -> Option<Vec<Value>> {
    let mut models = Vec::new();
    let mut token: Option<String> = None;
    for _ in 0..MAX_MODEL_PAGES {
        let path = match (p.kind, &token) {
            (ProviderKind::Ollama, _) => "/api/tags".to_string(),
            (ProviderKind::Gemini, None) => "/models?pageSize=1000".to_string(),
            (ProviderKind::Gemini, Some(t)) => {
                format!("/models?pageSize=1000&pageToken={}", crate::percent::encode(t))
            }
            _ => "/models".to_string(),
        };
        let list = fetch_page(client, p, &path).await?;
        models.extend(entries(p, &list)?);
        token = list
            .get("nextPageToken")
            .and_then(Value::as_str)
            .filter(|t| !t.is_empty() && p.kind == ProviderKind::Gemini)
            .map(str::to_owned);
        if token.is_none() {
            break;
        }
    }
    Some(models)
}

async fn fetch_page(client: &Client, p: &Provider, path: &str) -> Option<Value> {
    let timeouts = Timeouts {
        connect: MODELS_TIMEOUT.min(Duration::from_millis(p.config.connect_timeout_ms.max(1))),
        first_byte: MODELS_TIMEOUT,
        idle: MODELS_TIMEOUT,
    };
    let mut req = http::Request::builder()
        .uri(p.base.endpoint(path))
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
    serde_json::from_slice(&body).ok()
}

/// A page's models as list entries: OpenAI's `{"data": [{"id"}]}`, or Ollama's
/// `{"models": [{"name"}]}`, or Gemini's `{"models": [{"name": "models/…",
/// "supportedGenerationMethods"}]}` (only the models that generate content).
fn entries(p: &Provider, list: &Value) -> Option<Vec<Value>> {
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
                    ProviderKind::Gemini => id.strip_prefix("models/").unwrap_or(id),
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
