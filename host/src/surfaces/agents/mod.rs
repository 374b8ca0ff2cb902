//! Agents on the HTTP surfaces: the agent profiles (`agent::profiles`) listed
//! beside the providers' models on `GET /v1/models`, a request's `model` that
//! names an agent answered by the agent loop (Chat Completions here, in
//! [`completion`]; Messages in `surfaces::anthropic`), and the REST route
//! `POST /v1/agents/{name}` ([`rest`]). Every one of them runs a one-off turn
//! ([`turn`]) in a session deleted when it ends; a Chat Completions or Messages
//! request asking for JSON runs as one task with a checked answer
//! ([`structured`]). `GET /api/agents` ([`list`])
//! shows the profiles (the console's Agents panel).

pub(crate) mod completion;
mod openai_request;
pub(crate) mod rest;
pub(crate) mod structured;
pub(crate) mod turn;

use super::App;
use crate::agent::Sampling;
use serde_json::{Value, json};

/// The `owned_by` of an agent in `GET /v1/models`.
pub(crate) const OWNER: &str = "wasmhub-agent";

/// The named agent `model` is, if it is one (an agent's name wins over a
/// provider's model of the same name; agent names have no `/`).
pub(crate) fn agent_named(app: &App, model: &str) -> Option<String> {
    app.agent.profiles().get(model).map(|p| p.name.clone())
}

/// The OpenAI models list: every named agent, then the providers' models.
pub(crate) async fn model_list(app: &App) -> Value {
    let mut list = app.llm.list_models().await;
    let agents: Vec<Value> = app
        .agent
        .profiles()
        .named()
        .map(|p| {
            json!({
                "id": p.name, "object": "model", "created": 0, "owned_by": OWNER,
                "description": p.description,
            })
        })
        .collect();
    if let Some(Value::Array(models)) = list.get_mut("data") {
        models.splice(0..0, agents);
    }
    list
}

/// A sampling value of a request body of the wrong type (400).
#[derive(Debug)]
pub(crate) struct BadSampling {
    /// The field.
    pub field: &'static str,
    /// What it must be.
    pub expected: &'static str,
}

impl std::fmt::Display for BadSampling {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}: must be {}", self.field, self.expected)
    }
}

impl std::error::Error for BadSampling {}

/// The sampling parameters a chat request body sets: `temperature`, `top_p` and
/// the first of `max_keys` present (`max_tokens`, `max_completion_tokens`).
pub(crate) fn sampling_of(body: &Value, max_keys: &[&'static str]) -> Result<Sampling, BadSampling> {
    let number = |key: &'static str| match body.get(key) {
        None | Some(Value::Null) => Ok(None),
        Some(v) => v.as_f64().map(Some).ok_or(BadSampling {
            field: key,
            expected: "a number",
        }),
    };
    let mut max_output_tokens = None;
    for key in max_keys {
        match body.get(*key) {
            None | Some(Value::Null) => continue,
            Some(v) => {
                max_output_tokens = Some(v.as_u64().ok_or(BadSampling {
                    field: key,
                    expected: "an integer of at least 1",
                })?);
                break;
            }
        }
    }
    Ok(Sampling {
        temperature: number("temperature")?,
        top_p: number("top_p")?,
        max_output_tokens,
    })
}

/// `GET /api/agents`: every agent profile (the default one first) with what it
/// runs as; an operator also sees the agents folder's files that were left out,
/// and why.
pub(crate) fn list(app: &App, caller: &crate::hub::Caller) -> super::respond::Resp {
    let set = app.agent.profiles();
    let agents: Vec<Value> = std::iter::once(set.default_profile())
        .chain(set.named())
        .map(|p| {
            let (source, file) = match &p.source {
                crate::agent::ProfileSource::AgentSection => ("agent_section", None),
                crate::agent::ProfileSource::Config => ("config", None),
                crate::agent::ProfileSource::File(path) => ("file", Some(path.display().to_string())),
            };
            json!({
                "name": p.name, "description": p.description, "default": !p.is_named(),
                "source": source, "file": file, "models": p.models, "allow": p.allow,
                "maxSteps": p.max_steps, "temperature": p.sampling.temperature, "topP": p.sampling.top_p,
                "maxOutputTokens": p.sampling.max_output_tokens, "outputSchema": p.output_schema,
            })
        })
        .collect();
    let mut body = json!({ "agents": agents });
    if caller.is_operator() {
        let rejected: Vec<Value> = set
            .rejected()
            .iter()
            .map(|e| json!({ "file": e.file.display().to_string(), "problem": e.problem }))
            .collect();
        body["rejected"] = Value::Array(rejected);
    }
    super::respond::json(http::StatusCode::OK, &body)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sampling_comes_from_the_request_fields() {
        let s = sampling_of(
            &json!({"temperature": 0.5, "max_completion_tokens": 9, "max_tokens": 7}),
            &["max_tokens", "max_completion_tokens"],
        )
        .unwrap();
        assert_eq!(
            (s.temperature, s.top_p, s.max_output_tokens),
            (Some(0.5), None, Some(7))
        );
        let e = sampling_of(&json!({"top_p": "high"}), &[]).unwrap_err();
        assert_eq!(e.to_string(), "top_p: must be a number");
        let e = sampling_of(&json!({"max_tokens": -1}), &["max_tokens"]).unwrap_err();
        assert_eq!(e.to_string(), "max_tokens: must be an integer of at least 1");
    }
}
