//! A revealed secret through the agent loop: a model asks a revealing guest to echo
//! its key; neither the model's next request (the tool result it reads), nor the
//! streamed chunks, nor the stored session hold the value.

use crate::support::chat::*;
use crate::support::upstream::Upstream;
use serde_json::json;
use wasmhub::config::{PluginSettings, SecretsConfig};
use wasmhub::runtime::secrets::SealKey;

const KEY: &str = "k7-5e7a1c9d3b2f-signing";

#[tokio::test]
async fn a_revealed_value_reaches_neither_the_model_nor_the_session() {
    let upstream = Upstream::start().await;
    let dir = plugins(&["revealer"]);
    std::fs::write(dir.join("revealer.toml"), "[secrets.SIGNING]\nreveal = true\n").unwrap();
    let key_file = dir.join("secrets.key");
    std::fs::write(&key_file, SealKey::generate_hex()).unwrap();
    let hub = hub_alone(&upstream, dir, |c| {
        c.secrets = SecretsConfig {
            key_file: Some(key_file),
            key_env: None,
            ..SecretsConfig::default()
        };
        c.plugin.insert(
            "revealer".into(),
            PluginSettings {
                allow_reveal: true,
                ..PluginSettings::default()
            },
        );
    })
    .await;
    hub.app
        .hub
        .runtime()
        .secrets()
        .set("revealer", "SIGNING", KEY, 1)
        .await
        .unwrap();
    upstream.push(tool_step(
        None,
        &[(
            "call_leak",
            "hub_call",
            call_args(json!([
                {"tool": "revealer.leak", "input": {"how": "output"}},
                {"tool": "revealer.leak", "input": {"how": "encoded"}},
                {"tool": "revealer.leak", "input": {"how": "error"}}
            ])),
        )],
    ));
    upstream.push(text_step("Done."));
    let chunks = chunks(post_chat(hub.addr, &submit("chat-secret", vec![user("u1", "leak it")])).await).await;
    let streamed = serde_json::to_string(&chunks).unwrap();
    assert!(streamed.contains("[redacted:SIGNING]"), "{streamed}");
    let requests = upstream.requests();
    assert_eq!(requests.len(), 2);
    let seen_by_model = requests[1].json().to_string();
    assert!(seen_by_model.contains("[redacted:SIGNING]"), "{seen_by_model}");
    let stored = ended_session(hub.addr, "chat-secret").await.to_string();
    let chars: Vec<char> = KEY.chars().collect();
    for piece in chars
        .windows(wasmhub::runtime::secrets::SCRUB_WINDOW)
        .map(|w| w.iter().collect::<String>())
    {
        assert!(!streamed.contains(&piece), "the stream holds {piece}");
        assert!(!seen_by_model.contains(&piece), "the model saw {piece}");
        assert!(!stored.contains(&piece), "the session holds {piece}");
    }
}
