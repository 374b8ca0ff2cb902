//! Following the agents folder: its `*.md` files are stat-ed every
//! `runtime::FOLDER_POLL_INTERVAL`, as the plugins folder is (the same stamps,
//! the same reasons to poll rather than use inotify), and the profiles are
//! rebuilt once the folder looks the same at two consecutive ticks (so a file
//! being written is not read half-way). Dotfiles are ignored.

use super::Profiles;
use crate::runtime::{FOLDER_POLL_INTERVAL, FileStamp, file_stamp};
use std::path::{Path, PathBuf};
use std::sync::Weak;

/// The profile files of `dir`, sorted, with their stamps (none for a missing
/// folder).
pub(super) fn scan(dir: &Path) -> Vec<(PathBuf, FileStamp)> {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return Vec::new();
    };
    let mut found: Vec<(PathBuf, FileStamp)> = entries
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p| {
            let name = p.file_name().and_then(|n| n.to_str()).unwrap_or(".");
            !name.starts_with('.') && name.ends_with(".md")
        })
        .filter_map(|p| file_stamp(&p).map(|s| (p, s)))
        .collect();
    found.sort();
    found
}

/// The text of every file `found`.
pub(super) fn read(found: &[(PathBuf, FileStamp)]) -> Vec<(PathBuf, std::io::Result<String>)> {
    found
        .iter()
        .map(|(path, _)| (path.clone(), std::fs::read_to_string(path)))
        .collect()
}

/// Polls `dir`, whose files were `loaded`, until `profiles` is dropped.
pub(super) fn spawn(profiles: Weak<Profiles>, dir: PathBuf, mut loaded: Vec<(PathBuf, FileStamp)>) {
    tokio::spawn(async move {
        let mut tick = tokio::time::interval(FOLDER_POLL_INTERVAL);
        tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
        let mut seen = loaded.clone();
        loop {
            tick.tick().await;
            let Some(profiles) = profiles.upgrade() else {
                return;
            };
            let now = scan(&dir);
            // Settled (unchanged since the last tick) and different from what is loaded.
            if now == seen && now != loaded {
                profiles.reload(read(&now));
                loaded = now.clone();
            }
            seen = now;
        }
    });
}
