//! Secrets through the real binary. The example plugin `weather` calls an
//! authenticated API (served here on loopback) with the key the hub injects, set
//! with `wasmhub secret set`. Adversarial guests try to get a secret: the
//! environment, files, configuration, a revealed value echoed in every way the
//! scrubber knows. Then the audit log (`GET /api/calls`), the hub's log, and every
//! file of the data folder are scanned for the plaintext: none holds it.

use crate::support::binary::serve_with_env;
use crate::support::hub::example;
use crate::support::runtime::{Scratch, guest, read_request_head};
use http::Method;
use serde_json::{Value, json};
use std::io::Write;
use std::net::SocketAddr;
use std::process::{Command, Stdio};
use std::sync::mpsc;
use tokio::io::AsyncWriteExt;

const WEATHER_KEY: &str = "wk-live-7f3a9c2e5b1d";
const SIGNING_KEY: &str = "sign-8d4e1f0a6c3b-private";

/// A weatherapi.com look-alike on loopback: answers the weather of `q` when the
/// `key` header is right, 401 otherwise; sends each request head.
async fn weather_api() -> (u16, mpsc::Receiver<String>) {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let port = listener.local_addr().unwrap().port();
    let (tx, rx) = mpsc::channel();
    tokio::spawn(async move {
        while let Ok((mut sock, _)) = listener.accept().await {
            let tx = tx.clone();
            tokio::spawn(async move {
                let Some(head) = read_request_head(&mut sock).await else {
                    return;
                };
                let head = String::from_utf8_lossy(&head).to_string();
                let authorized = head
                    .lines()
                    .any(|l| l.eq_ignore_ascii_case(&format!("key: {WEATHER_KEY}")));
                let (status, body) = if authorized {
                    let place = head
                        .split("q=")
                        .nth(1)
                        .and_then(|r| r.split(' ').next())
                        .unwrap_or("");
                    (
                        "200 OK",
                        json!({ "location": { "name": place, "country": "Loopback" },
                                "current": { "temp_c": 21.5, "wind_kph": 3.0, "condition": { "text": "Clear" } } }),
                    )
                } else {
                    (
                        "401 Unauthorized",
                        json!({ "error": { "code": 2006, "message": "API key is invalid." } }),
                    )
                };
                let _ = tx.send(head);
                let body = body.to_string();
                let reply = format!(
                    "HTTP/1.1 {status}\r\ncontent-type: application/json\r\ncontent-length: {}\r\nconnection: close\r\n\r\n{body}",
                    body.len()
                );
                let _ = sock.write_all(reply.as_bytes()).await;
            });
        }
    });
    (port, rx)
}

