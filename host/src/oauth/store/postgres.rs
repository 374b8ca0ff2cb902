//! The PostgreSQL store, shared by every replica: `wasmhub_oauth`, one row per
//! record (kind, key, JSON, expiry, spent). Spending is one `UPDATE … WHERE NOT
//! spent`, so exactly one replica redeems a code or rotates a refresh token.

use super::{GrantStore, Kind, Record, Spend};
use crate::storage::{Postgres, StorageError};

/// The schema, one step per version (`Postgres::migrate`).
const MIGRATIONS: &[&str] = &["CREATE TABLE wasmhub_oauth (
        kind text NOT NULL,
        key text NOT NULL,
        value text NOT NULL,
        expires_ms bigint NOT NULL,
        spent boolean NOT NULL DEFAULT false,
        PRIMARY KEY (kind, key)
    );
    CREATE INDEX wasmhub_oauth_expiry ON wasmhub_oauth (expires_ms)"];

/// The OAuth records in PostgreSQL.
pub(crate) struct PgGrants {
    pg: Postgres,
}

impl PgGrants {
    pub(crate) async fn open(pg: Postgres) -> Result<PgGrants, StorageError> {
        pg.migrate("oauth", MIGRATIONS).await?;
        Ok(PgGrants { pg })
    }
}

fn ms(v: u64) -> i64 {
    v.min(i64::MAX as u64) as i64
}

fn record(row: &tokio_postgres::Row) -> Result<Record, StorageError> {
    let text: String = row.get(0);
    let value = serde_json::from_str(&text).map_err(|source| StorageError::Corrupt {
        table: "wasmhub_oauth".into(),
        source,
    })?;
    Ok(Record {
        value,
        expires_ms: row.get::<_, i64>(1).max(0) as u64,
        spent: row.get(2),
    })
}

#[async_trait::async_trait]
impl GrantStore for PgGrants {
    async fn put(&self, kind: Kind, key: &str, r: &Record) -> Result<(), StorageError> {
        let value = serde_json::to_string(&r.value).map_err(StorageError::Encode)?;
        self.pg
            .client()
            .await?
            .execute(
                "INSERT INTO wasmhub_oauth (kind, key, value, expires_ms, spent) VALUES ($1, $2, $3, $4, $5)
                 ON CONFLICT (kind, key) DO UPDATE
                 SET value = EXCLUDED.value, expires_ms = EXCLUDED.expires_ms, spent = EXCLUDED.spent",
                &[&kind.as_str(), &key, &value, &ms(r.expires_ms), &r.spent],
            )
            .await
            .map_err(StorageError::pg("store an OAuth record"))?;
        Ok(())
    }

    async fn get(&self, kind: Kind, key: &str) -> Result<Option<Record>, StorageError> {
        let row = self
            .pg
            .client()
            .await?
            .query_opt(
                "SELECT value, expires_ms, spent FROM wasmhub_oauth WHERE kind = $1 AND key = $2",
                &[&kind.as_str(), &key],
            )
            .await
            .map_err(StorageError::pg("read an OAuth record"))?;
        row.as_ref().map(record).transpose()
    }

    async fn spend(&self, kind: Kind, key: &str) -> Result<Spend, StorageError> {
        let client = self.pg.client().await?;
        let fresh = client
            .query_opt(
                "UPDATE wasmhub_oauth SET spent = true WHERE kind = $1 AND key = $2 AND NOT spent
                 RETURNING value, expires_ms, false",
                &[&kind.as_str(), &key],
            )
            .await
            .map_err(StorageError::pg("spend an OAuth record"))?;
        if let Some(row) = fresh {
            return Ok(Spend::Fresh(record(&row)?));
        }
        let row = client
            .query_opt(
                "SELECT value, expires_ms, spent FROM wasmhub_oauth WHERE kind = $1 AND key = $2",
                &[&kind.as_str(), &key],
            )
            .await
            .map_err(StorageError::pg("read a spent OAuth record"))?;
        Ok(match row {
            Some(row) => Spend::Replayed(record(&row)?),
            None => Spend::Missing,
        })
    }

    async fn remove(&self, kind: Kind, key: &str) -> Result<bool, StorageError> {
        let n = self
            .pg
            .client()
            .await?
            .execute(
                "DELETE FROM wasmhub_oauth WHERE kind = $1 AND key = $2",
                &[&kind.as_str(), &key],
            )
            .await
            .map_err(StorageError::pg("remove an OAuth record"))?;
        Ok(n > 0)
    }

    async fn count_live(&self, kind: Kind, now_ms: u64) -> Result<u64, StorageError> {
        let row = self
            .pg
            .client()
            .await?
            .query_one(
                "SELECT count(*) FROM wasmhub_oauth WHERE kind = $1 AND expires_ms > $2",
                &[&kind.as_str(), &ms(now_ms)],
            )
            .await
            .map_err(StorageError::pg("count OAuth records"))?;
        Ok(row.get::<_, i64>(0).max(0) as u64)
    }

    async fn purge(&self, before_ms: u64) -> Result<u64, StorageError> {
        let n = self
            .pg
            .client()
            .await?
            .execute(
                "DELETE FROM wasmhub_oauth WHERE expires_ms < $1",
                &[&ms(before_ms)],
            )
            .await
            .map_err(StorageError::pg("purge expired OAuth records"))?;
        Ok(n)
    }
}

#[cfg(test)]
mod tests {
    use super::PgGrants;
    use crate::oauth::store::conformance;
    use crate::storage::postgres::test_database;
    use std::sync::Arc;

    #[tokio::test]
    async fn conformance_between_two_replicas() {
        let pg = test_database().await;
        let a = Arc::new(PgGrants::open(pg.clone()).await.unwrap());
        // Migrating again is a no-op, as for a second replica starting.
        let b = Arc::new(PgGrants::open(pg).await.unwrap());
        conformance::run(a, b).await;
    }
}
