//! Plugin secrets through the real sandbox: values sealed in a store, injected by
//! the host into requests to the declared host only (replacing a guest's own
//! header, never on another host or after a redirect there), per plugin, rotated
//! for the next call, and a missing one failing the call with `missing_secret`.

use crate::support::runtime::*;
use std::collections::BTreeMap;
use std::sync::Arc;
use tokio::io::AsyncWriteExt;
use tokio::sync::mpsc;
use wasmhub::config::{PluginSettings, SecretsConfig, TrustConfig};
use wasmhub::runtime::secrets::{SealKey, store};
use wasmhub::runtime::{CallFailure, ErrorCode, Runtime, Secrets};
use wasmhub::storage::Backend;

/// A loopback server sending each request head (lowercased) into the channel;
/// answers 200 `ok`, or 302 to `redirect` when given.
pub(crate) async fn recording_server(redirect: Option<String>) -> (u16, mpsc::UnboundedReceiver<String>) {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let port = listener.local_addr().unwrap().port();
    let (tx, rx) = mpsc::unbounded_channel();
    tokio::spawn(async move {
        while let Ok((mut sock, _)) = listener.accept().await {
            let (tx, redirect) = (tx.clone(), redirect.clone());
            tokio::spawn(async move {
                let Some(head) = read_request_head(&mut sock).await else {
                    return;
                };
                let _ = tx.send(String::from_utf8_lossy(&head).to_ascii_lowercase());
                let reply = match redirect {
                    Some(to) => format!(
                        "HTTP/1.1 302 Found\r\nlocation: {to}\r\ncontent-length: 0\r\nconnection: close\r\n\r\n"
                    ),
                    None => "HTTP/1.1 200 OK\r\ncontent-length: 2\r\nconnection: close\r\n\r\nok".into(),
                };
                let _ = sock.write_all(reply.as_bytes()).await;
            });
        }
    });
    (port, rx)
}

/// A runtime whose secrets are sealed in a temporary store under a key file in `s`.
pub(crate) async fn runtime_with(
    s: &Scratch,
    settings: BTreeMap<String, PluginSettings>,
) -> (Runtime, Arc<Secrets>) {
    let key = s.path("secrets.key");
    std::fs::write(&key, SealKey::generate_hex()).unwrap();
    let config = SecretsConfig {
        key_file: Some(key),
        key_env: None,
        ..SecretsConfig::default()
    };
    let backend = Backend::temporary().unwrap();
    let store = store::open(&backend).await.unwrap();
    let secrets = Secrets::new(Some(store), &config, settings).unwrap();
    let runtime = Runtime::with_secrets(&limits(), None, &TrustConfig::default(), secrets).unwrap();
    let secrets = runtime.secrets().clone();
    (runtime, secrets)
}

fn manifest(declared: u16, other: u16) -> String {
    format!(
        "[network]\nallow = [\"127.0.0.1:{declared}\", \"127.0.0.1:{other}\"]\n\
         [secrets.API_KEY]\ndescription = \"the service's key\"\n\
         inject = {{ host = \"127.0.0.1:{declared}\", header = \"Authorization\", format = \"Bearer {{}}\" }}\n"
    )
}

