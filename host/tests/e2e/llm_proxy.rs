//! The OpenAI proxy and the UI message stream endpoint against a scripted upstream:
//! every recorded provider stream end to end, request rewriting (model, key,
//! headers, unknown fields), retries, faults mid-stream, keepalives, timeouts,
//! cancellation, the model list, and the hub's own errors.

use crate::support::client::{self, ClientResp};
use crate::support::hub::{self, Hub};
use crate::support::upstream::{self, Frame, Reply, Upstream};
use serde_json::{Value, json};
use std::time::{Duration, Instant};
use wasmhub::llm::{FinishReason, UiChunk};

const WITHIN: Duration = Duration::from_secs(20);

async fn setup(extra: &str) -> (Upstream, Hub) {
    let up = Upstream::start().await;
    let hub = hub::start(vec![hub::provider("up", &up.base_url(), &["gpt-*"], extra)]).await;
    (up, hub)
}

fn chat_body(stream: bool) -> Value {
    json!({"model": "up/gpt-test", "messages": [{"role": "user", "content": "hi"}], "stream": stream,
           "x_unknown": {"kept": [1, 2]}, "temperature": 0.5})
}

/// Parses UI chunks as strictly as the AI SDK does and checks the stream's grammar:
/// `start` first, every delta inside its start/end, `finish` last, then `[DONE]`.
fn ui_chunks(events: &[String]) -> Vec<UiChunk> {
    assert_eq!(
        events.last().map(String::as_str),
        Some("[DONE]"),
        "a UI stream ends with [DONE]"
    );
    let chunks: Vec<UiChunk> = events[..events.len() - 1]
        .iter()
        .map(|e| {
            serde_json::from_str(e).unwrap_or_else(|err| panic!("a chunk the client rejects ({err}): {e}"))
        })
        .collect();
    assert!(
        matches!(chunks.first(), Some(UiChunk::Start { .. })),
        "{:?}",
        chunks.first()
    );
    assert!(
        matches!(chunks.last(), Some(UiChunk::Finish { .. })),
        "{:?}",
        chunks.last()
    );
    let mut open = std::collections::HashSet::new();
    let mut tools = std::collections::HashSet::new();
    for c in &chunks {
        match c {
            UiChunk::TextStart { id } | UiChunk::ReasoningStart { id } => {
                assert!(open.insert(id.clone()), "reopened {id}")
            }
            UiChunk::TextDelta { id, .. } | UiChunk::ReasoningDelta { id, .. } => {
                assert!(open.contains(id), "{id} not open")
            }
            UiChunk::TextEnd { id } | UiChunk::ReasoningEnd { id } => {
                assert!(open.remove(id), "{id} not open")
            }
            UiChunk::ToolInputStart { tool_call_id, .. } => assert!(tools.insert(tool_call_id.clone())),
            UiChunk::ToolInputDelta { tool_call_id, .. }
            | UiChunk::ToolInputAvailable { tool_call_id, .. }
            | UiChunk::ToolInputError { tool_call_id, .. } => {
                assert!(tools.contains(tool_call_id), "{tool_call_id} not started")
            }
            _ => {}
        }
    }
    assert!(open.is_empty(), "parts left open: {open:?}");
    chunks
}

fn text_of(chunks: &[UiChunk]) -> (String, String) {
    let (mut text, mut reasoning) = (String::new(), String::new());
    for c in chunks {
        match c {
            UiChunk::TextDelta { delta, .. } => text.push_str(delta),
            UiChunk::ReasoningDelta { delta, .. } => reasoning.push_str(delta),
            _ => {}
        }
    }
    (text, reasoning)
}

fn finish_reason(chunks: &[UiChunk]) -> Option<FinishReason> {
    chunks.iter().find_map(|c| match c {
        UiChunk::Finish { finish_reason, .. } => *finish_reason,
        _ => None,
    })
}

fn error_text(chunks: &[UiChunk]) -> Option<&str> {
    chunks.iter().find_map(|c| match c {
        UiChunk::Error { error_text } => Some(error_text.as_str()),
        _ => None,
    })
}

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
    let (events, _) = client::post(hub.addr, "/api/ui/chat/completions", &chat_body(true))
        .await
        .events(WITHIN)
        .await;
    let chunks = ui_chunks(&events);
    assert_eq!(
        error_text(&chunks),
        Some("provider \"up\" answered 400 Bad Request: context length exceeded")
    );
    assert_eq!(finish_reason(&chunks), Some(FinishReason::Error));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_429_is_retried_after_its_retry_after_and_5xx_until_the_retries_run_out() {
    let (up, hub) = setup("max_retries = 2\nretry_base_ms = 20").await;
    up.push(Reply::error(429, "slow down").header("retry-after", "1"));
    up.push(Reply::sse(upstream::fixture_frames("groq--groq-tool-call")));
    let started = Instant::now();
    let resp = client::post(hub.addr, "/api/ui/chat/completions", &chat_body(true)).await;
    let (events, _) = resp.events(WITHIN).await;
    assert!(
        started.elapsed() >= Duration::from_secs(1),
        "Retry-After: 1 was honoured ({:?})",
        started.elapsed()
    );
    assert_eq!(finish_reason(&ui_chunks(&events)), Some(FinishReason::ToolCalls));
    assert_eq!(up.requests().len(), 2);

    for _ in 0..3 {
        up.push(Reply::error(503, "overloaded"));
    }
    let resp = client::post(hub.addr, "/v1/chat/completions", &chat_body(true)).await;
    assert_eq!(
        resp.status, 503,
        "the last answer is relayed once the retries are spent"
    );
    assert_eq!(resp.json().await["error"]["message"], "overloaded");
    assert_eq!(up.requests().len(), 5, "one try and two retries");
}

