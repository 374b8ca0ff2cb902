//! The OpenAI proxy and the UI message stream endpoint against a scripted upstream:
//! every recorded provider stream end to end, request rewriting (model, key,
//! headers, unknown fields), non-streamed answers, the model list, the hub's own
//! errors, and answers that never reach their end (cut, torn, broken: an error
//! frame without `[DONE]`, or a 502). Failures on the way (retries, faults mid-stream, timeouts, cancellation)
//! are in `llm_failures`.

use crate::support::client::{self, ClientResp};
use crate::support::hub;
use crate::support::llm::*;
use crate::support::upstream::{self, Reply, Upstream};
use serde_json::{Value, json};
use wasmhub::llm::{FinishReason, UiChunk};

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_proxy_relays_every_recorded_stream_byte_for_byte_and_rewrites_only_what_it_must() {
    // SAFETY: no other test reads or writes this variable.
    unsafe { std::env::set_var("WASMHUB_E2E_PROXY_KEY", "sk-upstream-secret") };
    let up = Upstream::start().await;
    let extra = "api_key_env = \"WASMHUB_E2E_PROXY_KEY\"\nheaders = { \"x-team\" = \"blue\" }";
    let hub = hub::start(vec![hub::provider("up", &up.base_url(), &["gpt-*"], extra)]).await;
    for name in upstream::fixture_names() {
        up.push(Reply::sse(upstream::fixture_frames(&name)));
        let body = serde_json::to_vec(&chat_body(true)).unwrap().into();
        let headers = [
            ("authorization", "Bearer client-token"),
            ("openai-organization", "org-1"),
            ("cookie", "s=1"),
        ];
        let resp = client::send(
            hub.addr,
            http::Method::POST,
            "/v1/chat/completions",
            Some(body),
            &headers,
        )
        .await;
        assert_eq!(resp.status, 200, "{name}");
        assert_eq!(resp.header("content-type"), Some("text/event-stream"));
        let (events, _) = resp.events(WITHIN).await;
        let mut want = upstream::fixture_lines(&name);
        want.push("[DONE]".into());
        assert_eq!(events, want, "{name}: the data of every event passes unchanged");
    }
    let requests = up.requests();
    assert_eq!(requests.len(), upstream::fixture_names().len());
    let r = &requests[0];
    assert_eq!(
        (r.method.as_str(), r.path.as_str()),
        ("POST", "/v1/chat/completions")
    );
    assert_eq!(
        r.header("authorization"),
        Some("Bearer sk-upstream-secret"),
        "the provider key replaces the client's"
    );
    assert_eq!(r.header("x-team"), Some("blue"));
    assert_eq!(r.header("openai-organization"), Some("org-1"));
    assert_eq!(r.header("cookie"), None);
    let sent = r.json();
    assert_eq!(sent["model"], "gpt-test", "the provider prefix is removed");
    assert_eq!(sent["x_unknown"], json!({"kept": [1, 2]}));
    assert_eq!(sent["temperature"], 0.5);
    assert!(sent.get("stream_options").is_none(), "the proxy adds nothing");
    // One kept-alive upstream connection served every request in turn.
    assert_eq!(up.connections(), 1);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_ui_endpoint_turns_every_recorded_stream_into_a_valid_ui_message_stream() {
    let (up, hub) = setup("").await;
    for name in upstream::fixture_names() {
        up.push(Reply::sse(upstream::fixture_frames(&name)));
        let resp = client::post(hub.addr, "/api/ui/chat/completions", &chat_body(false)).await;
        assert_eq!(resp.status, 200);
        for (h, v) in [
            ("content-type", "text/event-stream"),
            ("cache-control", "no-cache"),
            ("connection", "keep-alive"),
            ("x-vercel-ai-ui-message-stream", "v1"),
            ("x-accel-buffering", "no"),
        ] {
            assert_eq!(resp.header(h), Some(v), "{name}: header {h}");
        }
        let (events, _) = resp.events(WITHIN).await;
        let chunks = ui_chunks(&events);
        // An independent reading of the recording.
        let (mut text, mut reasoning) = (String::new(), String::new());
        let mut tool_args = Vec::new();
        for line in upstream::fixture_lines(&name) {
            let v: Value = serde_json::from_str(&line).unwrap();
            for c in v["choices"].as_array().unwrap() {
                text.push_str(c["delta"]["content"].as_str().unwrap_or(""));
                reasoning.push_str(
                    c["delta"]["reasoning_content"]
                        .as_str()
                        .or(c["delta"]["reasoning"].as_str())
                        .unwrap_or(""),
                );
                for t in c["delta"]["tool_calls"].as_array().into_iter().flatten() {
                    tool_args.push(t["function"]["arguments"].as_str().unwrap_or("").to_string());
                }
            }
        }
        assert_eq!(text_of(&chunks), (text, reasoning), "{name}");
        let inputs: Vec<&Value> = chunks
            .iter()
            .filter_map(|c| match c {
                UiChunk::ToolInputAvailable { input, .. } => Some(input),
                _ => None,
            })
            .collect();
        if tool_args.is_empty() {
            assert!(inputs.is_empty());
        } else {
            let args = tool_args.concat();
            assert_eq!(
                inputs,
                vec![&serde_json::from_str::<Value>(&args).unwrap()],
                "{name}"
            );
            assert_eq!(finish_reason(&chunks), Some(FinishReason::ToolCalls), "{name}");
        }
        let Some(UiChunk::Finish {
            message_metadata: Some(meta),
            ..
        }) = chunks.last()
        else {
            panic!("{name}: no metadata")
        };
        assert_eq!(meta["provider"], "up");
        assert!(
            meta["usage"]["inputTokens"].as_u64().unwrap() > 0,
            "{name}: usage reaches the client"
        );
        assert!(meta["model"].is_string());
    }
    let sent = up.requests()[0].json();
    assert_eq!(
        (
            sent["stream"].clone(),
            sent["stream_options"]["include_usage"].clone()
        ),
        (json!(true), json!(true))
    );
    assert_eq!(sent["x_unknown"], json!({"kept": [1, 2]}));
}

#[tokio::test]
async fn non_streamed_answers_and_upstream_errors_are_relayed_with_status_and_body() {
    let (up, hub) = setup("").await;
    let exact = br#"{"id":"chatcmpl-1","object":"chat.completion","choices":[{"index":0,"message":{"role":"assistant","content":"caf\u00e9 \u2713"},"finish_reason":"stop"}]}"#;
    up.push(Reply::bytes(200, "application/json", &exact[..]));
    let resp = client::post(hub.addr, "/v1/chat/completions", &chat_body(false)).await;
    assert_eq!(resp.status, 200);
    assert_eq!(
        &resp.bytes().await[..],
        &exact[..],
        "the body is relayed byte for byte"
    );

    up.push(Reply::error(401, "Incorrect API key provided").header("x-request-id", "req-9"));
    let resp = client::post(hub.addr, "/v1/chat/completions", &chat_body(true)).await;
    assert_eq!(resp.status, 401);
    assert_eq!(resp.header("x-request-id"), Some("req-9"));
    assert_eq!(
        resp.json().await["error"]["message"],
        "Incorrect API key provided"
    );
    assert_eq!(up.requests().len(), 2, "a 401 is not retried");

    // On the UI endpoint the provider's message arrives as an error chunk.
    up.push(Reply::error(400, "context length exceeded"));
    let events = streamed(&hub, "/api/ui/chat/completions").await;
    let chunks = ui_chunks(&events);
    assert_eq!(
        error_text(&chunks),
        Some("provider \"up\" answered 400 Bad Request: context length exceeded")
    );
    assert_eq!(finish_reason(&chunks), Some(FinishReason::Error));
}

#[tokio::test]
async fn the_model_list_is_the_union_of_providers_with_configured_fallbacks() {
    let up = Upstream::start().await;
    up.set_default(
        upstream::MODELS,
        Reply::json(
            200,
            json!({"object": "list", "data": [
            {"id": "gpt-4o", "object": "model", "created": 1715367049, "owned_by": "system"},
            {"id": "o3", "object": "model", "created": 1, "owned_by": "openai"}]}),
        ),
    );
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    let hub = hub::start(vec![
        hub::provider("main", &up.base_url(), &["gpt-*"], ""),
        hub::provider(
            "local",
            &format!("http://127.0.0.1:{port}/v1"),
            &["llama3.2", "qwen-*"],
            "",
        ),
    ])
    .await;
    let resp = client::send(hub.addr, http::Method::GET, "/v1/models", None, &[]).await;
    assert_eq!(resp.status, 200);
    let list = resp.json().await;
    let ids: Vec<&str> = list["data"]
        .as_array()
        .unwrap()
        .iter()
        .map(|m| m["id"].as_str().unwrap())
        .collect();
    assert_eq!(ids, ["main/gpt-4o", "main/o3", "local/llama3.2"]);
    assert_eq!(
        list["data"][0],
        json!({"id": "main/gpt-4o", "object": "model", "created": 1715367049, "owned_by": "system"})
    );
    assert_eq!(list["data"][2]["owned_by"], "local");
}

#[tokio::test]
async fn hub_side_problems_are_json_errors_with_a_status_and_a_way_out() {
    let (up, hub) = setup("").await;
    let cases = [
        (json!({"model": "claude-x", "messages": []}), 404, "\"up\""),
        (json!({"messages": []}), 400, "\"model\" is required"),
        (json!({"model": "gpt-1"}), 400, "\"messages\" is required"),
    ];
    for path in ["/v1/chat/completions", "/api/ui/chat/completions"] {
        for (body, status, needle) in &cases {
            let resp = client::post(hub.addr, path, body).await;
            assert_eq!(resp.status, *status, "{path} {body}");
            let err = resp.json().await;
            assert!(
                err["error"]["message"].as_str().unwrap().contains(needle),
                "{err}"
            );
        }
        let resp = client::send(hub.addr, http::Method::POST, path, Some("{not json".into()), &[]).await;
        assert_eq!(resp.status, 400);
        let resp = client::send(hub.addr, http::Method::GET, path, None, &[]).await;
        assert_eq!(resp.status, 405);
    }
    assert!(up.requests().is_empty(), "nothing reached the upstream");

    let none = hub::start(vec![]).await;
    for (method, path) in [
        (http::Method::POST, "/v1/chat/completions"),
        (http::Method::GET, "/v1/models"),
    ] {
        let body =
            (method == http::Method::POST).then(|| serde_json::to_vec(&chat_body(false)).unwrap().into());
        let resp: ClientResp = client::send(none.addr, method, path, body, &[]).await;
        assert_eq!(resp.status, 503);
        assert!(
            resp.json().await["error"]["message"]
                .as_str()
                .unwrap()
                .contains("OPENAI_API_KEY")
        );
    }

    let keyless = hub::start(vec![hub::provider(
        "k",
        &up.base_url(),
        &["*"],
        "api_key_env = \"WASMHUB_E2E_UNSET_KEY\"",
    )])
    .await;
    let resp = client::post(keyless.addr, "/api/ui/chat/completions", &chat_body(true)).await;
    assert_eq!(resp.status, 503);
    assert!(
        resp.json().await["error"]["message"]
            .as_str()
            .unwrap()
            .contains("WASMHUB_E2E_UNSET_KEY")
    );
}

/// A local server that sends the whole text so far in every delta.
fn cumulative_stream() -> Vec<upstream::Frame> {
    let mut frames: Vec<upstream::Frame> = ["", "The", "The answer", "The answer is", "The answer is 4."]
        .into_iter()
        .map(|so_far| upstream::Frame::Data(upstream::text_chunk(so_far)))
        .collect();
    frames.push(upstream::Frame::Data(upstream::finish_chunk("stop")));
    frames.push(upstream::Frame::Data("[DONE]".into()));
    frames
}

#[tokio::test]
async fn a_cumulative_provider_stream_reaches_the_ui_client_as_new_text_only() {
    for setting in ["cumulative", "auto"] {
        let (up, hub) = setup(&format!("stream_deltas = {setting:?}")).await;
        up.push(Reply::sse(cumulative_stream()));
        let chunks = ui_chunks(&streamed(&hub, "/api/ui/chat/completions").await);
        let deltas: Vec<&str> = chunks
            .iter()
            .filter_map(|c| match c {
                UiChunk::TextDelta { delta, .. } => Some(delta.as_str()),
                _ => None,
            })
            .collect();
        assert_eq!(deltas, ["The", " answer", " is", " 4."], "{setting}");
        assert_eq!(finish_reason(&chunks), Some(FinishReason::Stop));
    }
    // Read as incremental (the default), the same stream repeats itself.
    let (up, hub) = setup("").await;
    up.push(Reply::sse(cumulative_stream()));
    let chunks = ui_chunks(&streamed(&hub, "/api/ui/chat/completions").await);
    assert_eq!(text_of(&chunks).0, "TheThe answerThe answer isThe answer is 4.");
}

/// The relayed events of a streamed request whose upstream plays `frames`, each
/// parsed as JSON, after checking the stream closed without `[DONE]`.
async fn relayed(up: &Upstream, hub: &hub::Hub, frames: Vec<upstream::Frame>) -> Vec<Value> {
    up.push(Reply::sse(frames));
    let events = streamed(hub, "/v1/chat/completions").await;
    assert!(
        !events.iter().any(|e| e == "[DONE]"),
        "a stream that did not reach its end never says [DONE]: {events:?}"
    );
    events
        .iter()
        .map(|e| {
            serde_json::from_str(e).unwrap_or_else(|err| panic!("every relayed event is JSON ({err}): {e}"))
        })
        .collect()
}

/// The one OpenAI error frame that ends a relayed stream: its `code`.
fn error_frame_code(events: &[Value]) -> &str {
    let last = events.last().expect("an event");
    assert_eq!(last["error"]["type"], "upstream_error", "{last}");
    assert!(
        last["error"]["message"]
            .as_str()
            .unwrap()
            .starts_with("provider \"up\": "),
        "{last}"
    );
    let frames = events.iter().filter(|e| e.get("error").is_some()).count();
    assert_eq!(frames, 1, "exactly one error frame: {events:?}");
    last["error"]["code"].as_str().expect("a code")
}

#[tokio::test]
async fn a_cut_torn_or_broken_stream_ends_with_an_error_frame_and_never_passes_as_finished() {
    use upstream::Frame;
    let (up, hub) = setup("max_retries = 0").await;
    let (hel, lo) = (upstream::text_chunk("Hel"), upstream::text_chunk("lo"));

    // The body simply ends: no finish reason, no [DONE].
    let events = relayed(&up, &hub, vec![Frame::Data(hel.clone()), Frame::Data(lo.clone())]).await;
    assert_eq!(events.len(), 3, "{events:?}");
    assert_eq!(events[0], serde_json::from_str::<Value>(&hel).unwrap());
    assert_eq!(events[1], serde_json::from_str::<Value>(&lo).unwrap());
    assert_eq!(error_frame_code(&events), "upstream_incomplete");
    assert!(
        events[2]["error"]["message"]
            .as_str()
            .unwrap()
            .contains("ended before the response was complete")
    );

    // The last event is torn mid-JSON: not relayed, reported instead.
    let torn = Frame::Raw(bytes::Bytes::from_static(
        b"data: {\"choices\":[{\"index\":0,\"delta\":{\"content\":\"wor",
    ));
    let events = relayed(&up, &hub, vec![Frame::Data(hel.clone()), torn]).await;
    assert_eq!(events.len(), 2, "{events:?}");
    assert_eq!(error_frame_code(&events), "upstream_malformed");

    // The connection breaks mid-body.
    let broken = vec![Frame::Data(hel.clone()), Frame::Drop];
    let events = relayed(&up, &hub, broken).await;
    // (Whether `Hel` got out before the drop is up to the upstream's socket.)
    let hel_json: Value = serde_json::from_str(&hel).unwrap();
    assert!(
        events[..events.len() - 1].iter().all(|e| *e == hel_json),
        "{events:?}"
    );
    assert_eq!(error_frame_code(&events), "upstream_broken");

    // The same rule on the UI endpoint: the cut stream is an `error` chunk.
    up.push(Reply::sse(vec![
        Frame::Data(hel.clone()),
        Frame::Data(lo.clone()),
    ]));
    let chunks = ui_chunks(&streamed(&hub, "/api/ui/chat/completions").await);
    assert_eq!(
        error_text(&chunks),
        Some("the upstream stream ended before the response was complete")
    );
    assert_eq!(finish_reason(&chunks), Some(FinishReason::Error));

    // A finish reason is the end even without [DONE] (a provider deviation): relayed
    // as it came, no error frame.
    let finished = vec![
        Frame::Data(hel.clone()),
        Frame::Data(upstream::finish_chunk("stop")),
    ];
    up.push(Reply::sse(finished));
    let events = streamed(&hub, "/v1/chat/completions").await;
    assert_eq!(events, [hel, upstream::finish_chunk("stop")]);
}

#[tokio::test]
async fn a_non_streamed_answer_that_is_cut_is_a_bad_gateway() {
    use upstream::{Frame, ReplyBody};
    let (up, hub) = setup("max_retries = 0").await;
    let partial = bytes::Bytes::from_static(
        br#"{"id":"chatcmpl-1","object":"chat.completion","choices":[{"index":0,"message":{"role":"assis"#,
    );
    let json_reply = |frames| Reply {
        body: ReplyBody::Sse(frames),
        ..Reply::bytes(200, "application/json", "")
    };

    // The connection breaks mid-body.
    up.push(json_reply(vec![Frame::Raw(partial.clone()), Frame::Drop]));
    let resp = client::post(hub.addr, "/v1/chat/completions", &chat_body(false)).await;
    assert_eq!(resp.status, 502);
    let body = resp.json().await;
    assert_eq!(body["error"]["code"], "upstream_broken", "{body}");

    // The body ends cleanly, but its JSON ends early.
    up.push(json_reply(vec![Frame::Raw(partial)]));
    let resp = client::post(hub.addr, "/v1/chat/completions", &chat_body(false)).await;
    assert_eq!(resp.status, 502);
    let body = resp.json().await;
    assert_eq!(body["error"]["code"], "upstream_incomplete", "{body}");
    assert!(
        body["error"]["message"]
            .as_str()
            .unwrap()
            .starts_with("provider \"up\": "),
        "{body}"
    );
}
