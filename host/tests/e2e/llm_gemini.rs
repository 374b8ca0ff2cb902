//! A `gemini` provider (`kind = "gemini"`, Google's Gemini API) behind every
//! surface: the proxy (streamed and whole), the UI stream with thinking, the
//! agent loop with a tool round, the key in `x-goog-api-key` (never in the URL
//! or as `Authorization`), errors (400, 429 with `Retry-After`, 503 retried, an
//! `error` event mid-stream), a stream cut before its `finishReason`, a fallback
//! chain from a Gemini target to an Ollama one that sends each the same
//! conversation in its own dialect, and the model list.
//!
//! The scripted answers are Google's own examples from the Gemini API reference
//! ("Generating content": the `GenerateContentResponse` with `usageMetadata` and
//! `modelVersion`; "Text generation": the streamed "Explain how AI works"
//! answer; "Thinking": an answer with `includeThoughts` and its `thought: true`
//! part; "Function calling": the `functionCall` answer; "Troubleshooting" /
//! "API errors": `{"error": {code, message, status}}`; "Models": `models.list`),
//! shortened to what the tests read.

use crate::support::chat::{self, call_args, hub_with, plugins, submit, user};
use crate::support::client;
use crate::support::dialect::{Dialect, Scripted, ollama_hello};
use crate::support::hub::Hub;
use crate::support::llm::{WITHIN, error_text, openai_text, smart_chain, text_of, ui_chunks};
use crate::support::upstream::{Frame, Reply, Upstream};
use serde_json::{Value, json};
use wasmhub::llm::FinishReason;

const KEY_VAR: &str = "WASMHUB_E2E_GEMINI_KEY";
const KEY: &str = "AIza-e2e-gemini-secret";

/// The endpoints of `model` under the base URL `http://addr/v1` (a version, kept).
fn streamed(model: &str) -> String {
    format!("/v1/models/{model}:streamGenerateContent")
}

fn whole(model: &str) -> String {
    format!("/v1/models/{model}:generateContent")
}

fn response(parts: Value, finish: Option<&str>) -> Value {
    let mut r = json!({"candidates": [{"content": {"parts": parts, "role": "model"}, "index": 0}],
        "modelVersion": "gemini-2.5-flash", "responseId": "mAitaLmkHPPlz7IPvtfUqQ4"});
    if let Some(finish) = finish {
        r["candidates"][0]["finishReason"] = json!(finish);
        r["usageMetadata"] = json!({"promptTokenCount": 8, "candidatesTokenCount": 12, "thoughtsTokenCount": 30,
            "totalTokenCount": 50, "promptTokensDetails": [{"modality": "TEXT", "tokenCount": 8}]});
    }
    r
}

fn events(responses: &[Value]) -> Reply {
    Dialect::Gemini.stream(responses)
}

/// "AI learns patterns from data.", after a thought.
fn explain() -> Reply {
    events(&[
        response(
            json!([{"text": "**Defining AI**\n\nThe user wants a short explanation.", "thought": true}]),
            None,
        ),
        response(json!([{"text": "AI learns patterns"}]), None),
        response(json!([{"text": " from data."}]), Some("STOP")),
    ])
}

fn gemini_error(status: u16, code: &str, message: &str) -> Reply {
    Dialect::Gemini.error(status, code, message)
}

const GEMINI: Scripted = Scripted {
    dialect: Dialect::Gemini,
    name: "g",
    models: &["gemini-*"],
    key: Some((KEY_VAR, KEY)),
};

async fn gemini_hub(extra: &str) -> (Upstream, Hub) {
    GEMINI.start(extra).await
}

fn ask(stream: bool) -> Value {
    json!({"model": "g/gemini-2.5-flash", "stream": stream, "temperature": 0.5, "max_tokens": 1024,
           "messages": [{"role": "system", "content": "Be brief."}, {"role": "user", "content": "Explain how AI works"}]})
}

