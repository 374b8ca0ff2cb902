//! `host.reveal-secret` (WIT 0.3.0) through the sandbox, against a guest that
//! tries to get the value out of the call: only with `reveal = true` and the
//! operator's `allow_reveal`; every way out it tries (output raw, split, base64,
//! hex, URL-encoded; its error; stderr; a panic; a nested call's input) carries
//! `[redacted:SIGNING]` and no piece of the value.

use crate::runtime_secrets::runtime_with;
use crate::support::runtime::*;
use std::collections::BTreeMap;
use std::sync::Arc;
use wasmhub::config::PluginSettings;
use wasmhub::runtime::secrets::SCRUB_WINDOW;
use wasmhub::runtime::{CallFailure, ErrorCode};

const SECRET: &str = "sig-K3y/with+special&chars=1234567890";
const MANIFEST: &str = "[secrets.SIGNING]\ndescription = \"signing key\"\nreveal = true\n";

/// Fails when `text` holds the value or any piece of it the scrubber recognises.
fn assert_clean(text: &str) {
    let chars: Vec<char> = SECRET.chars().collect();
    for w in chars.windows(SCRUB_WINDOW) {
        let piece: String = w.iter().collect();
        assert!(!text.contains(&piece), "{piece:?} in {text}");
    }
}

fn allowed() -> BTreeMap<String, PluginSettings> {
    BTreeMap::from([(
        "revealer".to_string(),
        PluginSettings {
            allow_reveal: true,
            ..PluginSettings::default()
        },
    )])
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_revealed_value_never_leaves_the_call() {
    let s = Scratch::new("reveal");
    let (runtime, secrets) = runtime_with(&s, allowed()).await;
    let p = runtime
        .load(&s.plugin("revealer", "revealer", Some(MANIFEST)))
        .await
        .unwrap();
    assert_eq!(p.wit_version().as_str(), "0.3.0");
    secrets.set("revealer", "SIGNING", SECRET, 1).await.unwrap();

    let out = p.call("length", "{}", inv()).await.unwrap();
    assert_eq!(out.json, format!("{{\"length\":{}}}", SECRET.len()));

    for how in ["output", "split", "encoded", "text", "stderr"] {
        let out = p
            .call("leak", &format!("{{\"how\":\"{how}\"}}"), inv())
            .await
            .unwrap();
        assert_clean(&out.json);
        assert_clean(&out.logs);
        let shown = format!("{}{}", out.json, out.logs);
        assert!(shown.contains("[redacted:SIGNING]"), "{how}: {shown}");
    }
    let split = p.call("leak", "{\"how\":\"split\"}", inv()).await.unwrap();
    let v: serde_json::Value = serde_json::from_str(&split.json).unwrap();
    assert_eq!(
        v,
        serde_json::json!({"a": "[redacted:SIGNING]", "b": "[redacted:SIGNING]"})
    );

    for how in ["error", "panic"] {
        let err = p
            .call("leak", &format!("{{\"how\":\"{how}\"}}"), inv())
            .await
            .unwrap_err();
        assert_clean(&err.to_string());
        assert!(err.to_string().contains("[redacted:SIGNING]"), "{err}");
    }

    let recorder = Arc::new(Recorder::default());
    let nested = p
        .call(
            "leak",
            "{\"how\":\"nested\"}",
            inv_with(recorder.clone(), std::time::Duration::from_secs(30)),
        )
        .await
        .unwrap();
    let calls = recorder.calls.lock().unwrap().clone();
    assert_eq!(calls.len(), 1);
    assert_eq!(calls[0].1, "{\"text\":\"[redacted:SIGNING]\"}");
    assert_clean(&nested.json);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn reveal_needs_the_declaration_the_operator_and_a_value() {
    let s = Scratch::new("reveal-refused");
    let (runtime, secrets) = runtime_with(&s, allowed()).await;
    // Not allowed by the operator: the guest gets the reason, the call goes on.
    let other = runtime
        .load(&s.plugin("revealer", "other", Some(MANIFEST)))
        .await
        .unwrap();
    secrets.set("other", "SIGNING", SECRET, 1).await.unwrap();
    let err = other.call("length", "{}", inv()).await.unwrap_err();
    assert_eq!(err.code(), ErrorCode::Forbidden, "{err}");
    assert!(
        err.to_string().contains("allow_reveal in [plugin.other]"),
        "{err}"
    );
    // Declared for injection, not reveal: refused.
    let inject = "[network]\nallow = [\"api.example.com\"]\n\
                  [secrets.SIGNING]\ninject = { host = \"api.example.com\", header = \"X-Key\" }\n";
    let injected = runtime
        .load(&s.plugin("revealer", "revealer", Some(inject)))
        .await
        .unwrap();
    secrets.set("revealer", "SIGNING", SECRET, 1).await.unwrap();
    let err = injected.call("length", "{}", inv()).await.unwrap_err();
    assert!(err.to_string().contains("reveal = true"), "{err}");
    assert_clean(&err.to_string());
    // Allowed and declared, but unset: missing_secret.
    let s2 = Scratch::new("reveal-unset");
    let (runtime, _) = runtime_with(&s2, allowed()).await;
    let p = runtime
        .load(&s2.plugin("revealer", "revealer", Some(MANIFEST)))
        .await
        .unwrap();
    let err = p.call("length", "{}", inv()).await.unwrap_err();
    assert!(
        matches!(&err, CallFailure::MissingSecret { secret, .. } if secret == "revealer/SIGNING"),
        "{err:?}"
    );
}