/// Runs `wasmhub ARGS --config CONFIG` with `stdin`, returning success and stderr.
fn wasmhub(config: &std::path::Path, args: &[&str], stdin: &str) -> (bool, String) {
    let out = run(config, args, stdin);
    (
        out.status.success(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

/// Runs `wasmhub ARGS --config CONFIG` with `stdin` to its end.
fn run(config: &std::path::Path, args: &[&str], stdin: &str) -> std::process::Output {
    let mut child = Command::new(env!("CARGO_BIN_EXE_wasmhub"))
        .args(args)
        .arg("--config")
        .arg(config)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    child.stdin.take().unwrap().write_all(stdin.as_bytes()).unwrap();
    child.wait_with_output().unwrap()
}

async fn call(addr: SocketAddr, tool: &str, input: Value) -> Value {
    let body = json!({ "calls": [{ "tool": tool, "input": input }] });
    let resp = crate::support::client::send(
        addr,
        Method::POST,
        "/api/hub/call",
        Some(serde_json::to_vec(&body).unwrap().into()),
        &[],
    )
    .await;
    resp.json().await["results"][0].take()
}

/// Every byte of every file under `dir`.
fn all_files(dir: &std::path::Path, out: &mut Vec<(std::path::PathBuf, Vec<u8>)>) {
    for entry in std::fs::read_dir(dir).unwrap() {
        let path = entry.unwrap().path();
        if path.is_dir() {
            all_files(&path, out);
        } else {
            out.push((path.clone(), std::fs::read(&path).unwrap_or_default()));
        }
    }
}

fn holds(haystack: &[u8], needle: &str) -> bool {
    haystack.windows(needle.len()).any(|w| w == needle.as_bytes())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_example_plugin_calls_its_api_with_the_injected_key_and_nothing_keeps_a_secret() {
    let (port, seen) = weather_api().await;
    let s = Scratch::new("secret-binary");
    let plugins = s.path("plugins");
    let data = s.path("data");
    std::fs::create_dir_all(&plugins).unwrap();
    // The example plugin, its manifest pointed at the loopback API.
    std::fs::copy(example("weather"), plugins.join("weather.wasm")).unwrap();
    let shipped = std::fs::read_to_string(example("weather").with_extension("toml")).unwrap();
    assert!(shipped.contains("inject = { host = \"api.weatherapi.com\", header = \"key\" }"));
    std::fs::write(
        plugins.join("weather.toml"),
        shipped.replace("api.weatherapi.com", &format!("127.0.0.1:{port}")),
    )
    .unwrap();
    // The revealer may read its signing key; the adversary declares a key it never gets.
    std::fs::copy(guest("revealer"), plugins.join("revealer.wasm")).unwrap();
    std::fs::write(
        plugins.join("revealer.toml"),
        "[secrets.SIGNING]\nreveal = true\n",
    )
    .unwrap();
    std::fs::copy(guest("adversary"), plugins.join("adversary.wasm")).unwrap();
    std::fs::write(
        plugins.join("adversary.toml"),
        format!(
            "[network]\nallow = [\"127.0.0.1:{port}\"]\n\
             [secrets.WEATHER_API_KEY]\ninject = {{ host = \"127.0.0.1:{port}\", header = \"key\" }}\n"
        ),
    )
    .unwrap();
    let key = s.path("secrets.key");
    let config = s.path("wasmhub.toml");
    std::fs::write(
        &config,
        format!(
            "plugins_dir = {plugins:?}\ndata_dir = {data:?}\n[secrets]\nkey_file = {key:?}\n\
             [plugin.revealer]\nallow_reveal = true\n"
        ),
    )
    .unwrap();

    let (ok, err) = wasmhub(&config, &["secret", "keygen", key.to_str().unwrap()], "");
    assert!(ok, "{err}");
    for (plugin, name, value) in [
        ("weather", "WEATHER_API_KEY", WEATHER_KEY),
        ("adversary", "WEATHER_API_KEY", "ak-4c1e9b7d20f3-own"),
        ("revealer", "SIGNING", SIGNING_KEY),
    ] {
        let (ok, err) = wasmhub(&config, &["secret", "set", plugin, name], &format!("{value}\n"));
        assert!(ok, "{err}");
    }

    let url = format!("http://127.0.0.1:{port}");
    let mut hub = serve_with_env(
        &plugins,
        &data,
        &[
            &format!("secrets.key_file={:?}", key.display().to_string()),
            "plugin.revealer.allow_reveal=true",
        ],
        &[
            ("WEATHER_API_URL", &url),
            ("WEATHER_API_KEY", "the-hub-env-never-reaches-a-plugin"),
        ],
    );

    // The example: the key reaches the API, the model gets the weather.
    let out = call(hub.addr, "weather.current", json!({ "place": "Lyon" })).await;
    assert_eq!(out["ok"], true, "{out}");
    assert_eq!(
        out["result"],
        json!({ "place": "Lyon, Loopback", "temp_c": 21.5, "condition": "Clear", "wind_kph": 3.0 })
    );
    let head = seen.recv().unwrap();
    assert!(head.starts_with("GET /v1/current.json?q=Lyon "), "{head}");
    assert!(
        head.to_ascii_lowercase().contains(&format!("key: {WEATHER_KEY}")),
        "{head}"
    );

    // The adversary: no environment variable, no file, no configuration holds a secret.
    let env = call(hub.addr, "adversary.env", json!({ "name": "WEATHER_API_KEY" })).await;
    assert_eq!(env["result"], json!({ "value": null }), "{env}");
    for path in [
        key.to_str().unwrap(),
        "/proc/self/environ",
        data.to_str().unwrap(),
    ] {
        let read = call(hub.addr, "adversary.read_file", json!({ "path": path })).await;
        assert_eq!(read["ok"], false, "{read}");
    }
    // The revealer echoes its key every way it can.
    for how in [
        "output", "split", "encoded", "text", "stderr", "log", "error", "panic",
    ] {
        let out = call(hub.addr, "revealer.leak", json!({ "how": how })).await;
        // Captured stderr and host.log lines go to the hub's log (scanned below), not
        // into the answer.
        let shown = matches!(how, "stderr" | "log") || out.to_string().contains("[redacted:SIGNING]");
        assert!(shown && !out.to_string().contains(SIGNING_KEY), "{how}: {out}");
    }
    let length = call(hub.addr, "revealer.length", json!({})).await;
    assert_eq!(length["result"], json!({ "length": SIGNING_KEY.len() }));

    // The scan: the audit log, the hub's log, the data folder.
    let calls = crate::support::client::send(hub.addr, Method::GET, "/api/calls?limit=1000", None, &[])
        .await
        .json()
        .await;
    assert!(calls["calls"].as_array().unwrap().len() >= 12, "{calls}");
    let plugins_api = crate::support::client::send(hub.addr, Method::GET, "/api/plugins", None, &[])
        .await
        .json()
        .await;
    hub.child.kill().unwrap();
    hub.child.wait().unwrap();
    let log = hub.stderr.until_closed().join("\n");
    assert!(
        log.contains("[redacted:SIGNING]"),
        "the host.log line was scrubbed, not dropped"
    );
    let mut files = Vec::new();
    all_files(&data, &mut files);
    assert!(!files.is_empty());
    for secret in [WEATHER_KEY, SIGNING_KEY, "ak-4c1e9b7d20f3-own"] {
        let chars: Vec<char> = secret.chars().collect();
        for piece in chars
            .windows(wasmhub::runtime::secrets::SCRUB_WINDOW)
            .map(|w| w.iter().collect::<String>())
        {
            assert!(!calls.to_string().contains(&piece), "audit log holds {piece}");
            assert!(
                !plugins_api.to_string().contains(&piece),
                "plugins API holds {piece}"
            );
            assert!(!log.contains(&piece), "hub log holds {piece}: {log}");
        }
        for (path, bytes) in &files {
            assert!(!holds(bytes, secret), "{} holds {secret}", path.display());
        }
    }
}

/// With the embedded backend a running hub holds the data folder: `secret set`
/// says so and points to `--hub`, which sets, lists and removes the value through
/// the hub's API; the next call uses it, and after `rm` the call fails naming it.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_running_hubs_secrets_are_set_listed_and_removed_through_its_api() {
    let (port, seen) = weather_api().await;
    let s = Scratch::new("secret-hub");
    let plugins = s.path("plugins");
    let data = s.path("data");
    std::fs::create_dir_all(&plugins).unwrap();
    std::fs::copy(example("weather"), plugins.join("weather.wasm")).unwrap();
    let shipped = std::fs::read_to_string(example("weather").with_extension("toml")).unwrap();
    std::fs::write(
        plugins.join("weather.toml"),
        shipped.replace("api.weatherapi.com", &format!("127.0.0.1:{port}")),
    )
    .unwrap();
    let key = s.path("secrets.key");
    let config = s.path("wasmhub.toml");
    std::fs::write(
        &config,
        format!("plugins_dir = {plugins:?}\ndata_dir = {data:?}\n[secrets]\nkey_file = {key:?}\n"),
    )
    .unwrap();
    let (ok, err) = wasmhub(&config, &["secret", "keygen", key.to_str().unwrap()], "");
    assert!(ok, "{err}");
    let url = format!("http://127.0.0.1:{port}");
    let mut hub = serve_with_env(
        &plugins,
        &data,
        &[&format!("secrets.key_file={:?}", key.display().to_string())],
        &[("WEATHER_API_URL", &url)],
    );
    let hub_url = format!("http://{}", hub.addr);
    let set = ["secret", "set", "weather", "WEATHER_API_KEY"];

    let (ok, err) = wasmhub(&config, &set, WEATHER_KEY);
    assert!(!ok && err.contains("use --hub URL"), "{err}");

    let (ok, err) = wasmhub(&config, &[&set[..], &["--hub", &hub_url]].concat(), WEATHER_KEY);
    assert!(ok && err.contains("set weather/WEATHER_API_KEY through"), "{err}");
    let out = call(hub.addr, "weather.current", json!({ "place": "Lyon" })).await;
    assert_eq!(out["ok"], true, "{out}");
    let head = seen.recv().unwrap();
    assert!(
        head.to_ascii_lowercase().contains(&format!("key: {WEATHER_KEY}")),
        "{head}"
    );

    let list = run(&config, &["secret", "list", "weather", "--hub", &hub_url], "");
    let listed = String::from_utf8_lossy(&list.stdout).into_owned();
    assert!(list.status.success(), "{listed}");
    assert!(listed.starts_with("weather/WEATHER_API_KEY"), "{listed}");
    assert!(listed.contains(" set    stored 20"), "{listed}");
    assert!(!listed.contains(WEATHER_KEY), "{listed}");

    // A secret the plugin does not declare: the hub's own refusal, with its status.
    let (ok, err) = wasmhub(
        &config,
        &["secret", "set", "weather", "OTHER", "--hub", &hub_url],
        "x",
    );
    assert!(!ok && err.contains("the hub answered 404"), "{err}");

    let (ok, err) = wasmhub(
        &config,
        &["secret", "rm", "weather", "WEATHER_API_KEY", "--hub", &hub_url],
        "",
    );
    assert!(ok && err.contains("removed weather/WEATHER_API_KEY"), "{err}");
    let list = run(&config, &["secret", "list", "--hub", &hub_url], "");
    let listed = String::from_utf8_lossy(&list.stdout).into_owned();
    assert!(listed.contains(" unset  declared; injected into"), "{listed}");
    let out = call(hub.addr, "weather.current", json!({ "place": "Lyon" })).await;
    assert_eq!(out["error"]["code"], "missing_secret", "{out}");
    hub.child.kill().unwrap();
    hub.child.wait().unwrap();
}
