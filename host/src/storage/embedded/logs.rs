//! The record logs of one embedded database, each opened once, by record type.
//!
//! Every store over a database shares its logs: one process may run several hubs
//! over one database (the tests do), and two views of one log would each append
//! past the other's segments. A log is opened the first time a store asks for
//! its record type and stays open as long as the database: in the folder
//! `<data_dir>/logs/<LogRecord::LOG_NAME>/` (the sled table an earlier version
//! kept it in moved there first), or in memory for a temporary database, which
//! so leaves nothing on disk.

use super::Storage;
use crate::storage::StorageError;
use crate::storage::log::{self, LogRecord, RecordLog};
use std::any::{Any, TypeId};
use std::collections::HashMap;
use std::path::PathBuf;
use std::sync::{Arc, Mutex};

/// A record log as the stores over one database share it.
pub(crate) type SharedLog<T> = Arc<Mutex<RecordLog<T>>>;

/// The open logs of a database, and where new ones go.
pub(super) struct Logs {
    /// `<data_dir>/logs`; `None` for a temporary database, whose logs live in
    /// memory.
    dir: Option<PathBuf>,
    /// Each open log, under the `TypeId` of its record type: the key says the
    /// value's type, so the value is always a `SharedLog` of that type.
    open: Mutex<HashMap<TypeId, Arc<dyn Any + Send + Sync>>>,
}

impl Logs {
    /// Logs in folders under `dir`.
    pub(super) fn in_folder(dir: PathBuf) -> Logs {
        Logs {
            dir: Some(dir),
            open: Mutex::default(),
        }
    }

    /// Logs in memory.
    pub(super) fn in_memory() -> Logs {
        Logs {
            dir: None,
            open: Mutex::default(),
        }
    }
}

impl Storage {
    /// The record log of `T` over this database, opened on the first call and
    /// the same log for every later one, from any clone.
    pub(crate) fn log<T: LogRecord>(&self) -> Result<SharedLog<T>, StorageError> {
        let mut open = self.logs.open.lock().unwrap_or_else(|p| p.into_inner());
        let key = TypeId::of::<T>();
        if let Some(log) = open.get(&key).cloned().and_then(|l| l.downcast().ok()) {
            return Ok(log);
        }
        let log = match &self.logs.dir {
            Some(dir) => log::open_folder::<T>(self, &dir.join(T::LOG_NAME))?,
            None => RecordLog::in_memory(),
        };
        let log: SharedLog<T> = Arc::new(Mutex::new(log));
        open.insert(key, log.clone());
        Ok(log)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::test_dir::TempDir;

    #[derive(Debug, PartialEq, serde::Serialize, serde::Deserialize)]
    struct Note(u64);

    impl LogRecord for Note {
        const LOG_NAME: &'static str = "notes";
    }

    #[derive(serde::Serialize, serde::Deserialize)]
    struct Other;

    impl LogRecord for Other {
        const LOG_NAME: &'static str = "others";
    }

    #[test]
    fn every_clone_of_a_database_shares_one_log_per_record_type() {
        let dir = TempDir::new("shared-logs");
        let storage = Storage::open(&dir).unwrap();
        let first = storage.log::<Note>().unwrap();
        first.lock().unwrap().append(&[Note(1)], 1).unwrap();
        let again = storage.clone().log::<Note>().unwrap();
        assert!(Arc::ptr_eq(&first, &again));
        assert_eq!(again.lock().unwrap().newest(10).unwrap(), [Note(1)]);
        assert_eq!(storage.log::<Other>().unwrap().lock().unwrap().len(), 0);
        assert!(dir.join("logs/notes").is_dir() && dir.join("logs/others").is_dir());
    }

    #[test]
    fn a_temporary_databases_logs_live_in_memory_and_leave_no_folder() {
        // Earlier versions wrote them to `$TMPDIR/wasmhub-logs_<pid>_<hex>/`.
        let ours = format!("wasmhub-logs_{}_", std::process::id());
        let folders = || {
            std::fs::read_dir(std::env::temp_dir())
                .unwrap()
                .filter_map(|e| e.ok()?.file_name().into_string().ok())
                .filter(|name| name.starts_with(&ours))
                .count()
        };
        let storage = Storage::temporary().unwrap();
        assert!(storage.logs.dir.is_none());
        let log = storage.log::<Note>().unwrap();
        log.lock().unwrap().append(&[Note(1), Note(2)], 1).unwrap();
        log.lock().unwrap().trim(1, 0).unwrap();
        assert_eq!(
            storage.log::<Note>().unwrap().lock().unwrap().newest(10).unwrap(),
            [Note(2)]
        );
        assert_eq!(folders(), 0);
    }
}