fn get(url: &str, extra: &str) -> String {
    format!("{{\"url\":\"{url}\"{extra}}}")
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_declared_host_gets_the_header_per_plugin_and_rotated() {
    let (declared, mut seen) = recording_server(None).await;
    let (other, _) = recording_server(None).await;
    let s = Scratch::new("secret-inject");
    let (runtime, secrets) = runtime_with(&s, BTreeMap::new()).await;
    let one = runtime
        .load(&s.plugin("fetcher", "one", Some(&manifest(declared, other))))
        .await
        .unwrap();
    let two = runtime
        .load(&s.plugin("fetcher", "two", Some(&manifest(declared, other))))
        .await
        .unwrap();
    secrets.set("one", "API_KEY", "key-of-one", 1).await.unwrap();
    secrets.set("two", "API_KEY", "key-of-two", 2).await.unwrap();
    let url = format!("http://127.0.0.1:{declared}/v1/thing");

    // The guest's own Authorization is replaced, not merged.
    let out = one
        .call(
            "get",
            &get(&url, ",\"headers\":{\"Authorization\":\"Bearer guess\"}"),
            inv(),
        )
        .await
        .unwrap();
    assert_eq!(out.json, "{\"body\":\"ok\",\"status\":200}");
    let head = seen.recv().await.unwrap();
    assert_eq!(head.matches("authorization:").count(), 1, "{head}");
    assert!(head.contains("authorization: bearer key-of-one\r\n"), "{head}");
    assert!(!head.contains("guess"), "{head}");

    // Another plugin with the same secret name sends its own value.
    two.call("get", &get(&url, ""), inv()).await.unwrap();
    assert!(
        seen.recv()
            .await
            .unwrap()
            .contains("authorization: bearer key-of-two\r\n")
    );

    // Rotation: the next call sends the new value, no reload.
    secrets.set("one", "API_KEY", "key-of-one-v2", 3).await.unwrap();
    one.call("get", &get(&url, ""), inv()).await.unwrap();
    assert!(
        seen.recv()
            .await
            .unwrap()
            .contains("authorization: bearer key-of-one-v2\r\n")
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn other_hosts_and_redirects_there_get_nothing() {
    let (other, mut other_seen) = recording_server(None).await;
    let (declared, mut declared_seen) =
        recording_server(Some(format!("http://127.0.0.1:{other}/landing"))).await;
    let s = Scratch::new("secret-other");
    let (runtime, secrets) = runtime_with(&s, BTreeMap::new()).await;
    let p = runtime
        .load(&s.plugin("fetcher", "one", Some(&manifest(declared, other))))
        .await
        .unwrap();
    secrets.set("one", "API_KEY", "never-elsewhere", 1).await.unwrap();

    // A granted but undeclared destination carries nothing.
    let out = p
        .call("get", &get(&format!("http://127.0.0.1:{other}/x"), ""), inv())
        .await
        .unwrap();
    assert_eq!(out.json, "{\"body\":\"ok\",\"status\":200}");
    let head = other_seen.recv().await.unwrap();
    assert!(
        !head.contains("authorization") && !head.contains("never-elsewhere"),
        "{head}"
    );

    // The declared host redirects to the other one: the guest follows, the
    // second request has no header.
    let out = p
        .call(
            "get",
            &get(&format!("http://127.0.0.1:{declared}/start"), ",\"follow\":true"),
            inv(),
        )
        .await
        .unwrap();
    assert_eq!(out.json, "{\"body\":\"ok\",\"status\":200}");
    assert!(
        declared_seen
            .recv()
            .await
            .unwrap()
            .contains("authorization: bearer never-elsewhere")
    );
    let head = other_seen.recv().await.unwrap();
    assert!(head.starts_with("get /landing"), "{head}");
    assert!(
        !head.contains("authorization") && !head.contains("never-elsewhere"),
        "{head}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_missing_secret_fails_the_call_naming_it_and_sends_nothing() {
    let (declared, mut seen) = recording_server(None).await;
    let s = Scratch::new("secret-missing");
    let (runtime, _) = runtime_with(&s, BTreeMap::new()).await;
    let p = runtime
        .load(&s.plugin("fetcher", "weather", Some(&manifest(declared, declared))))
        .await
        .unwrap();
    let err = p
        .call("get", &get(&format!("http://127.0.0.1:{declared}/"), ""), inv())
        .await
        .unwrap_err();
    assert_eq!(err.code(), ErrorCode::MissingSecret);
    assert!(
        matches!(&err, CallFailure::MissingSecret { secret, reason } if secret == "weather/API_KEY" && reason == "not set"),
        "{err:?}"
    );
    let text = err.to_string();
    assert!(text.contains("wasmhub secret set weather API_KEY"), "{text}");
    assert!(seen.try_recv().is_err(), "no request was sent");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_file_reference_is_read_at_each_call() {
    let (declared, mut seen) = recording_server(None).await;
    let s = Scratch::new("secret-ref");
    let file = s.path("api-key");
    std::fs::write(&file, "from-a-file\n").unwrap();
    let settings = PluginSettings {
        secrets: BTreeMap::from([("API_KEY".to_string(), format!("file:{}", file.display()))]),
        ..PluginSettings::default()
    };
    let (runtime, _) = runtime_with(&s, BTreeMap::from([("one".to_string(), settings)])).await;
    let p = runtime
        .load(&s.plugin("fetcher", "one", Some(&manifest(declared, declared))))
        .await
        .unwrap();
    let url = format!("http://127.0.0.1:{declared}/");
    p.call("get", &get(&url, ""), inv()).await.unwrap();
    assert!(
        seen.recv()
            .await
            .unwrap()
            .contains("authorization: bearer from-a-file\r\n")
    );
    std::fs::write(&file, "rotated-in-the-file").unwrap();
    p.call("get", &get(&url, ""), inv()).await.unwrap();
    assert!(
        seen.recv()
            .await
            .unwrap()
            .contains("authorization: bearer rotated-in-the-file\r\n")
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn wasi_config_gives_a_plugin_its_own_keys_only() {
    let s = Scratch::new("config-store");
    let settings = |units: &str| PluginSettings {
        config: BTreeMap::from([
            ("units".to_string(), serde_json::json!(units)),
            ("retries".to_string(), serde_json::json!(3)),
        ]),
        secrets: BTreeMap::from([(
            "API_KEY".to_string(),
            "env:WASMHUB_TEST_CONFIG_SECRET".to_string(),
        )]),
        ..PluginSettings::default()
    };
    let (runtime, _) = runtime_with(
        &s,
        BTreeMap::from([
            ("one".to_string(), settings("imperial")),
            ("two".to_string(), PluginSettings::default()),
        ]),
    )
    .await;
    let one = "[config.units]\ntype = \"string\"\ndefault = \"metric\"\n\
               [config.retries]\ntype = \"integer\"\nrequired = true\n\
               [secrets.API_KEY]\nreveal = true\n";
    let two = "[config.units]\ntype = \"string\"\ndefault = \"metric\"\n[config.depth]\ntype = \"number\"\ndefault = 1.5\n";
    let p1 = runtime
        .load(&s.plugin("configreader", "one", Some(one)))
        .await
        .unwrap();
    let p2 = runtime
        .load(&s.plugin("configreader", "two", Some(two)))
        .await
        .unwrap();
    let ask = r#"{"keys":["units","retries","depth","API_KEY","WASMHUB_TEST_CONFIG_SECRET"]}"#;
    let out: serde_json::Value =
        serde_json::from_str(&p1.call("read", ask, inv()).await.unwrap().json).unwrap();
    assert_eq!(
        out,
        serde_json::json!({
            "all": [["retries", "3"], ["units", "imperial"]],
            "get": { "units": "imperial", "retries": "3", "depth": null, "API_KEY": null, "WASMHUB_TEST_CONFIG_SECRET": null }
        })
    );
    let out: serde_json::Value =
        serde_json::from_str(&p2.call("read", ask, inv()).await.unwrap().json).unwrap();
    assert_eq!(
        out["all"],
        serde_json::json!([["depth", "1.5"], ["units", "metric"]])
    );
    assert_eq!(out["get"]["retries"], serde_json::Value::Null);

    // A required key without a value, or a value of the wrong type, rejects the plugin.
    let err = runtime
        .load(&s.plugin("configreader", "three", Some(one)))
        .await
        .unwrap_err()
        .to_string();
    assert!(
        err.contains("[config.retries] is required: set plugin.three.config.retries"),
        "{err}"
    );
}
