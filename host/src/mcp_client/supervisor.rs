//! Keeping one server running: start it, publish its tools (`active`), relist on
//! `tools/list_changed`, and when it stops (exit, closed stream, protocol error)
//! stop what is left of it (SIGTERM, then SIGKILL, reaped; an HTTP session
//! ended with DELETE) and start it again
//! after a backoff: `restart_min_ms`, doubled after every start that fails or
//! session that ends within `restart_max_ms`, at most `restart_max_ms`. A failed
//! start publishes `rejected` with the reason and when the next attempt is; a
//! session that ended publishes `loading` until the restart, so calls wait for it
//! (`limits.load_wait_ms`) rather than fail.

use super::connection::Event;
use super::error::{RequestError, StartError};
use super::process::Exit;
use super::server::McpTools;
use super::session::{self, Session};
use super::tools;
use super::{ServerEntry, ServerState, Table};
use crate::config::{McpServerConfig, McpTransport};
use crate::race::{Race, race};
use std::sync::Arc;
use std::time::Duration;
use tokio::sync::{Semaphore, watch};
use tokio::time::Instant;

/// Why a server is being stopped: the calls still waiting on it fail with this.
pub(super) type StopReason = Option<String>;

/// Runs `config`'s server until `stop` gives a reason, then stops it.
pub(super) async fn supervise(
    config: Arc<McpServerConfig>,
    table: Table,
    mut stop: watch::Receiver<StopReason>,
) {
    let places = Arc::new(Semaphore::new(config.max_concurrent));
    let (min, max) = (config.restart_min_ms, config.restart_max_ms);
    let mut backoff = min;
    let mut restarts = 0u32;
    // Until a stdio server ends the connection on the server/discover probe.
    let mut probe = true;
    loop {
        let opened = match race(session::open(&config, probe), stopping(&mut stop)).await {
            Race::First(opened) => opened,
            Race::Second(()) => return,
        };
        match opened {
            Ok(mut session) => {
                let began = Instant::now();
                let ended = run(&config, &table, &places, &mut session, &mut stop, restarts).await;
                session.stop(&config).await;
                let Some(how) = ended else { return };
                if began.elapsed() >= Duration::from_millis(max) {
                    backoff = min;
                }
                crate::warn!("mcp server {}: {how}; restarting in {backoff} ms", config.name);
                table.set(entry(
                    &config,
                    ServerState::Loading,
                    vec![format!("restarting: {how}")],
                    restarts,
                ));
            }
            Err(e) => {
                if config.transport == McpTransport::Stdio
                    && let StartError::Request {
                        method: "server/discover",
                        source: RequestError::Closed(_),
                    } = &e
                {
                    probe = false;
                }
                crate::warn!("mcp server {}: {e}; next start in {backoff} ms", config.name);
                let reason = format!("{e} (next start in {backoff} ms)");
                table.set(entry(
                    &config,
                    ServerState::Rejected(reason),
                    Vec::new(),
                    restarts,
                ));
            }
        }
        let wait = tokio::time::sleep(Duration::from_millis(backoff));
        if let Race::Second(()) = race(wait, stopping(&mut stop)).await {
            return;
        }
        backoff = (backoff * 2).min(max);
        restarts += 1;
    }
}

/// Resolves when the server is to stop.
async fn stopping(stop: &mut watch::Receiver<StopReason>) {
    let _ = stop.wait_for(Option::is_some).await;
}

/// Serves one session: publishes its tools and relists them when the server says
/// they changed; `Some(how it ended)`, or `None` when the hub is stopping.
async fn run(
    config: &McpServerConfig,
    table: &Table,
    places: &Arc<Semaphore>,
    session: &mut Session,
    stop: &mut watch::Receiver<StopReason>,
    restarts: u32,
) -> Option<String> {
    let listed = std::mem::take(&mut session.tools);
    publish(config, table, places, session, listed, restarts);
    // A stateless server's list changes come on a subscriptions/listen stream,
    // closed with the session (the task is aborted when this returns).
    let _listening = session.conn.is_stateless().then(|| {
        let again = Duration::from_millis(config.restart_min_ms);
        AbortOnDrop(tokio::spawn(super::stateless::listen(
            session.conn.clone(),
            config.name.clone(),
            again,
        )))
    });
    let mut exited = session.child.as_ref().map(|c| c.exited.clone());
    loop {
        let child_exit = async {
            match &mut exited {
                Some(rx) => rx.wait_for(Option::is_some).await.map_or(None, |e| *e),
                None => std::future::pending::<Option<Exit>>().await,
            }
        };
        let next = race(race(session.events.recv(), child_exit), stopping(stop)).await;
        match next {
            Race::Second(_) => {
                let why = stop.borrow().clone().unwrap_or_default();
                session.conn.close(why);
                return None;
            }
            Race::First(Race::Second(exit)) => {
                let how = exit.map_or("the server exited".to_string(), |e| format!("the server {e}"));
                session.conn.close(how.clone());
                return Some(how);
            }
            Race::First(Race::First(None)) => return Some("the connection ended".into()),
            Race::First(Race::First(Some(Event::Closed(how)))) => return Some(how),
            Race::First(Race::First(Some(Event::ToolsChanged))) => {
                session.conn.take_tools_changed();
                let within = Duration::from_millis(config.start_timeout_ms);
                match tokio::time::timeout(within, session::list_tools(&session.conn, config.max_tools)).await
                {
                    Ok(Ok(listed)) => {
                        crate::info!("mcp server {}: its tools changed; relisted", config.name);
                        publish(config, table, places, session, listed, restarts);
                    }
                    Ok(Err(e)) => crate::warn!(
                        "mcp server {}: relisting after tools/list_changed: {e}",
                        config.name
                    ),
                    Err(_) => crate::warn!(
                        "mcp server {}: relisting after tools/list_changed took longer than start_timeout_ms",
                        config.name
                    ),
                }
            }
        }
    }
}

/// Publishes `listed` as the server's operations.
fn publish(
    config: &McpServerConfig,
    table: &Table,
    places: &Arc<Semaphore>,
    session: &Session,
    listed: Vec<serde_json::Value>,
    restarts: u32,
) {
    let tools::Listed { operations, notes } = tools::operations(listed, config);
    for note in &notes {
        crate::warn!("mcp server {}: {note}", config.name);
    }
    let source = McpTools {
        server: config.name.clone(),
        operations,
        instructions: session.instructions.clone(),
        conn: session.conn.clone(),
        places: places.clone(),
        max_concurrent: config.max_concurrent,
        call_timeout_ms: config.call_timeout_ms,
        max_result_kb: config.max_result_kb,
        protocol: session.protocol.clone(),
    };
    crate::info!(
        "mcp server {}: active with {} tools",
        config.name,
        source.operations.len()
    );
    let mut e = entry(config, ServerState::Active(Arc::new(source)), notes, restarts);
    e.pid = session.child.as_ref().map(|c| c.pid);
    table.set(e);
}

/// The entry of `config`'s server in `state`.
pub(super) fn entry(
    config: &McpServerConfig,
    state: ServerState,
    notes: Vec<String>,
    restarts: u32,
) -> ServerEntry {
    ServerEntry {
        name: config.name.clone(),
        transport: config.transport.as_str(),
        target: super::target(config),
        state,
        notes,
        restarts,
        pid: None,
    }
}

/// A task aborted when this is dropped.
struct AbortOnDrop(tokio::task::JoinHandle<()>);

impl Drop for AbortOnDrop {
    fn drop(&mut self) {
        self.0.abort();
    }
}