#[tokio::test]
async fn the_proxy_answers_openai_clients_from_gemini() {
    let (up, hub) = gemini_hub("think = true").await;
    up.push_for(&streamed("gemini-2.5-flash"), explain());
    let resp = client::post(hub.addr, "/v1/chat/completions", &ask(true)).await;
    assert_eq!(resp.status, 200);
    let (seen, _) = resp.events(WITHIN).await;
    assert_eq!(openai_text(&seen), "AI learns patterns from data.");
    let usage: Value = serde_json::from_str(&seen[seen.len() - 2]).unwrap();
    assert_eq!(
        (
            &usage["usage"]["prompt_tokens"],
            &usage["usage"]["completion_tokens"]
        ),
        (&json!(8), &json!(42))
    );
    let sent = &up.requests()[0];
    assert_eq!(sent.path, streamed("gemini-2.5-flash"));
    assert_eq!(sent.header("x-goog-api-key"), Some(KEY));
    assert_eq!(
        sent.header("authorization"),
        None,
        "the key goes in x-goog-api-key only"
    );
    assert_eq!(
        sent.json(),
        json!({"systemInstruction": {"parts": [{"text": "Be brief."}]},
               "contents": [{"role": "user", "parts": [{"text": "Explain how AI works"}]}],
               "generationConfig": {"temperature": 0.5, "maxOutputTokens": 1024, "thinkingConfig": {"includeThoughts": true}}})
    );

    up.push_for(
        &whole("gemini-2.5-flash"),
        Reply::json(
            200,
            response(
                json!([{"text": "AI learns patterns from data."}]),
                Some("MAX_TOKENS"),
            ),
        ),
    );
    let answer = client::post(hub.addr, "/v1/chat/completions", &ask(false))
        .await
        .json()
        .await;
    assert_eq!(
        answer["choices"][0]["message"]["content"],
        "AI learns patterns from data."
    );
    assert_eq!(
        (
            &answer["choices"][0]["finish_reason"],
            &answer["usage"]["total_tokens"]
        ),
        (&json!("length"), &json!(50))
    );
    assert_eq!(
        answer["usage"]["completion_tokens_details"]["reasoning_tokens"],
        30
    );
}

#[tokio::test]
async fn gemini_errors_keep_their_status_retry_after_and_message() {
    let (up, hub) = gemini_hub("max_retries = 0").await;
    let path = streamed("gemini-2.5-flash");
    let invalid = "API key not valid. Please pass a valid API key.";
    up.push_for(&path, gemini_error(400, "INVALID_ARGUMENT", invalid));
    let resp = client::post(hub.addr, "/v1/chat/completions", &ask(true)).await;
    assert_eq!(resp.status, 400);
    assert_eq!(resp.json().await["error"]["message"], invalid);

    let exhausted = "Resource has been exhausted (e.g. check quota).";
    up.push_for(
        &whole("gemini-2.5-flash"),
        gemini_error(429, "RESOURCE_EXHAUSTED", exhausted).header("retry-after", "30"),
    );
    let resp = client::post(hub.addr, "/v1/chat/completions", &ask(false)).await;
    assert_eq!(
        (resp.status.as_u16(), resp.header("retry-after")),
        (429, Some("30"))
    );
    assert_eq!(resp.json().await["error"]["message"], exhausted);

    // Mid-stream: the text so far, then the error and no `[DONE]`.
    let overloaded = "The model is overloaded. Please try again later.";
    up.push_for(
        &path,
        events(&[
            response(json!([{"text": "AI learns"}]), None),
            json!({"error": {"code": 503, "message": overloaded, "status": "UNAVAILABLE"}}),
        ]),
    );
    let (seen, _) = client::post(hub.addr, "/v1/chat/completions", &ask(true))
        .await
        .events(WITHIN)
        .await;
    assert!(!seen.contains(&"[DONE]".to_string()), "{seen:?}");
    let last: Value = serde_json::from_str(seen.last().unwrap()).unwrap();
    assert_eq!(last["error"]["message"], overloaded);

    // A stream that ends cleanly but before any `finishReason` is cut, on every surface.
    for cut in [
        events(&[response(json!([{"text": "AI learns"}]), None)]),
        Reply::sse(vec![
            Frame::Data(response(json!([{"text": "AI"}]), None).to_string()),
            Frame::Drop,
        ]),
    ] {
        up.push_for(&path, cut);
        let resp = client::post(hub.addr, "/api/ui/chat/completions", &ask(true)).await;
        let chunks = ui_chunks(&resp.events(WITHIN).await.0);
        assert!(error_text(&chunks).is_some(), "{chunks:?}");
        assert_ne!(chat::finish(&chunks).0, Some(FinishReason::Stop), "{chunks:?}");
    }
    up.push_for(&path, events(&[response(json!([{"text": "AI learns"}]), None)]));
    let (seen, _) = client::post(hub.addr, "/v1/chat/completions", &ask(true))
        .await
        .events(WITHIN)
        .await;
    assert!(!seen.contains(&"[DONE]".to_string()), "{seen:?}");
}