#[tokio::test]
async fn connect_failures_are_retried_then_reported_as_bad_gateway() {
    // A port that was just free: nothing listens there.
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    let dead = format!("http://127.0.0.1:{port}/v1");
    let hub = hub::start(vec![hub::provider(
        "up",
        &dead,
        &["*"],
        "max_retries = 2\nretry_base_ms = 100",
    )])
    .await;
    let started = Instant::now();
    let resp = client::post(hub.addr, "/v1/chat/completions", &chat_body(false)).await;
    assert_eq!(resp.status, 502);
    assert!(
        started.elapsed() >= Duration::from_millis(100),
        "two backoffs of >= 50 ms and >= 100 ms happened"
    );
    let message = resp.json().await["error"]["message"]
        .as_str()
        .unwrap()
        .to_string();
    assert!(
        message.contains("cannot connect") && message.contains("after 3 attempts"),
        "{message}"
    );
}

#[tokio::test]
async fn an_error_frame_mid_stream_ends_the_ui_stream_with_error_then_finish_and_is_not_retried() {
    let (up, hub) = setup("max_retries = 3").await;
    up.push(Reply::sse(vec![
        Frame::Data(upstream::text_chunk("Hel")),
        Frame::Data(upstream::text_chunk("lo")),
        Frame::Data(r#"{"error":{"message":"The server had an error processing your request","type":"server_error","param":null,"code":500}}"#.into()),
    ]));
    let (events, _) = client::post(hub.addr, "/api/ui/chat/completions", &chat_body(true))
        .await
        .events(WITHIN)
        .await;
    let chunks = ui_chunks(&events);
    let types: Vec<String> = chunks.iter().map(|c| c.type_name().into_owned()).collect();
    assert_eq!(
        types,
        [
            "start",
            "start-step",
            "text-start",
            "text-delta",
            "text-delta",
            "error",
            "text-end",
            "finish-step",
            "finish"
        ]
    );
    assert_eq!(
        error_text(&chunks),
        Some("The server had an error processing your request")
    );
    assert_eq!(finish_reason(&chunks), Some(FinishReason::Error));
    assert_eq!(up.requests().len(), 1);
}

#[tokio::test]
async fn a_dropped_connection_or_a_malformed_line_mid_stream_is_reported_in_both_protocols() {
    let (up, hub) = setup("max_retries = 3").await;
    let dropped = || {
        Reply::sse(vec![
            Frame::Data(upstream::text_chunk("partial")),
            Frame::Delay(Duration::from_millis(50)),
            Frame::Drop,
        ])
    };

    up.push(dropped());
    let (events, _) = client::post(hub.addr, "/api/ui/chat/completions", &chat_body(true))
        .await
        .events(WITHIN)
        .await;
    let chunks = ui_chunks(&events);
    assert!(
        error_text(&chunks).unwrap().contains("failed mid-response"),
        "{:?}",
        error_text(&chunks)
    );
    assert_eq!(text_of(&chunks).0, "partial");

    up.push(dropped());
    let (events, _) = client::post(hub.addr, "/v1/chat/completions", &chat_body(true))
        .await
        .events(WITHIN)
        .await;
    assert_eq!(events[0], upstream::text_chunk("partial"));
    let last: Value = serde_json::from_str(events.last().unwrap()).unwrap();
    assert_eq!(
        last["error"]["type"], "upstream_error",
        "an OpenAI error frame tells SDK clients: {last}"
    );
    assert_eq!(
        up.requests().len(),
        2,
        "nothing is retried once bytes were streamed"
    );

    up.push(Reply::sse(vec![
        Frame::Data(upstream::text_chunk("ok")),
        Frame::Data("{\"choices\": [{\"delta\": ".into()),
    ]));
    let (events, _) = client::post(hub.addr, "/api/ui/chat/completions", &chat_body(true))
        .await
        .events(WITHIN)
        .await;
    let chunks = ui_chunks(&events);
    assert!(
        error_text(&chunks).unwrap().contains("not valid JSON"),
        "{:?}",
        error_text(&chunks)
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_ten_megabyte_chunk_passes_whole_and_an_event_over_the_cap_is_a_clean_error() {
    let (up, hub) = setup("").await;
    let big: String = "0123456789abcdef".repeat(10 * 1024 * 1024 / 16);
    let chunk = upstream::text_chunk(&big);
    let frames = vec![
        Frame::Data(chunk.clone()),
        Frame::Data(upstream::finish_chunk("stop")),
        Frame::Data("[DONE]".into()),
    ];

    up.push(Reply::sse(frames.clone()));
    let (events, _) = client::post(hub.addr, "/v1/chat/completions", &chat_body(true))
        .await
        .events(WITHIN)
        .await;
    assert_eq!(events.len(), 3);
    assert!(events[0] == chunk, "the 10 MB event arrives intact");

    up.push(Reply::sse(frames.clone()));
    let (events, _) = client::post(hub.addr, "/api/ui/chat/completions", &chat_body(true))
        .await
        .events(WITHIN)
        .await;
    let chunks = ui_chunks(&events);
    assert!(text_of(&chunks).0 == big);
    assert_eq!(finish_reason(&chunks), Some(FinishReason::Stop));

    let capped_up = Upstream::start().await;
    let capped = hub::start(vec![hub::provider(
        "up",
        &capped_up.base_url(),
        &["*"],
        "max_event_kb = 1024",
    )])
    .await;
    capped_up.push(Reply::sse(frames));
    let (events, _) = client::post(capped.addr, "/api/ui/chat/completions", &chat_body(true))
        .await
        .events(WITHIN)
        .await;
    let chunks = ui_chunks(&events);
    assert!(
        error_text(&chunks)
            .unwrap()
            .contains("larger than the 1048576-byte limit"),
        "{:?}",
        error_text(&chunks)
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_client_that_goes_away_cancels_the_upstream_request_at_once() {
    let (up, hub) = setup("").await;
    for path in ["/v1/chat/completions", "/api/ui/chat/completions"] {
        let before = up.cancelled();
        up.push(Reply::sse(vec![
            Frame::Data(upstream::text_chunk("first")),
            Frame::Hang,
        ]));
        let mut resp = client::post(hub.addr, path, &chat_body(true)).await;
        // Wait until the stream is really flowing, then hang up.
        loop {
            let data = resp.next_event().await.expect("an event before the hang");
            if data.contains("first") {
                break;
            }
        }
        drop(resp);
        assert!(
            up.wait_cancelled(before + 1, Duration::from_secs(2)).await,
            "{path}: the upstream saw the cancel"
        );
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn idle_streams_get_keepalives_and_a_silent_upstream_hits_the_idle_timeout() {
    let (up, hub) = setup("keepalive_ms = 100\nidle_timeout_ms = 2000").await;
    up.push(Reply::sse(vec![
        Frame::Raw(": PROCESSING\r\n\r\n".into()),
        Frame::Data(upstream::text_chunk("a")),
        Frame::Delay(Duration::from_millis(450)),
        Frame::Data(upstream::text_chunk("b")),
        Frame::Data(upstream::finish_chunk("stop")),
    ]));
    let (events, raw) = client::post(hub.addr, "/api/ui/chat/completions", &chat_body(true))
        .await
        .events(WITHIN)
        .await;
    let chunks = ui_chunks(&events);
    assert_eq!(
        (text_of(&chunks).0.as_str(), finish_reason(&chunks)),
        ("ab", Some(FinishReason::Stop)),
        "no [DONE] upstream is fine"
    );
    let raw = String::from_utf8(raw).unwrap();
    assert!(raw.matches(": keepalive\n\n").count() >= 2, "{raw}");
    assert!(!raw.contains("PROCESSING"), "upstream comments are not relayed");

    let (up, hub) = setup("keepalive_ms = 100\nidle_timeout_ms = 300").await;
    up.push(Reply::sse(vec![
        Frame::Data(upstream::text_chunk("a")),
        Frame::Hang,
    ]));
    let started = Instant::now();
    let (events, _) = client::post(hub.addr, "/api/ui/chat/completions", &chat_body(true))
        .await
        .events(WITHIN)
        .await;
    let chunks = ui_chunks(&events);
    assert!(
        error_text(&chunks).unwrap().contains("sent nothing for 300 ms"),
        "{:?}",
        error_text(&chunks)
    );
    assert!(started.elapsed() < Duration::from_secs(5));
    assert!(
        up.wait_cancelled(1, Duration::from_secs(2)).await,
        "the timed-out upstream request is closed"
    );
}

#[tokio::test]
async fn a_slow_first_byte_times_out_as_gateway_timeout() {
    let (up, hub) = setup("first_byte_timeout_ms = 200\nmax_retries = 0").await;
    up.push(
        Reply::sse(upstream::fixture_frames("mistral--mistral-tool-call"))
            .delayed(Duration::from_millis(1500)),
    );
    let resp = client::post(hub.addr, "/v1/chat/completions", &chat_body(true)).await;
    assert_eq!(resp.status, 504);
    assert!(
        resp.json().await["error"]["message"]
            .as_str()
            .unwrap()
            .contains("no response within 200 ms")
    );
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
