//! An `openrouter` provider: Chat Completions as the client sent it (relayed byte
//! for byte), the key as a bearer token, and OpenRouter's attribution headers by
//! default, which the provider's `headers` override or add to.

use crate::support::client;
use crate::support::hub;
use crate::support::llm::{WITHIN, chat_body};
use crate::support::upstream::{self, CHAT, Reply, Upstream};

#[tokio::test]
async fn openrouter_gets_chat_completions_with_its_attribution_headers() {
    // SAFETY: no other test reads or writes this variable.
    unsafe { std::env::set_var("WASMHUB_E2E_OPENROUTER_KEY", "sk-or-e2e") };
    let up = Upstream::start().await;
    let plain = "kind = \"openrouter\"\napi_key_env = \"WASMHUB_E2E_OPENROUTER_KEY\"";
    let named = format!(
        "{plain}\nheaders = {{ \"HTTP-Referer\" = \"https://hub.example\", \"X-OpenRouter-Title\" = \"Team hub\" }}"
    );
    let hub = hub::start(vec![
        hub::provider("up", &up.base_url(), &["gpt-*"], plain),
        hub::provider("named", &up.base_url(), &[], &named),
    ])
    .await;
    let name = "openai--openai-text";
    up.push(Reply::sse(upstream::fixture_frames(name)));
    let (events, _) = client::post(hub.addr, "/v1/chat/completions", &chat_body(true))
        .await
        .events(WITHIN)
        .await;
    let mut want = upstream::fixture_lines(name);
    want.push("[DONE]".into());
    assert_eq!(events, want, "relayed event for event");
    let sent = &up.requests()[0];
    assert_eq!(sent.path, CHAT);
    assert_eq!(sent.header("authorization"), Some("Bearer sk-or-e2e"));
    assert_eq!(
        (sent.header("x-openrouter-title"), sent.header("x-title")),
        (Some("wasmhub"), Some("wasmhub"))
    );
    assert!(
        sent.header("user-agent")
            .is_some_and(|ua| ua.starts_with("wasmhub/"))
    );
    assert_eq!(
        sent.header("http-referer"),
        None,
        "the hub has no URL of its own to send"
    );
    let mut body = chat_body(true);
    body["model"] = "gpt-test".into();
    assert_eq!(sent.json(), body, "the request as the client sent it");

    up.push(Reply::sse(upstream::fixture_frames(name)));
    let mut named_body = chat_body(true);
    named_body["model"] = "named/openai/gpt-4o".into();
    client::post(hub.addr, "/v1/chat/completions", &named_body)
        .await
        .events(WITHIN)
        .await;
    let sent = &up.requests()[1];
    assert_eq!(sent.json()["model"], "openai/gpt-4o");
    assert_eq!(
        (
            sent.header("http-referer"),
            sent.header("x-openrouter-title"),
            sent.header("x-title")
        ),
        (Some("https://hub.example"), Some("Team hub"), Some("wasmhub"))
    );
}
