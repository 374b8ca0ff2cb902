//! `serve` following its configuration file for `[[mcp_servers]]`: the file is
//! stat-ed every `runtime::FOLDER_POLL_INTERVAL`, as the plugins and agents
//! folders are (the same stamps, the same reasons to poll rather than use
//! inotify), and once it has changed and looks the same at two consecutive ticks
//! (so a file being written is not read half-way) it is read again with the
//! same flags and `--set` overrides. Its `[[mcp_servers]]` are applied
//! (`Hub::reload_mcp_servers`: removed servers stop, added ones start, changed
//! ones restart); every other key is read at start only, and the log says so. A
//! file that no longer reads or parses is logged, naming the file and the
//! problem, and the servers keep running as they were.

use crate::config::Config;
use crate::hub::Hub;
use crate::runtime::{FOLDER_POLL_INTERVAL, file_stamp};
use std::path::PathBuf;
use std::sync::{Arc, Weak};

/// Reads the configuration again (the file, then the flags), or says why not.
pub(super) type Reload = Arc<dyn Fn() -> Result<Config, String> + Send + Sync>;

/// Polls `path` until `hub` is dropped.
pub(super) fn spawn(hub: Weak<Hub>, path: PathBuf, reload: Reload) {
    tokio::spawn(async move {
        let mut loaded = file_stamp(&path);
        let mut seen = loaded;
        let mut tick = tokio::time::interval(FOLDER_POLL_INTERVAL);
        tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
        loop {
            tick.tick().await;
            let Some(hub) = hub.upgrade() else { return };
            let now = file_stamp(&path);
            // Settled (unchanged since the last tick) and different from what is loaded.
            if now == seen && now != loaded {
                loaded = now;
                apply(&hub, &path, &reload).await;
            }
            seen = now;
        }
    });
}

async fn apply(hub: &Arc<Hub>, path: &std::path::Path, reload: &Reload) {
    let config = match reload() {
        Ok(config) => config,
        Err(e) => {
            crate::error!(
                "configuration {} changed but cannot be used ({e}); the MCP servers keep running as they were",
                path.display()
            );
            return;
        }
    };
    let Some(done) = hub.reload_mcp_servers(&config).await else {
        return;
    };
    let list = |names: &[String]| match names {
        [] => "none".to_string(),
        names => names.join(", "),
    };
    crate::info!(
        "configuration {} changed: [[mcp_servers]] applied (stopped: {}; started: {}; restarted: {}); other keys take effect at the next start",
        path.display(),
        list(&done.stopped),
        list(&done.started),
        list(&done.restarted)
    );
}
