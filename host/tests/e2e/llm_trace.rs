//! `wasmhub serve --trace-llm`: the real binary writes every upstream exchange of
//! an `anthropic` and a `gemini` provider to its trace file, with the request,
//! the response head and every SSE frame, and without the API key anywhere in it
//! (Gemini's goes as `x-goog-api-key`, never in the URL).

use crate::support::binary::{Served, serving};
use crate::support::client;
use crate::support::llm::{WITHIN, openai_text};
use crate::support::runtime::Scratch;
use crate::support::upstream::{Frame, Reply, Upstream};
use serde_json::json;
use std::process::{Command, Stdio};

const SECRET: &str = "sk-ant-trace-e2e-0123456789";

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_trace_holds_every_frame_and_no_secret() {
    let up = Upstream::start().await;
    up.push_for(
        "/v1/messages",
        Reply::typed_events(&[
            json!({"type": "message_start", "message": {"id": "msg_1", "type": "message", "role": "assistant", "content": [],
                "model": "claude-opus-4-6", "usage": {"input_tokens": 25, "output_tokens": 1}}}),
            json!({"type": "content_block_start", "index": 0, "content_block": {"type": "text", "text": ""}}),
            json!({"type": "content_block_delta", "index": 0, "delta": {"type": "text_delta", "text": "Hello!"}}),
            json!({"type": "content_block_stop", "index": 0}),
            json!({"type": "message_delta", "delta": {"stop_reason": "end_turn", "stop_sequence": null}, "usage": {"output_tokens": 15}}),
            json!({"type": "message_stop"}),
        ]),
    );
    // Google's streamed example answer ("Text generation"), shortened.
    let gemini = json!({"candidates": [{"content": {"parts": [{"text": "Hi from Gemini."}], "role": "model"},
        "finishReason": "STOP", "index": 0}], "modelVersion": "gemini-2.5-flash",
        "usageMetadata": {"promptTokenCount": 4, "candidatesTokenCount": 4, "totalTokenCount": 8}});
    up.push_for(
        "/v1/models/gemini-2.5-flash:streamGenerateContent",
        Reply::sse(vec![Frame::Data(gemini.to_string())]),
    );
    let dir = Scratch::new("trace-llm");
    let config = dir.path("wasmhub.toml");
    let toml = format!(
        "[[providers]]\nname = \"claude\"\nkind = \"anthropic\"\nbase_url = {:?}\napi_key_env = \"WASMHUB_E2E_TRACE_KEY\"\nmodels = [\"claude-*\"]\n\
         [[providers]]\nname = \"g\"\nkind = \"gemini\"\nbase_url = {:?}\napi_key_env = \"WASMHUB_E2E_TRACE_KEY\"\nmodels = [\"gemini-*\"]\n",
        up.base_url(),
        up.base_url()
    );
    std::fs::write(&config, toml).unwrap();
    std::fs::create_dir_all(dir.path("plugins")).unwrap();
    let mut child = Command::new(env!("CARGO_BIN_EXE_wasmhub"))
        .env("WASMHUB_LOG", "info")
        .env("WASMHUB_E2E_TRACE_KEY", SECRET)
        .args(["serve", "--listen", "127.0.0.1:0", "--trace-llm", "--config"])
        .arg(&config)
        .arg("--plugins")
        .arg(dir.path("plugins"))
        .arg("--data")
        .arg(dir.path("data"))
        .stderr(Stdio::piped())
        .stdout(Stdio::null())
        .spawn()
        .expect("start wasmhub serve");
    let (addr, stderr) = serving(&mut child, crate::support::wait::PATIENCE);
    let hub = Served { child, addr, stderr };
    let body = json!({"model": "claude-opus-4-6", "stream": true, "max_tokens": 64,
                      "messages": [{"role": "user", "content": "Hello, Claude"}]});
    let (events, _) = client::post(hub.addr, "/v1/chat/completions", &body)
        .await
        .events(WITHIN)
        .await;
    assert_eq!(openai_text(&events), "Hello!");
    assert_eq!(
        up.requests()[0].header("x-api-key"),
        Some(SECRET),
        "the upstream got the key"
    );
    let body = json!({"model": "gemini-2.5-flash", "stream": true,
                      "messages": [{"role": "user", "content": "Hello, Gemini"}]});
    let (events, _) = client::post(hub.addr, "/v1/chat/completions", &body)
        .await
        .events(WITHIN)
        .await;
    assert_eq!(openai_text(&events), "Hi from Gemini.");
    assert_eq!(up.requests()[1].header("x-goog-api-key"), Some(SECRET));
    // An exchange is written once the body was read to its end.
    let path = dir.path("data").join("logs").join("llm-trace.log");
    let trace = crate::support::wait::until("the trace's end line", || {
        let path = path.clone();
        async move {
            std::fs::read_to_string(&path)
                .ok()
                .filter(|t| t.contains("#1 end") && t.contains("#2 end"))
        }
    })
    .await;
    drop(hub);
    assert!(!trace.contains(SECRET), "the key is in the trace:\n{trace}");
    assert!(trace.contains("#1 > x-api-key: [redacted]"), "{trace}");
    let url = format!("#1 -> POST {}/messages (provider \"claude\")", up.base_url());
    assert!(trace.contains(&url), "{trace}");
    let request = trace
        .lines()
        .find(|l| l.contains("#1 >| {"))
        .expect("the request body");
    assert!(request.contains("\"model\":\"claude-opus-4-6\""), "{request}");
    assert!(trace.contains("#1 <- 200 OK"), "{trace}");
    assert!(trace.contains("#1 <| event: message_start"), "{trace}");
    assert!(
        trace.contains("#1 <| data: {\"type\":\"message_stop\"}"),
        "{trace}"
    );
    assert!(trace.contains("#2 > x-goog-api-key: [redacted]"), "{trace}");
    let url = format!(
        "#2 -> POST {}/models/gemini-2.5-flash:streamGenerateContent?alt=sse (provider \"g\")",
        up.base_url()
    );
    assert!(trace.contains(&url), "{trace}");
    assert!(trace.contains("#2 <| data: {\"candidates\""), "{trace}");
}
