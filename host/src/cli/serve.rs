//! `wasmhub serve`: builds every part of the hub from the configuration, wires
//! them into the HTTP server, and runs until SIGINT/SIGTERM.

use crate::config::Config;
use crate::surfaces::{App, server};
use std::process::ExitCode;
use std::sync::Arc;
use std::time::Duration;

/// Flags of `serve` that are not configuration keys.
pub struct ServeFlags {
    /// Refuse plugins that `plugins.lock` does not pin (and sources whose tag moved).
    pub locked: bool,
    /// Plain HTTP to registries off loopback (`--insecure-http`).
    pub insecure_http: bool,
    /// The configuration file and how to read it again: followed for
    /// `[[mcp_servers]]` (`config_watch`).
    pub(super) config_file: Option<(std::path::PathBuf, super::config_watch::Reload)>,
}

/// Starts the hub; returns when it has shut down.
pub fn run(config: Config, options: ServeFlags) -> ExitCode {
    // Before the runtime starts its threads (see `signals`).
    let signals = match super::signals::install() {
        Ok(s) => s,
        Err(e) => {
            crate::error!("cannot take over SIGINT and SIGTERM: {e}");
            return ExitCode::FAILURE;
        }
    };
    let runtime = match tokio::runtime::Builder::new_multi_thread().enable_all().build() {
        Ok(rt) => rt,
        Err(e) => {
            crate::error!("cannot start the async runtime: {e}");
            return ExitCode::FAILURE;
        }
    };
    match runtime.block_on(start(config, options, signals)) {
        Ok(()) => ExitCode::SUCCESS,
        Err(message) => {
            crate::error!("{message}");
            ExitCode::FAILURE
        }
    }
}

/// Once the first load is done, drops compiled plugins no plugin of the folder
/// uses. Only `serve` prunes: it owns its data folder, while `call` may point the
/// same folder at another plugins folder for a moment.
async fn prune_compiled_cache(hub: Arc<crate::hub::Hub>) {
    hub.loaded().await;
    let digests: Vec<String> = hub.plugins().into_iter().filter_map(|p| p.digest).collect();
    hub.runtime()
        .prune_compiled_cache(digests.iter().map(String::as_str));
}

/// Pulls `[[plugins.sources]]` before the folder is loaded, so replicas serve the
/// same digests. A source that fails (registry down, tag moved under `--locked`,
/// bad signature) is logged and the folder keeps what it has: the lock and
/// `[trust]` still decide whether that loads.
async fn sync_sources(config: &Config, options: &ServeFlags) -> Result<(), String> {
    if config.plugins.sources.is_empty() {
        return Ok(());
    }
    let results =
        super::plugin::sync_sources(config, &config.plugins_dir, options.locked, options.insecure_http)
            .await?;
    for (reference, result) in results {
        match result {
            Ok(p) => crate::info!("plugin sources: {}", super::plugin::describe_pull(&reference, &p)),
            Err(e) => crate::error!("plugin sources: {reference}: {e}; keeping what the folder has"),
        }
    }
    Ok(())
}

async fn start(config: Config, options: ServeFlags, signals: super::signals::Signals) -> Result<(), String> {
    crate::telemetry::install(&config.telemetry, &config.audit.redact_fields).map_err(|e| e.to_string())?;
    sync_sources(&config, &options).await?;
    let config = Arc::new(config);
    // --locked: every plugin must be pinned in plugins.lock; read it before loading
    // anything so a missing or broken lock file stops the start, naming the file.
    let lock = match options.locked {
        true => Some(crate::runtime::LockFile::read(&config.plugins_dir).map_err(|e| e.to_string())?),
        false => None,
    };
    let mut llm =
        crate::llm::Llm::with_models(&config.providers, &config.models).map_err(|e| e.to_string())?;
    llm.set_trace(
        crate::llm::trace::Trace::open(&config.llm_trace, &config.data_dir).map_err(|e| e.to_string())?,
    );
    let llm = Arc::new(llm);
    let backend = crate::storage::Backend::open(&config)
        .await
        .map_err(|e| e.to_string())?;
    // `_plugins` keeps the plugins folder loaded and watched while we serve. The
    // plugins load in the background so the listener opens at once; until then
    // `/health` says "loading" and calls to their operations wait for them.
    let (hub, _plugins) = crate::hub::Hub::start_in_background(&config, backend.clone(), lock)
        .await
        .map_err(|e| e.to_string())?;
    tokio::spawn(prune_compiled_cache(hub.clone()));
    if let Some((file, reload)) = options.config_file.clone() {
        super::config_watch::spawn(Arc::downgrade(&hub), file, reload);
    }
    let agent = crate::agent::Agent::new(&config, llm.clone(), hub.clone(), &backend)
        .await
        .map_err(|e| e.to_string())?;
    let mcp = crate::surfaces::mcp::McpState::open(hub.clone(), &config.server, &backend)
        .await
        .map_err(|e| e.to_string())?;
    let oauth = crate::surfaces::OAuthState::open(&config, &hub, &backend)
        .await
        .map_err(|e| e.to_string())?;
    let app = Arc::new(App {
        oauth,
        config: config.clone(),
        llm,
        hub,
        agent,
        mcp,
        limits: Arc::new(crate::surfaces::SurfaceLimits::new(&config.concurrency)),
    });
    // Only a listening hub has clients to admit; `call` and `mcp --stdio` run as
    // the local operator.
    // Cursor's OAuth callback listens on localhost:8787 (README, "Remote MCP clients").
    if config.oauth.enabled() && config.listen.ip().is_loopback() && config.listen.port() == 8787 {
        crate::warn!(
            "[oauth] is on and the hub listens on loopback port 8787, where Cursor's OAuth callback listens: \
             a Cursor on this machine cannot sign in; listen on another port, or leave OAuth off for local clients"
        );
    }
    if config.tokens.is_empty() {
        crate::warn!(
            "no [[tokens]] configured: the hub serves loopback clients only, with every operation allowed"
        );
    }
    let listener = server::bind(config.listen)
        .await
        .map_err(|e| format!("cannot listen on {}: {e}", config.listen))?;
    let addr = listener.local_addr().map_err(|e| e.to_string())?;
    crate::info!("listening on http://{addr}");
    let grace = Duration::from_secs(config.server.shutdown_grace_secs);
    let hub = app.hub.clone();
    let served = server::serve(app, listener, signals.received(), grace)
        .await
        .map_err(|e| e.to_string());
    hub.stop_mcp_servers().await;
    // The spans of the last requests, before the process exits.
    let wait = Duration::from_millis(config.telemetry.export_timeout_ms);
    tokio::task::spawn_blocking(move || crate::telemetry::flush(wait))
        .await
        .ok();
    served
}
