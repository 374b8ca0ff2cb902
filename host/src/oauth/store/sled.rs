//! The embedded store: one sled table `oauth`, key `{kind}/{key}`, value the
//! [`Record`] as JSON. Spending is a compare-and-swap on the stored bytes, so two
//! requests redeeming one code cannot both win.

use super::{GrantStore, Kind, Record, Spend};
use crate::storage::{Storage, StorageError, Table, blocking};

/// The OAuth records in the embedded database.
pub(crate) struct SledGrants {
    table: Table,
}

/// The stored bytes changed between the read and the write of a spend.
struct Changed;

impl SledGrants {
    pub(crate) fn open(storage: &Storage) -> Result<SledGrants, StorageError> {
        Ok(SledGrants {
            table: storage.table("oauth")?,
        })
    }

    fn key(kind: Kind, key: &str) -> Vec<u8> {
        format!("{}/{key}", kind.as_str()).into_bytes()
    }

    /// Runs `work` on the table off the async workers.
    async fn with<T: Send + 'static>(
        &self,
        work: impl FnOnce(&Table) -> Result<T, StorageError> + Send + 'static,
    ) -> Result<T, StorageError> {
        let table = self.table.clone();
        blocking(move || work(&table)).await
    }
}

#[async_trait::async_trait]
impl GrantStore for SledGrants {
    async fn put(&self, kind: Kind, key: &str, record: &Record) -> Result<(), StorageError> {
        let (k, record) = (Self::key(kind, key), record.clone());
        self.with(move |t| t.put(&k, &record)).await
    }

    async fn get(&self, kind: Kind, key: &str) -> Result<Option<Record>, StorageError> {
        let k = Self::key(kind, key);
        self.with(move |t| t.get(&k)).await
    }

    async fn spend(&self, kind: Kind, key: &str) -> Result<Spend, StorageError> {
        let k = Self::key(kind, key);
        self.with(move |t| {
            loop {
                let Some(bytes) = t.get_bytes(&k)? else {
                    return Ok(Spend::Missing);
                };
                let record: Record = t.get(&k)?.ok_or_else(|| StorageError::Inconsistent {
                    table: t.name().to_string(),
                    message: "an OAuth record vanished while it was read".into(),
                })?;
                if record.spent {
                    return Ok(Spend::Replayed(record));
                }
                let spent = Record {
                    spent: true,
                    ..record.clone()
                };
                let encoded = serde_json::to_vec(&spent).map_err(StorageError::Encode)?;
                let unchanged = |current: Option<&[u8]>| {
                    if current == Some(bytes.as_slice()) {
                        Ok(Vec::new())
                    } else {
                        Err(Changed)
                    }
                };
                match t.write_if(&k, unchanged, &[(k.clone(), encoded)])? {
                    Ok(()) => return Ok(Spend::Fresh(record)),
                    // Someone else wrote it first: read again (it is spent now).
                    Err(Changed) => continue,
                }
            }
        })
        .await
    }

    async fn remove(&self, kind: Kind, key: &str) -> Result<bool, StorageError> {
        let k = Self::key(kind, key);
        self.with(move |t| t.remove(&k)).await
    }

    async fn count_live(&self, kind: Kind, now_ms: u64) -> Result<u64, StorageError> {
        let prefix = Self::key(kind, "");
        self.with(move |t| {
            let records = t.scan_prefix::<Record>(&prefix)?;
            Ok(records.iter().filter(|(_, r)| r.expires_ms > now_ms).count() as u64)
        })
        .await
    }

    async fn purge(&self, before_ms: u64) -> Result<u64, StorageError> {
        self.with(move |t| {
            let expired: Vec<Vec<u8>> = t
                .scan_prefix::<Record>(b"")?
                .into_iter()
                .filter(|(_, r)| r.expires_ms < before_ms)
                .map(|(k, _)| k)
                .collect();
            t.rewrite::<()>(&expired, &[])?;
            Ok(expired.len() as u64)
        })
        .await
    }
}

#[cfg(test)]
mod tests {
    use super::SledGrants;
    use crate::oauth::store::conformance;
    use crate::storage::Storage;
    use std::sync::Arc;

    #[tokio::test]
    async fn conformance() {
        let storage = Storage::temporary().unwrap();
        let store = Arc::new(SledGrants::open(&storage).unwrap());
        conformance::run(store.clone(), store).await;
    }
}
