//! The embedded backend: one sled database under the data directory, behind a
//! small interface of named tables, and beside it the record logs.
//!
//! Callers never see sled. They open a [`Table`] by name and store bytes or JSON
//! values under byte keys. Writes that must survive a crash (a finished chat step,
//! an audit record) call [`Table::flush`] before they are reported done. The logs
//! that grow with traffic (the audit log, accounting records) are not tables:
//! they are record logs (`super::log`) in `logs/`, each opened once for the
//! database by its record type ([`Storage::log`], `logs`).
//! sled calls block (a flush is an fsync): async code runs them through
//! [`super::blocking`].

mod cas;
mod logs;

pub(crate) use logs::SharedLog;

use super::StorageError;
use logs::Logs;
use serde::Serialize;
use serde::de::DeserializeOwned;
use std::path::Path;
use std::sync::Arc;

/// The hub's database. Cheap to clone.
#[derive(Clone)]
pub struct Storage {
    db: sled::Db,
    /// Its record logs, shared by every clone.
    logs: Arc<Logs>,
}

impl Storage {
    /// Opens (creating if needed) the database in `dir`, its record logs in
    /// `dir/logs`.
    pub fn open(dir: &Path) -> Result<Storage, StorageError> {
        std::fs::create_dir_all(dir).map_err(|source| StorageError::CreateDir {
            path: dir.to_owned(),
            source,
        })?;
        let db = sled::Config::new()
            .path(dir.join("store"))
            .open()
            .map_err(|source| StorageError::Open {
                path: dir.to_owned(),
                source,
            })?;
        Ok(Storage {
            db,
            logs: Arc::new(Logs::in_folder(dir.join("logs"))),
        })
    }

    /// A database that lives in memory, record logs and all, and leaves nothing
    /// on disk (tests, `wasmhub call`).
    pub fn temporary() -> Result<Storage, StorageError> {
        let db = sled::Config::new().temporary(true).open()?;
        Ok(Storage {
            db,
            logs: Arc::new(Logs::in_memory()),
        })
    }

    /// Whether a table called `name` exists.
    pub(crate) fn has_table(&self, name: &str) -> bool {
        self.db.tree_names().iter().any(|n| n.as_ref() == name.as_bytes())
    }

    /// Deletes the table called `name` and everything in it, if it exists.
    pub fn drop_table(&self, name: &str) -> Result<bool, StorageError> {
        Ok(self.db.drop_tree(name)?)
    }

    /// The table called `name`, created on first use.
    pub fn table(&self, name: &str) -> Result<Table, StorageError> {
        Ok(Table {
            name: name.to_string(),
            tree: self.db.open_tree(name)?,
        })
    }

    /// Makes every write so far durable.
    pub fn flush(&self) -> Result<(), StorageError> {
        self.db.flush()?;
        Ok(())
    }
}

/// An ordered map of byte keys to values.
#[derive(Clone)]
pub struct Table {
    name: String,
    tree: sled::Tree,
}

impl Table {
    /// The table's name.
    pub fn name(&self) -> &str {
        &self.name
    }

    /// The raw bytes stored under `key`; `None` when the key is absent.
    pub fn get_bytes(&self, key: &[u8]) -> Result<Option<Vec<u8>>, StorageError> {
        Ok(self.tree.get(key)?.map(|v| v.to_vec()))
    }

    /// Stores raw bytes under `key`, replacing any previous value (not flushed).
    pub fn put_bytes(&self, key: &[u8], value: &[u8]) -> Result<(), StorageError> {
        self.tree.insert(key, value)?;
        Ok(())
    }

    /// The JSON value under `key`, decoded; `None` when the key is absent, `Corrupt`
    /// when it does not decode as `T`.
    pub fn get<T: DeserializeOwned>(&self, key: &[u8]) -> Result<Option<T>, StorageError> {
        match self.tree.get(key)? {
            None => Ok(None),
            Some(bytes) => self.decode(&bytes).map(Some),
        }
    }

    /// Stores `value` as JSON under `key`, replacing any previous value (not flushed).
    pub fn put<T: Serialize>(&self, key: &[u8], value: &T) -> Result<(), StorageError> {
        self.put_bytes(key, &encode(value)?)
    }

    /// Deletes `key`; returns whether it was present.
    pub fn remove(&self, key: &[u8]) -> Result<bool, StorageError> {
        Ok(self.tree.remove(key)?.is_some())
    }

    /// Removes every key starting with `prefix`; returns how many.
    pub fn remove_prefix(&self, prefix: &[u8]) -> Result<usize, StorageError> {
        let mut batch = sled::Batch::default();
        let mut n = 0;
        for item in self.tree.scan_prefix(prefix) {
            let (k, _) = item?;
            batch.remove(k);
            n += 1;
        }
        self.tree.apply_batch(batch)?;
        Ok(n)
    }