#[tokio::test]
async fn a_503_from_gemini_is_retried_and_the_ui_stream_reads_its_thoughts() {
    let (up, hub) = gemini_hub("max_retries = 1\nretry_base_ms = 1").await;
    let path = streamed("gemini-2.5-flash");
    up.push_for(
        &path,
        gemini_error(503, "UNAVAILABLE", "The model is overloaded.").header("retry-after", "0"),
    );
    up.push_for(&path, explain());
    let resp = client::post(hub.addr, "/api/ui/chat/completions", &ask(true)).await;
    let chunks = ui_chunks(&resp.events(WITHIN).await.0);
    assert_eq!(
        text_of(&chunks),
        (
            "AI learns patterns from data.".to_string(),
            "**Defining AI**\n\nThe user wants a short explanation.".to_string()
        )
    );
    assert_eq!(chat::finish(&chunks).0, Some(FinishReason::Stop));
    assert_eq!(up.requests().len(), 2);
}

#[tokio::test]
async fn an_agent_turn_runs_a_tool_round_through_gemini_keeping_its_signature() {
    let up = Upstream::start().await;
    let hub = hub_with(&up, plugins(&[]), |c| c.providers[0].kind = "gemini".into()).await;
    let args: Value = serde_json::from_str(&call_args(
        json!([{"tool": "calc.eval", "input": {"expression": "6*7"}}]),
    ))
    .unwrap();
    let path = streamed("m1");
    up.push_for(
        &path,
        events(&[response(
            json!([{"functionCall": {"name": "hub_call", "args": args}, "thoughtSignature": "c2lnLWE="}]),
            Some("STOP"),
        )]),
    );
    up.push_for(
        &path,
        events(&[response(json!([{"text": "It is 42."}]), Some("STOP"))]),
    );
    let chunks =
        chat::chunks(chat::post_chat(hub.addr, &submit("gemini-1", vec![user("u1", "6*7?")])).await).await;
    assert_eq!(text_of(&chunks).0, "It is 42.");
    let output = crate::support::llm::tool_output(&chunks).expect("the hub_call's output");
    assert_eq!(output["results"][0]["result"]["decimal"], "42");
    let second = up.requests()[1].json();
    let contents = second["contents"].as_array().unwrap();
    let (call, result) = (&contents[contents.len() - 2], &contents[contents.len() - 1]);
    assert_eq!(call["role"], "model");
    assert_eq!(
        call["parts"][0]["functionCall"],
        json!({"name": "hub_call", "args": args})
    );
    // The agent loop keeps what Gemini wants back with the call: round 1's
    // real signature, not the placeholder.
    assert_eq!(call["parts"][0]["thoughtSignature"], "c2lnLWE=");
    assert_eq!(result["role"], "user");
    let answer = &result["parts"][0]["functionResponse"];
    assert_eq!(answer["name"], "hub_call", "{result}");
    assert!(answer["response"].to_string().contains("42"), "{result}");
    let declared = &second["tools"][0]["functionDeclarations"];
    assert!(
        declared
            .as_array()
            .unwrap()
            .iter()
            .any(|d| d["name"] == "hub_call"),
        "{declared}"
    );
}

#[tokio::test]
async fn a_chain_falls_back_from_gemini_to_ollama_each_in_its_dialect() {
    // SAFETY: no other test reads or writes this variable.
    unsafe { std::env::set_var(KEY_VAR, KEY) };
    let (first, second) = (Upstream::start().await, Upstream::start().await);
    let gemini = format!("kind = \"gemini\"\napi_key_env = \"{KEY_VAR}\"\nmax_retries = 0");
    let (a, b) = (first.base_url(), second.base_url());
    let providers = [
        ("g", a.as_str(), gemini.as_str()),
        ("local", b.as_str(), "kind = \"ollama\"\nmax_retries = 0"),
    ];
    let hub = smart_chain(&providers, &["g/gemini-2.5-flash", "local/llama3.2"]).await;
    first.push_for(
        &streamed("gemini-2.5-flash"),
        gemini_error(503, "UNAVAILABLE", "The model is overloaded."),
    );
    second.push_for("/api/chat", ollama_hello());
    let mut body = ask(true);
    body["model"] = json!("smart");
    body["tools"] = json!([{"type": "function", "function": {"name": "get_weather",
        "parameters": {"type": "object", "properties": {"city": {"type": "string"}}}}}]);
    let resp = client::post(hub.addr, "/v1/chat/completions", &body).await;
    assert_eq!(resp.header("x-wasmhub-target"), Some("local/llama3.2"));
    assert_eq!(openai_text(&resp.events(WITHIN).await.0), "Hello from Ollama.");

    let (a, b) = (first.requests()[0].json(), second.requests()[0].json());
    assert_eq!(
        (&a["systemInstruction"], &b["messages"][0]),
        (
            &json!({"parts": [{"text": "Be brief."}]}),
            &json!({"role": "system", "content": "Be brief."})
        )
    );
    assert_eq!(
        (&a["contents"][0], &b["messages"][1]),
        (
            &json!({"role": "user", "parts": [{"text": "Explain how AI works"}]}),
            &json!({"role": "user", "content": "Explain how AI works"})
        )
    );
    assert_eq!(
        (
            &a["generationConfig"]["temperature"],
            &b["options"]["temperature"]
        ),
        (&json!(0.5), &json!(0.5))
    );
    assert_eq!(
        (
            &a["generationConfig"]["maxOutputTokens"],
            &b["options"]["num_predict"]
        ),
        (&json!(1024), &json!(1024))
    );
    assert_eq!(
        a["tools"],
        json!([{"functionDeclarations": [{"name": "get_weather",
            "parameters": {"type": "object", "properties": {"city": {"type": "string"}}}}]}])
    );
    assert_eq!(b["tools"], body["tools"]);
}

