//! The PostgreSQL store, shared by every replica: `wasmhub_secrets`, one row per
//! (plugin, name) with the sealed bytes and when they were set.

use super::{Sealed, SecretStore, StoredName};
use crate::storage::{Postgres, StorageError};

/// The schema, one step per version (`Postgres::migrate`).
const MIGRATIONS: &[&str] = &["CREATE TABLE wasmhub_secrets (
        plugin text NOT NULL,
        name text NOT NULL,
        sealed bytea NOT NULL,
        updated_ms bigint NOT NULL,
        PRIMARY KEY (plugin, name)
    )"];

/// The sealed secrets in PostgreSQL.
pub(super) struct PgSecrets {
    pg: Postgres,
}

impl PgSecrets {
    pub(super) async fn open(pg: Postgres) -> Result<PgSecrets, StorageError> {
        pg.migrate("secrets", MIGRATIONS).await?;
        Ok(PgSecrets { pg })
    }
}

fn ms(v: u64) -> i64 {
    v.min(i64::MAX as u64) as i64
}

#[async_trait::async_trait]
impl SecretStore for PgSecrets {
    async fn put(&self, plugin: &str, name: &str, sealed: &Sealed) -> Result<(), StorageError> {
        self.pg
            .client()
            .await?
            .execute(
                "INSERT INTO wasmhub_secrets (plugin, name, sealed, updated_ms) VALUES ($1, $2, $3, $4)
                 ON CONFLICT (plugin, name) DO UPDATE
                 SET sealed = EXCLUDED.sealed, updated_ms = EXCLUDED.updated_ms",
                &[&plugin, &name, &sealed.bytes, &ms(sealed.updated_ms)],
            )
            .await
            .map_err(StorageError::pg("store a sealed secret"))?;
        Ok(())
    }

    async fn get(&self, plugin: &str, name: &str) -> Result<Option<Sealed>, StorageError> {
        let row = self
            .pg
            .client()
            .await?
            .query_opt(
                "SELECT sealed, updated_ms FROM wasmhub_secrets WHERE plugin = $1 AND name = $2",
                &[&plugin, &name],
            )
            .await
            .map_err(StorageError::pg("read a sealed secret"))?;
        Ok(row.map(|row| Sealed {
            bytes: row.get(0),
            updated_ms: row.get::<_, i64>(1).max(0) as u64,
        }))
    }

    async fn list(&self, plugin: Option<&str>) -> Result<Vec<StoredName>, StorageError> {
        let rows = self
            .pg
            .client()
            .await?
            .query(
                "SELECT plugin, name, updated_ms FROM wasmhub_secrets
                 WHERE $1::text IS NULL OR plugin = $1 ORDER BY plugin, name",
                &[&plugin],
            )
            .await
            .map_err(StorageError::pg("list sealed secrets"))?;
        Ok(rows
            .iter()
            .map(|row| StoredName {
                plugin: row.get(0),
                name: row.get(1),
                updated_ms: row.get::<_, i64>(2).max(0) as u64,
            })
            .collect())
    }

    async fn remove(&self, plugin: &str, name: &str) -> Result<bool, StorageError> {
        let n = self
            .pg
            .client()
            .await?
            .execute(
                "DELETE FROM wasmhub_secrets WHERE plugin = $1 AND name = $2",
                &[&plugin, &name],
            )
            .await
            .map_err(StorageError::pg("remove a sealed secret"))?;
        Ok(n > 0)
    }
}

#[cfg(test)]
mod tests {
    use super::PgSecrets;
    use crate::runtime::secrets::store::conformance;
    use crate::storage::postgres::test_database;
    use std::sync::Arc;

    #[tokio::test]
    async fn conformance_between_two_replicas() {
        let pg = test_database().await;
        let a = Arc::new(PgSecrets::open(pg.clone()).await.unwrap());
        let b = Arc::new(PgSecrets::open(pg).await.unwrap());
        conformance::run(a, b).await;
    }
}
