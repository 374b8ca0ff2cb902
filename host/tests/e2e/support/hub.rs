//! The hub in tests: a plugins folder with chosen test guests and example plugins,
//! the in-process API over it ([`TestHub`]), and the real router and listener on
//! 127.0.0.1:0 ([`Hub`], [`Server`]), stopped when dropped.

use crate::support::client::{self, ClientResp};
use crate::support::runtime::{Scratch, guest, process_scratch, repo_root};
use bytes::Bytes;
use http::Method;
use serde_json::Value;
use std::net::SocketAddr;
use std::path::PathBuf;
use std::sync::{Arc, OnceLock};
use std::time::Duration;
use wasmhub::config::{Config, ProviderConfig};
use wasmhub::hub::{CallContext, MetaToolRequest};
use wasmhub::runtime::{PluginDir, Runtime};
use wasmhub::storage::Backend;
use wasmhub::surfaces::{self as server, App};

/// A running hub.
pub struct Hub {
    pub addr: SocketAddr,
    /// The hub's parts, for tests that look inside (sessions, live turns, calls).
    pub app: Arc<App>,
    /// Keeps the plugins folder loaded (and watched) while the hub runs.
    _plugins: wasmhub::runtime::PluginDir,
    /// The empty plugins folder made for a hub that was given none, removed with it.
    _empty_plugins: Option<Scratch>,
    stop: Option<tokio::sync::oneshot::Sender<()>>,
}

impl Hub {
    /// Shuts the hub down as SIGTERM does `wasmhub serve` (`server::serve`'s
    /// shutdown, with a grace of 100 ms).
    pub fn shut_down(&mut self) {
        if let Some(stop) = self.stop.take() {
            let _ = stop.send(());
        }
    }
}

impl Drop for Hub {
    fn drop(&mut self) {
        if let Some(stop) = self.stop.take() {
            let _ = stop.send(());
        }
    }
}

/// A provider section as the operator would write it; `extra` is more TOML lines
/// (timeouts, retries, `api_key_env`, headers).
pub fn provider(name: &str, base_url: &str, models: &[&str], extra: &str) -> ProviderConfig {
    let text = format!("name = {name:?}\nbase_url = {base_url:?}\nmodels = {models:?}\n{extra}\n");
    wasmhub::toml::from_str(&text).unwrap_or_else(|e| panic!("provider TOML: {e}\n{text}"))
}

/// Starts a hub with these providers and otherwise default settings.
pub async fn start(providers: Vec<ProviderConfig>) -> Hub {
    let config = Config {
        providers,
        ..Config::default()
    };
    start_with(config).await
}

pub async fn start_with(config: Config) -> Hub {
    // The store lives in `data_dir` when the test chose one, else in memory.
    let storage = if config.data_dir == Config::default().data_dir {
        wasmhub::storage::Storage::temporary().expect("a temporary store")
    } else {
        wasmhub::storage::Storage::open(&config.data_dir).expect("open the store")
    };
    start_with_storage(config, storage).await
}

/// Starts a hub on `storage` (tests that share one store, e.g. to reuse compiled
/// plugins across hubs of one process: sled opens a folder once per process).
pub async fn start_with_storage(config: Config, storage: wasmhub::storage::Storage) -> Hub {
    start_on(config, Backend::Embedded(storage)).await
}

