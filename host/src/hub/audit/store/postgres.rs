//! The PostgreSQL audit store, shared by every replica: `wasmhub_audit`, one row
//! per record with an identity id (unique across writers, increasing in insert
//! order), the time it was written (the database's clock) and the record's JSON.
//! Recent means highest ids first; trimming deletes every row below the
//! retention boundary, which is safe with several writers trimming at once.

use super::AuditStore;
use crate::hub::audit::CallRecord;
use crate::hub::records::{RecordStore, SinceTrim};
use crate::storage::{Postgres, StorageError};

/// The schema, one step per version (`Postgres::migrate`).
const MIGRATIONS: &[&str] = &[
    "CREATE TABLE wasmhub_audit (
        id bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
        written timestamptz NOT NULL DEFAULT now(),
        record text NOT NULL
    )",
    // Each record's principal as a column, so one principal's records are read
    // by an index, not by parsing every record.
    "ALTER TABLE wasmhub_audit ADD COLUMN caller text;
    UPDATE wasmhub_audit SET caller = record::jsonb->>'caller';
    CREATE INDEX wasmhub_audit_caller ON wasmhub_audit (caller, id DESC)",
];

/// The audit log in PostgreSQL.
pub(crate) struct PgAudit {
    pg: Postgres,
    /// Records this writer appended since it last looked at the table's size.
    since_trim: SinceTrim,
}

impl PgAudit {
    /// The store on `pg`, its table created or migrated first.
    pub(crate) async fn open(pg: Postgres) -> Result<PgAudit, StorageError> {
        pg.migrate("audit", MIGRATIONS).await?;
        Ok(PgAudit {
            pg,
            since_trim: SinceTrim::default(),
        })
    }
}

#[async_trait::async_trait]
impl RecordStore for PgAudit {
    type Record = CallRecord;

    async fn append(&self, batch: Vec<CallRecord>) -> Result<Vec<CallRecord>, StorageError> {
        if batch.is_empty() {
            return Ok(batch);
        }
        let json = batch
            .iter()
            .map(serde_json::to_string)
            .collect::<Result<Vec<String>, _>>()
            .map_err(StorageError::Encode)?;
        let callers: Vec<&str> = batch.iter().map(|r| r.caller.as_str()).collect();
        let client = self.pg.client().await?;
        // Ids are drawn in the batch's order.
        client
            .execute(
                "INSERT INTO wasmhub_audit (record, caller)
                 SELECT r, c FROM unnest($1::text[], $2::text[]) WITH ORDINALITY AS b(r, c, n) ORDER BY n",
                &[&json, &callers],
            )
            .await
            .map_err(StorageError::pg("append audit records"))?;
        self.since_trim.appended(batch.len());
        Ok(batch)
    }

    async fn trim(&self, keep: usize, slack: usize) -> Result<(), StorageError> {
        if !self.since_trim.due(slack) {
            return Ok(());
        }
        self.pg.keep_newest("wasmhub_audit", keep, slack).await
    }
}

#[async_trait::async_trait]
impl AuditStore for PgAudit {
    async fn recent(&self, limit: usize, principal: Option<String>) -> Result<Vec<CallRecord>, StorageError> {
        let client = self.pg.client().await?;
        let limit = limit.min(i64::MAX as usize) as i64;
        let rows = match principal {
            None => {
                client
                    .query(
                        "SELECT record FROM wasmhub_audit ORDER BY id DESC LIMIT $1",
                        &[&limit],
                    )
                    .await
            }
            Some(p) => {
                client
                    .query(
                        "SELECT record FROM wasmhub_audit WHERE caller = $2 ORDER BY id DESC LIMIT $1",
                        &[&limit, &p],
                    )
                    .await
            }
        }
        .map_err(StorageError::pg("read recent audit records"))?;
        rows.iter()
            .map(|row| {
                serde_json::from_str(row.get::<_, &str>(0)).map_err(|source| StorageError::Corrupt {
                    table: "wasmhub_audit".into(),
                    source,
                })
            })
            .collect()
    }
}
