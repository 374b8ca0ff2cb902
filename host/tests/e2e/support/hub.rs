//! The hub in-process: the real router and listener on 127.0.0.1:0, built from a
//! configuration the test writes, stopped when dropped.

use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Duration;
use wasmhub::config::{Config, ProviderConfig};
use wasmhub::surfaces::{App, server};

/// A running hub.
pub struct Hub {
    pub addr: SocketAddr,
    /// The hub's parts, for tests that look inside (sessions, live turns, calls).
    pub app: Arc<App>,
    /// Keeps the plugins folder loaded (and watched) while the hub runs.
    _plugins: wasmhub::runtime::PluginDir,
    stop: Option<tokio::sync::oneshot::Sender<()>>,
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
pub async fn start_with_storage(mut config: Config, storage: wasmhub::storage::Storage) -> Hub {
    config.listen = "127.0.0.1:0".parse().unwrap();
    // A plugins folder that does not exist (the default, for tests that need no
    // operations) is replaced by an empty one.
    if !config.plugins_dir.is_dir() {
        let empty = std::env::temp_dir().join(wasmhub::ids::new_id("wasmhub-no-plugins"));
        std::fs::create_dir_all(&empty).expect("an empty plugins folder");
        config.plugins_dir = empty;
    }
    let config = Arc::new(config);
    let llm = Arc::new(wasmhub::llm::Llm::new(&config.providers).expect("valid providers"));
    let (hub, plugins) = wasmhub::hub::Hub::start(&config, storage.clone(), None)
        .await
        .expect("the hub");
    let agent = Arc::new(
        wasmhub::agent::Agent::new(&config.agent, llm.clone(), hub.clone(), &storage).expect("the agent"),
    );
    let mcp = wasmhub::surfaces::mcp::McpState::for_hub(hub.clone(), &config.server);
    let app = Arc::new(App {
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
        stop: Some(tx),
    }
}
