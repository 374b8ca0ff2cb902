//! `wasmhub mcp --stdio`: the MCP server over stdin/stdout for desktop clients
//! that start the hub themselves (Claude Desktop and the like; see docs/mcp.md).
//!
//! The hub is built with [`crate::hub::Hub::start_in_background`] as `serve`
//! builds it (storage, runtime, hub, the watched plugins folder), minus the HTTP
//! listener, the model providers and the agent. Like `serve`, it answers at once:
//! the plugins compile in the background, so `initialize`, `ping` and
//! `tools/list` never wait for them (a desktop client gives up on a server that is
//! silent for long), `hub_list` shows a plugin still compiling as `loading`, and a
//! `tools/call` of one of its operations waits for it in `hub::protocol`, bounded
//! by `limits.load_wait_ms`, exactly as over HTTP.
//! stdout carries only protocol messages; logs go to stderr. The process exits when
//! stdin closes. With `[telemetry] otlp_endpoint` it traces as `serve` does (each
//! MCP request a SERVER span, `network.transport = pipe`, under the client's
//! `params._meta.traceparent`) and sends the last spans before it exits.

use crate::config::Config;
use crate::surfaces::mcp::dispatch::Dispatcher;
use crate::surfaces::mcp::hub_backend::HubBackend;
use std::process::ExitCode;
use std::sync::Arc;

/// Serves MCP on stdin/stdout until stdin closes.
pub fn run_stdio(config: Config) -> ExitCode {
    let runtime = match tokio::runtime::Builder::new_multi_thread().enable_all().build() {
        Ok(rt) => rt,
        Err(e) => {
            crate::error!("cannot start the async runtime: {e}");
            return ExitCode::FAILURE;
        }
    };
    match runtime.block_on(serve(config)) {
        Ok(()) => ExitCode::SUCCESS,
        Err(message) => {
            crate::error!("{message}");
            ExitCode::FAILURE
        }
    }
}

async fn serve(config: Config) -> Result<(), String> {
    crate::telemetry::install(&config.telemetry, &config.audit.redact_fields).map_err(|e| e.to_string())?;
    let backend = crate::storage::Backend::open(&config).await.map_err(|e| {
        format!("{e} (a running `wasmhub serve` holds its data folder: give this one its own --data)")
    })?;
    // `_plugins` keeps the plugins folder loaded and watched while we serve.
    let (hub, _plugins) = crate::hub::Hub::start_in_background(&config, backend, None)
        .await
        .map_err(|e| e.to_string())?;
    let dispatcher = Arc::new(Dispatcher::with_approval_time(
        Arc::new(HubBackend::new(hub.clone())),
        std::time::Duration::from_secs(config.server.mcp_approval_secs),
    ));
    let max_line = config.server.max_body_kb as usize * 1024;
    crate::info!("serving MCP on stdio");
    let stdin = tokio::io::BufReader::new(tokio::io::stdin());
    let served = crate::surfaces::mcp::stdio::serve(dispatcher, stdin, tokio::io::stdout(), max_line)
        .await
        .map_err(|e| format!("stdio: {e}"));
    hub.stop_mcp_servers().await;
    let wait = std::time::Duration::from_millis(config.telemetry.export_timeout_ms);
    tokio::task::spawn_blocking(move || crate::telemetry::flush(wait))
        .await
        .ok();
    served
}
