//! Plugin secrets through the HTTP API: `GET /api/plugins` shows what each plugin
//! needs and what is unset (never a value), a call needing an unset one fails with
//! `missing_secret`, only operators set (`PUT`) or remove (`DELETE`) a value, and
//! a replica on the same PostgreSQL database uses a value set through another.

use crate::runtime_secrets::recording_server;
use crate::support::hub::{Hub, Server, plugins, serve, start_on};
use crate::support::runtime::Scratch;
use http::Method;
use serde_json::{Value, json};
use wasmhub::config::{Config, SecretsConfig, StorageBackend, TokenConfig};
use wasmhub::runtime::secrets::SealKey;
use wasmhub::storage::Backend;

/// A plugins folder with `weather` (the fetcher guest) declaring `API_KEY` for
/// the loopback API on `port`, and a key file.
fn folder(port: u16) -> Scratch {
    let dir = plugins(&[("fetcher", "weather")], &[]);
    std::fs::write(
        dir.path("weather.toml"),
        format!(
            "[network]\nallow = [\"127.0.0.1:{port}\"]\n\
             [secrets.API_KEY]\ndescription = \"the weather API key\"\n\
             inject = {{ host = \"127.0.0.1:{port}\", header = \"X-Api-Key\" }}\n\
             [config.units]\ntype = \"string\"\ndefault = \"metric\"\n"
        ),
    )
    .unwrap();
    std::fs::write(dir.path("secrets.key"), SealKey::generate_hex()).unwrap();
    for name in ["ops", "ci"] {
        std::fs::write(
            dir.path(&format!("{name}.secret")),
            format!("{name}-token-0123456789"),
        )
        .unwrap();
    }
    dir
}

fn configure(dir: &Scratch, config: &mut Config) {
    config.secrets = SecretsConfig {
        key_file: Some(dir.path("secrets.key")),
        key_env: None,
        ..SecretsConfig::default()
    };
    let token = |name: &str, operator: bool| TokenConfig {
        name: name.into(),
        secret_env: None,
        secret_file: Some(dir.path(&format!("{name}.secret"))),
        allow: vec!["*".into()],
        operator,
        ..TokenConfig::default()
    };
    config.tokens = vec![token("ops", true), token("ci", false)];
}

const OPS: Option<&str> = Some("ops-token-0123456789");
const CI: Option<&str> = Some("ci-token-0123456789");

async fn weather(s: &Server) -> Value {
    let all = s
        .request(Method::GET, "/api/plugins", None, CI)
        .await
        .json()
        .await;
    all["plugins"]
        .as_array()
        .unwrap()
        .iter()
        .find(|p| p["name"] == "weather")
        .cloned()
        .unwrap()
}

async fn call(addr: std::net::SocketAddr, port: u16) -> Value {
    let body = json!({ "calls": [{ "tool": "weather.get", "input": { "url": format!("http://127.0.0.1:{port}/now") } }] });
    let resp = crate::support::client::send(
        addr,
        Method::POST,
        "/api/hub/call",
        Some(serde_json::to_vec(&body).unwrap().into()),
        &[("authorization", "Bearer ci-token-0123456789")],
    )
    .await;
    resp.json().await["results"][0].take()
}

async fn put(s_addr: std::net::SocketAddr, path: &str, value: &str, token: &str) -> (u16, String) {
    let resp = crate::support::client::send(
        s_addr,
        Method::PUT,
        path,
        Some(serde_json::to_vec(&json!({ "value": value })).unwrap().into()),
        &[("authorization", &format!("Bearer {token}"))],
    )
    .await;
    let status = resp.status.as_u16();
    (status, String::from_utf8_lossy(&resp.bytes().await).into_owned())
}