    /// Writes several keys atomically.
    pub fn put_many<T: Serialize>(&self, items: &[(Vec<u8>, T)]) -> Result<(), StorageError> {
        self.rewrite(&[], items)
    }

    /// Values whose key starts with `prefix`, in key order.
    pub fn scan_prefix<T: DeserializeOwned>(&self, prefix: &[u8]) -> Result<Vec<(Vec<u8>, T)>, StorageError> {
        let mut out = Vec::new();
        for item in self.tree.scan_prefix(prefix) {
            let (k, v) = item?;
            out.push((k.to_vec(), self.decode(&v)?));
        }
        Ok(out)
    }

    /// Values from the greatest key down, decoded as the iterator reaches them.
    pub fn newest_first<T: DeserializeOwned>(
        &self,
    ) -> impl Iterator<Item = Result<(Vec<u8>, T), StorageError>> + '_ {
        self.tree.iter().rev().map(|item| {
            let (k, v) = item?;
            Ok((k.to_vec(), self.decode(&v)?))
        })
    }

    /// Every key, smallest first (values are not decoded).
    pub fn keys(&self) -> Result<Vec<Vec<u8>>, StorageError> {
        self.tree.iter().keys().map(|k| Ok(k?.to_vec())).collect()
    }

    /// Removes `remove` and writes `put`, atomically.
    pub fn rewrite<T: Serialize>(
        &self,
        remove: &[Vec<u8>],
        put: &[(Vec<u8>, T)],
    ) -> Result<(), StorageError> {
        let mut batch = sled::Batch::default();
        for k in remove {
            batch.remove(k.as_slice());
        }
        for (k, v) in put {
            batch.insert(k.as_slice(), encode(v)?);
        }
        self.tree.apply_batch(batch)?;
        Ok(())
    }

    /// How many keys the table holds (sled counts them by a full scan).
    pub fn len(&self) -> usize {
        self.tree.len()
    }

    /// A stored JSON value of this table; a value that does not decode is `Corrupt`.
    fn decode<T: DeserializeOwned>(&self, bytes: &[u8]) -> Result<T, StorageError> {
        serde_json::from_slice(bytes).map_err(|source| StorageError::Corrupt {
            table: self.name.clone(),
            source,
        })
    }

    /// Whether the table holds no keys.
    pub fn is_empty(&self) -> bool {
        self.tree.is_empty()
    }

    /// Makes this table's writes durable (sled flushes the whole database).
    pub fn flush(&self) -> Result<(), StorageError> {
        self.tree.flush()?;
        Ok(())
    }
}

/// The stored JSON form of `value`.
fn encode<T: Serialize>(value: &T) -> Result<Vec<u8>, StorageError> {
    serde_json::to_vec(value).map_err(StorageError::Encode)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tables_store_json_and_bytes_in_key_order() {
        let s = Storage::temporary().unwrap();
        let t = s.table("t").unwrap();
        t.put(b"b", &2u32).unwrap();
        t.put(b"a", &1u32).unwrap();
        t.put(b"c", &3u32).unwrap();
        assert_eq!(t.get::<u32>(b"a").unwrap(), Some(1));
        let newest: Vec<u32> = t.newest_first().take(2).map(|r| r.unwrap().1).collect();
        assert_eq!(newest, vec![3, 2]);
        assert_eq!(t.keys().unwrap(), [b"a".to_vec(), b"b".to_vec(), b"c".to_vec()]);
        t.rewrite(&[b"a".to_vec(), b"b".to_vec()], &[(b"d".to_vec(), 4u32)])
            .unwrap();
        assert_eq!(t.keys().unwrap(), [b"c".to_vec(), b"d".to_vec()]);
        assert_eq!(t.len(), 2);
        t.put_bytes(b"x", b"raw").unwrap();
        assert_eq!(t.get_bytes(b"x").unwrap().unwrap(), b"raw");
        assert!(t.get::<u32>(b"x").is_err());
    }

    #[test]
    fn prefix_operations() {
        let s = Storage::temporary().unwrap();
        let t = s.table("t").unwrap();
        t.put_many(&[
            (b"s1/a".to_vec(), 1),
            (b"s1/b".to_vec(), 2),
            (b"s2/a".to_vec(), 3),
        ])
        .unwrap();
        assert_eq!(t.scan_prefix::<i32>(b"s1/").unwrap().len(), 2);
        assert_eq!(t.remove_prefix(b"s1/").unwrap(), 2);
        assert_eq!(t.len(), 1);
    }
}
