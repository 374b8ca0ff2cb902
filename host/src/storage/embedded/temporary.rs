//! The folders of temporary databases' record logs, under the system temp folder:
//! named after the process that made them, and removed by a later process when that
//! one is gone (a killed `wasmhub call` or test never runs its own removal).

use std::path::{Path, PathBuf};
use std::time::Duration;

const PREFIX: &str = "wasmhub-logs_";

/// A folder is only removed once it has not changed for this long, besides its
/// process being gone: a process of another PID namespace sharing the temp folder
/// is invisible in this one's `/proc`.
const ABANDONED_AFTER: Duration = Duration::from_secs(3600);

/// A fresh folder name for this process's temporary logs, `wasmhub-logs_<pid>_<hex>`.
/// The first one a process asks for removes the folders abandoned under `temp`
/// first (once is enough: a folder only becomes abandoned after an hour).
pub(super) fn new_folder(temp: &Path) -> PathBuf {
    static SWEEP: std::sync::Once = std::sync::Once::new();
    SWEEP.call_once(|| remove_abandoned(temp, ABANDONED_AFTER));
    temp.join(crate::ids::new_id(&format!("{PREFIX}{}", std::process::id())))
}

/// Removes the log folders under `temp` whose process no longer runs and that have
/// not changed for `quiet`. Does nothing where `/proc` cannot tell.
fn remove_abandoned(temp: &Path, quiet: Duration) {
    if !Path::new("/proc/self").exists() {
        return;
    }
    let Ok(entries) = std::fs::read_dir(temp) else {
        return;
    };
    for entry in entries.flatten() {
        let Some(pid) = owner(&entry.file_name()) else {
            continue;
        };
        let unchanged = entry
            .metadata()
            .and_then(|m| m.modified())
            .ok()
            .and_then(|modified| modified.elapsed().ok())
            .is_some_and(|age| age >= quiet);
        if unchanged && !Path::new("/proc").join(pid.to_string()).exists() {
            // Another user's folder, or one removed meanwhile: not ours to insist on.
            let _ = std::fs::remove_dir_all(entry.path());
        }
    }
}

/// The process id in a log folder's name.
fn owner(name: &std::ffi::OsStr) -> Option<u32> {
    let rest = name.to_str()?.strip_prefix(PREFIX)?;
    rest.split('_').next()?.parse().ok()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::test_dir::TempDir;
    use std::time::SystemTime;

    /// A log folder named for `pid`, last changed `age` ago.
    fn folder(temp: &Path, pid: u32, age: Duration) -> PathBuf {
        let path = temp.join(format!("{PREFIX}{pid}_0123"));
        std::fs::create_dir_all(path.join("calls")).unwrap();
        std::fs::write(path.join("calls/00000000000000000001.jsonl"), b"{}\n").unwrap();
        let when = SystemTime::now() - age;
        std::fs::File::open(&path).unwrap().set_modified(when).unwrap();
        path
    }

    #[test]
    fn folders_of_gone_processes_are_removed_once_quiet_and_no_others() {
        let temp = TempDir::new("temporary-logs");
        // PIDs above the kernel's limit (4194304) never run.
        let gone_quiet = folder(temp.path(), 4_194_305, Duration::from_secs(7200));
        let gone_recent = folder(temp.path(), 4_194_306, Duration::from_secs(60));
        let running = folder(temp.path(), std::process::id(), Duration::from_secs(7200));
        let unrelated = temp.path().join("wasmhub-logsX");
        std::fs::create_dir_all(&unrelated).unwrap();
        remove_abandoned(temp.path(), ABANDONED_AFTER);
        let fresh = new_folder(temp.path());
        assert!(!gone_quiet.exists());
        assert!(gone_recent.exists());
        assert!(running.exists());
        assert!(unrelated.exists());
        assert_eq!(owner(fresh.file_name().unwrap()), Some(std::process::id()));
        assert!(!fresh.exists(), "the name is new; the log makes the folder");
    }
}
