//! The embedded store: one sled table `secrets`, key `{plugin}/{name}` (a plugin
//! name has no `/`), value the [`Sealed`] record as JSON.

use super::{Sealed, SecretStore, StoredName};
use crate::storage::{Storage, StorageError, Table, blocking};

/// The sealed secrets in the embedded database.
pub(super) struct SledSecrets {
    table: Table,
}

impl SledSecrets {
    pub(super) fn open(storage: &Storage) -> Result<SledSecrets, StorageError> {
        Ok(SledSecrets {
            table: storage.table("secrets")?,
        })
    }

    fn key(plugin: &str, name: &str) -> Vec<u8> {
        format!("{plugin}/{name}").into_bytes()
    }

    async fn with<T: Send + 'static>(
        &self,
        work: impl FnOnce(&Table) -> Result<T, StorageError> + Send + 'static,
    ) -> Result<T, StorageError> {
        let table = self.table.clone();
        blocking(move || work(&table)).await
    }
}

#[async_trait::async_trait]
impl SecretStore for SledSecrets {
    async fn put(&self, plugin: &str, name: &str, sealed: &Sealed) -> Result<(), StorageError> {
        let (k, sealed) = (Self::key(plugin, name), sealed.clone());
        self.with(move |t| {
            t.put(&k, &sealed)?;
            t.flush()
        })
        .await
    }

    async fn get(&self, plugin: &str, name: &str) -> Result<Option<Sealed>, StorageError> {
        let k = Self::key(plugin, name);
        self.with(move |t| t.get(&k)).await
    }

    async fn list(&self, plugin: Option<&str>) -> Result<Vec<StoredName>, StorageError> {
        let prefix = plugin.map(|p| Self::key(p, "")).unwrap_or_default();
        self.with(move |t| {
            let mut names = Vec::new();
            for (key, sealed) in t.scan_prefix::<Sealed>(&prefix)? {
                let key = String::from_utf8_lossy(&key);
                if let Some((plugin, name)) = key.split_once('/') {
                    names.push(StoredName {
                        plugin: plugin.to_string(),
                        name: name.to_string(),
                        updated_ms: sealed.updated_ms,
                    });
                }
            }
            names.sort_by(|a, b| (&a.plugin, &a.name).cmp(&(&b.plugin, &b.name)));
            Ok(names)
        })
        .await
    }

    async fn remove(&self, plugin: &str, name: &str) -> Result<bool, StorageError> {
        let k = Self::key(plugin, name);
        self.with(move |t| {
            let existed = t.remove(&k)?;
            t.flush()?;
            Ok(existed)
        })
        .await
    }
}

#[cfg(test)]
mod tests {
    use super::SledSecrets;
    use crate::runtime::secrets::store::conformance;
    use crate::storage::Storage;
    use std::sync::Arc;

    #[tokio::test]
    async fn conformance() {
        let storage = Storage::temporary().unwrap();
        let store = Arc::new(SledSecrets::open(&storage).unwrap());
        conformance::run(store.clone(), store).await;
    }
}