#[tokio::test]
async fn operators_set_secrets_the_api_shows_what_is_unset_and_calls_use_them() {
    let (port, mut seen) = recording_server(None).await;
    let dir = folder(port);
    let s = serve(&dir, |c| configure(&dir, c)).await;
    let path = "/api/plugins/weather/secrets/API_KEY";

    let p = weather(&s).await;
    assert_eq!(p["secrets"][0]["name"], "API_KEY", "{p}");
    assert_eq!(p["secrets"][0]["use"], "inject");
    assert_eq!(p["secrets"][0]["hosts"], json!([format!("127.0.0.1:{port}")]));
    assert_eq!(p["secrets"][0]["source"], "unset");
    assert_eq!(
        p["config"][0],
        json!({ "name": "units", "type": "string", "required": false, "description": "", "value": "metric" })
    );

    let failed = call(s.addr, port).await;
    assert_eq!(failed["ok"], false, "{failed}");
    assert_eq!(failed["error"]["code"], "missing_secret", "{failed}");
    assert!(
        failed["error"]["message"]
            .as_str()
            .unwrap()
            .contains("weather/API_KEY"),
        "{failed}"
    );
    assert!(seen.try_recv().is_err(), "nothing was sent without the secret");

    // Only operators; only declared secrets of loaded plugins.
    let (status, body) = put(s.addr, path, "wk-secret-value-1", CI.unwrap()).await;
    assert_eq!(status, 403, "{body}");
    let (status, _) = put(s.addr, "/api/plugins/weather/secrets/OTHER", "x", OPS.unwrap()).await;
    assert_eq!(status, 404);
    let (status, _) = put(s.addr, "/api/plugins/nosuch/secrets/API_KEY", "x", OPS.unwrap()).await;
    assert_eq!(status, 404);
    let (status, body) = put(s.addr, path, "", OPS.unwrap()).await;
    assert_eq!(status, 400, "{body}");
    let (status, body) = put(s.addr, path, &"x".repeat(64 * 1024 + 1), OPS.unwrap()).await;
    assert_eq!(status, 400, "{body}");
    assert!(
        body.contains("secrets.max_value_kb") && !body.contains("xxxxxxxx"),
        "{body}"
    );

    let (status, body) = put(s.addr, path, "wk-secret-value-1", OPS.unwrap()).await;
    assert_eq!(status, 204, "{body}");
    assert!(!body.contains("wk-secret"));
    let p = weather(&s).await;
    assert_eq!(p["secrets"][0]["source"], "stored", "{p}");
    assert!(p["secrets"][0]["updated_ms"].as_u64().unwrap() > 0);
    assert!(!p.to_string().contains("wk-secret"), "{p}");

    let ok = call(s.addr, port).await;
    assert_eq!(ok["ok"], true, "{ok}");
    assert!(
        seen.recv()
            .await
            .unwrap()
            .contains("x-api-key: wk-secret-value-1\r\n")
    );

    let del = s.request(Method::DELETE, path, None, CI).await;
    assert_eq!(del.status.as_u16(), 403);
    let del = s.request(Method::DELETE, path, None, OPS).await;
    assert_eq!(del.status.as_u16(), 204);
    let del = s.request(Method::DELETE, path, None, OPS).await;
    assert_eq!(del.status.as_u16(), 404);
    assert_eq!(weather(&s).await["secrets"][0]["source"], "unset");
    let wrong = s.request(Method::POST, path, Some(&json!({})), OPS).await;
    assert_eq!(wrong.status.as_u16(), 405);
}

async fn replica(dir: &Scratch) -> Hub {
    let mut config = Config {
        plugins_dir: dir.0.clone(),
        ..Config::default()
    };
    configure(dir, &mut config);
    config.storage.backend = StorageBackend::Postgres;
    config.storage.url_env = "WASMHUB_TEST_DATABASE_URL".into();
    let backend = Backend::open(&config)
        .await
        .expect("the test database (WASMHUB_TEST_DATABASE_URL)");
    start_on(config, backend).await
}

#[tokio::test]
async fn a_replica_uses_a_value_set_through_another() {
    let (port, mut seen) = recording_server(None).await;
    let dir = folder(port);
    let (a, b) = (replica(&dir).await, replica(&dir).await);
    // The database outlives the test: a value of a previous run is replaced.
    let value = format!("replicated-{}", wasmhub::ids::new_id("v"));
    let (status, body) = put(
        a.addr,
        "/api/plugins/weather/secrets/API_KEY",
        &value,
        OPS.unwrap(),
    )
    .await;
    assert_eq!(status, 204, "{body}");
    let ok = call(b.addr, port).await;
    assert_eq!(ok["ok"], true, "{ok}");
    assert!(
        seen.recv()
            .await
            .unwrap()
            .contains(&format!("x-api-key: {value}\r\n"))
    );
}