#[tokio::test]
async fn the_model_list_holds_geminis_generating_models_from_every_page() {
    let (up, hub) = gemini_hub("").await;
    up.push_for(
        "/v1/models",
        Reply::json(
            200,
            json!({"models": [
            {"name": "models/gemini-2.5-flash", "version": "001", "displayName": "Gemini 2.5 Flash",
             "inputTokenLimit": 1048576, "outputTokenLimit": 65536,
             "supportedGenerationMethods": ["generateContent", "countTokens", "createCachedContent"]},
            {"name": "models/text-embedding-004", "version": "004", "displayName": "Text Embedding 004",
             "supportedGenerationMethods": ["embedContent"]}],
            "nextPageToken": "Ch5tb2RlbHMv+/="}),
        ),
    );
    up.push_for(
        "/v1/models",
        Reply::json(
            200,
            json!({"models": [{"name": "models/gemini-2.5-pro", "version": "2.5",
                "supportedGenerationMethods": ["generateContent"]}]}),
        ),
    );
    let list = client::send(hub.addr, http::Method::GET, "/v1/models", None, &[])
        .await
        .json()
        .await;
    let ids: Vec<&str> = list["data"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(|m| m["id"].as_str())
        .collect();
    assert_eq!(ids, ["g/gemini-2.5-flash", "g/gemini-2.5-pro"], "both pages");
    let sent = up.requests();
    assert_eq!(sent[0].header("x-goog-api-key"), Some(KEY));
    assert_eq!(
        (sent[0].query.as_deref(), sent[1].query.as_deref()),
        (
            Some("pageSize=1000"),
            Some("pageSize=1000&pageToken=Ch5tb2RlbHMv%2B%2F%3D")
        ),
        "the next page asked for by its token"
    );
}

#[tokio::test]
async fn tool_schemas_reach_gemini_with_their_references_inlined() {
    let (up, hub) = gemini_hub("").await;
    up.push_for(
        &whole("gemini-2.5-flash"),
        Reply::json(200, response(json!([{"text": "Noted."}]), Some("STOP"))),
    );
    // Pydantic's shape for a nested model: the definition under `$defs`.
    let parameters = json!({"type": "object", "properties": {"home": {"$ref": "#/$defs/Address"}},
        "$defs": {"Address": {"type": "object", "properties": {"city": {"type": "string"}}}}});
    let mut body = ask(false);
    body["tools"] =
        json!([{"type": "function", "function": {"name": "save_person", "parameters": parameters}}]);
    let resp = client::post(hub.addr, "/v1/chat/completions", &body).await;
    assert_eq!(resp.status, 200);
    assert_eq!(
        up.requests()[0].json()["tools"][0]["functionDeclarations"][0]["parameters"],
        json!({"type": "object", "properties": {"home": {"type": "object", "properties": {"city": {"type": "string"}}}}})
    );

    body["tools"][0]["function"]["parameters"]["$defs"]["Address"]["properties"]["next"] =
        json!({"$ref": "#/$defs/Address"});
    let resp = client::post(hub.addr, "/v1/chat/completions", &body).await;
    assert_eq!(resp.status, 400);
    let message = resp.json().await["error"]["message"]
        .as_str()
        .unwrap()
        .to_string();
    assert!(
        message.contains("tools[0] (\"save_person\")") && message.contains("refers to itself"),
        "{message}"
    );
    assert_eq!(up.requests().len(), 1, "a request Gemini cannot take is not sent");
}
