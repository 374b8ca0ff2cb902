//! Shared helpers of the hub tests: a plugins folder with chosen test guests and
//! example plugins, the hub over it (the in-process API, or the real HTTP server on
//! 127.0.0.1:0 through `support::hub`), and authenticated JSON requests.

use crate::runtime_support::{Scratch, guest, repo_root};
use crate::support::client::{self, ClientResp};
use bytes::Bytes;
use http::Method;
use serde_json::Value;
use std::net::SocketAddr;
use std::path::PathBuf;
use std::sync::{Arc, OnceLock};
use wasmhub::config::Config;
use wasmhub::hub::{CallContext, Caller, Hub, MetaToolRequest};
use wasmhub::runtime::{PluginDir, Runtime};
use wasmhub::storage::Storage;

/// Path of example plugin `name` in `dist/plugins/`, building the examples with
/// `scripts/build-plugins.sh` once per test process when one is missing.
pub fn example(name: &str) -> PathBuf {
    static BUILT: OnceLock<()> = OnceLock::new();
    let dist = repo_root().join("dist/plugins");
    let path = dist.join(format!("{name}.wasm"));
    if !path.exists() {
        BUILT.get_or_init(|| {
            let status = std::process::Command::new("bash")
                .arg(repo_root().join("scripts/build-plugins.sh"))
                .stdout(std::process::Stdio::null())
                .status()
                .expect("run scripts/build-plugins.sh");
            assert!(status.success(), "scripts/build-plugins.sh failed");
        });
    }
    assert!(
        path.exists(),
        "{} was not built by scripts/build-plugins.sh",
        path.display()
    );
    path
}

/// A plugins folder: `guests` are (test guest, plugin name) pairs, `examples` names
/// of example plugins.
pub fn plugins(guests: &[(&str, &str)], examples: &[&str]) -> Scratch {
    let dir = Scratch::new("hub");
    for (guest_name, name) in guests {
        std::fs::copy(guest(guest_name), dir.path(&format!("{name}.wasm"))).unwrap();
    }
    for name in examples {
        let wasm = example(name);
        std::fs::copy(&wasm, dir.path(&format!("{name}.wasm"))).unwrap();
        let manifest = wasm.with_extension("toml");
        if manifest.exists() {
            std::fs::copy(&manifest, dir.path(&format!("{name}.toml"))).unwrap();
        }
    }
    dir
}

/// A hub over `dir`: the in-process API, plus the watcher that keeps it loaded.
pub struct TestHub {
    pub hub: Arc<Hub>,
    _dir: PluginDir,
}

pub async fn hub(dir: &Scratch, configure: impl FnOnce(&mut Config)) -> TestHub {
    let mut config = Config {
        plugins_dir: dir.0.clone(),
        ..Config::default()
    };
    configure(&mut config);
    // One compiled-plugin cache for the whole process (compiling dominates these
    // tests); a fresh store per hub so each test sees only its own call records.
    static CACHE: OnceLock<Storage> = OnceLock::new();
    let cache = CACHE.get_or_init(|| Storage::temporary().unwrap()).clone();
    let runtime = Runtime::new(&config.limits, Some(cache)).expect("runtime");
    let hub = Hub::new(&config, runtime.clone(), Storage::temporary().unwrap()).expect("hub");
    let on_change = {
        let hub = hub.clone();
        Arc::new(move |entries| hub.apply_plugins(entries))
    };
    let watcher = PluginDir::start(runtime, config.plugins_dir.clone(), None, on_change)
        .await
        .expect("plugins load");
    TestHub { hub, _dir: watcher }
}

impl TestHub {
    /// `hub_call` of one operation as the local operator: the per-call result object.
    pub async fn call(&self, tool: &str, input: Value) -> Value {
        let args = serde_json::json!({ "calls": [{ "tool": tool, "input": input }] });
        let mut out = self
            .hub
            .invoke(
                MetaToolRequest::parse("hub_call", args).unwrap(),
                CallContext::new(Caller::local()),
            )
            .await
            .expect("hub_call runs");
        out["results"][0].take()
    }
}

/// The real HTTP server (the shared in-process hub of `support::hub`) over `dir`.
pub async fn serve(dir: &Scratch, configure: impl FnOnce(&mut Config)) -> Server {
    let mut config = Config {
        plugins_dir: dir.0.clone(),
        ..Config::default()
    };
    configure(&mut config);
    let hub = crate::support::hub::start_with(config).await;
    Server { addr: hub.addr, hub }
}

/// A running HTTP server; stops when dropped.
pub struct Server {
    pub addr: SocketAddr,
    pub hub: crate::support::hub::Hub,
}

impl Server {
    /// `method path` with a JSON body and an optional bearer token.
    pub async fn request(
        &self,
        method: Method,
        path: &str,
        body: Option<&Value>,
        token: Option<&str>,
    ) -> ClientResp {
        let auth = token.map(|t| format!("Bearer {t}"));
        let headers: Vec<(&str, &str)> = auth.iter().map(|a| ("authorization", a.as_str())).collect();
        let body = body.map(|b| Bytes::from(serde_json::to_vec(b).unwrap()));
        client::send(self.addr, method, path, body, &headers).await
    }

    /// `POST path` with `body` as the local operator (no token): status and JSON.
    pub async fn post(&self, path: &str, body: &Value) -> (u16, Value) {
        let resp = self.request(Method::POST, path, Some(body), None).await;
        (resp.status.as_u16(), resp.json().await)
    }
}