/// Starts a hub whose stores (sessions, audit, accounting, MCP sessions) are in
/// `backend`.
pub async fn start_on(mut config: Config, backend: Backend) -> Hub {
    // The compiled-plugin cache of a hub left on the default data folder goes to
    // the process's scratch folder, not `data/` under the working directory.
    // One folder for the process, so those hubs share compiled plugins.
    if config.data_dir == Config::default().data_dir {
        static DATA: OnceLock<std::path::PathBuf> = OnceLock::new();
        config.data_dir = DATA.get_or_init(|| process_scratch("data")).clone();
    }
    config.listen = "127.0.0.1:0".parse().unwrap();
    // A plugins folder that does not exist (the default, for tests that need no
    // operations) is replaced by an empty one.
    let empty_plugins = (!config.plugins_dir.is_dir()).then(|| Scratch::new("no-plugins"));
    if let Some(empty) = &empty_plugins {
        config.plugins_dir = empty.0.clone();
    }
    let config = Arc::new(config);
    let llm =
        Arc::new(wasmhub::llm::Llm::with_models(&config.providers, &config.models).expect("valid providers"));
    let (hub, plugins) = wasmhub::hub::Hub::start(&config, backend.clone(), None)
        .await
        .expect("the hub");
    let agent = wasmhub::agent::Agent::new(&config, llm.clone(), hub.clone(), &backend)
        .await
        .expect("the agent");
    let mcp = wasmhub::surfaces::McpState::open(hub.clone(), &config.server, &backend)
        .await
        .expect("the MCP state");
    let limits = Arc::new(wasmhub::surfaces::SurfaceLimits::new(&config.concurrency));
    let oauth = wasmhub::surfaces::OAuthState::open(&config, &hub, &backend)
        .await
        .expect("the OAuth routes");
    let app = Arc::new(App {
        oauth,
        limits,
        config,
        llm,
        hub,
        agent,
        mcp,
    });
    let served = app.clone();
    let listener = server::bind("127.0.0.1:0".parse().unwrap())
        .await
        .expect("bind the hub");
    let addr = listener.local_addr().unwrap();
    let (tx, rx) = tokio::sync::oneshot::channel::<()>();
    tokio::spawn(async move {
        let _ = server::serve(
            served,
            listener,
            async {
                let _ = rx.await;
            },
            Duration::from_millis(100),
        )
        .await;
    });
    Hub {
        addr,
        app,
        _plugins: plugins,
        _empty_plugins: empty_plugins,
        stop: Some(tx),
    }
}

/// Path of example plugin `name` in `dist/plugins/`, brought up to date by
/// `scripts/build-plugins.sh` once per test process. The script is idempotent and
/// rebuilds only what changed (about a second when nothing did), so a folder built
/// from older sources is never tested as if it were current.
pub fn example(name: &str) -> PathBuf {
    static BUILT: OnceLock<()> = OnceLock::new();
    BUILT.get_or_init(|| {
        let status = std::process::Command::new("bash")
            .arg(repo_root().join("scripts/build-plugins.sh"))
            .stdout(std::process::Stdio::null())
            .status()
            .expect("run scripts/build-plugins.sh");
        assert!(status.success(), "scripts/build-plugins.sh failed");
    });
    let path = repo_root().join("dist/plugins").join(format!("{name}.wasm"));
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
    pub hub: Arc<wasmhub::hub::Hub>,
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
    // A static is never dropped, so it lives in a folder removed when the process
    // exits (a temporary store would stay behind in /dev/shm).
    static CACHE: OnceLock<std::path::PathBuf> = OnceLock::new();
    let cache = CACHE.get_or_init(|| process_scratch("compiled-cache"));
    let runtime = Runtime::new(&config.limits, Some(cache)).expect("runtime");
    let hub = wasmhub::hub::Hub::new(&config, runtime.clone(), Backend::temporary().unwrap())
        .await
        .expect("hub");
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
                CallContext::new(self.hub.local_operator()),
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
    let hub = start_with(config).await;
    Server { addr: hub.addr, hub }
}

/// A running HTTP server; stops when dropped.
pub struct Server {
    pub addr: SocketAddr,
    pub hub: Hub,
}

impl Server {
    /// The audit records (`GET /api/calls`, newest first) of the calls of `tool`,
    /// read with `token` (or as the local operator).
    pub async fn calls_of(&self, tool: &str, token: Option<&str>) -> Vec<Value> {
        let calls = self
            .request(Method::GET, "/api/calls", None, token)
            .await
            .json()
            .await;
        let all = calls["calls"].as_array().cloned().unwrap_or_default();
        all.into_iter().filter(|c| c["tool"] == tool).collect()
    }

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
