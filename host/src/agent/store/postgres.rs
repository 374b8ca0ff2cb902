//! The session store in PostgreSQL, shared by every replica.
//!
//! Tables (component `chat_sessions` of `wasmhub_schema`):
//! - `wasmhub_chat_sessions(id, record, version, updated_at, message_count,
//!   principal, stored_bytes)`: the [`SessionInfo`] as JSON text, with the columns
//!   the store sorts, checks and sums on (schema version 2 added the owner and size);
//! - `wasmhub_chat_messages(session_id, idx, message)`;
//! - `wasmhub_chat_approvals(session_id, id, approval)`;
//! - `wasmhub_chat_leases(session_id, owner, expires)`: expiries come from
//!   the database's clock, so replicas with skewed clocks agree.
//!
//! A save is one transaction: the record's `UPDATE ... WHERE version = expected`
//! (or an `INSERT ... ON CONFLICT DO NOTHING` for a new session) is the
//! compare-and-swap, then the changed messages are upserted and the surplus ones
//! deleted. A save that is not `durable` (the streaming saves between steps) turns
//! `synchronous_commit` off for its transaction: it does not wait for the WAL flush.

use super::{Conflict, IssuedApproval, Lease, SaveOutcome, SaveRequest, Session, SessionInfo, SessionStore};
use super::{handed_over, missing_messages, next_record, written};
use crate::agent::message::UiMessage;
use crate::hub::StoredUsage;
use crate::storage::{Postgres, StorageError};
use std::collections::HashSet;
use std::time::Duration;

const TABLE: &str = "wasmhub_chat_sessions";

/// The schema, one step per version.
const MIGRATIONS: &[&str] = &[
    "
    CREATE TABLE wasmhub_chat_sessions (
        id text PRIMARY KEY,
        record text NOT NULL,
        version bigint NOT NULL,
        updated_at bigint NOT NULL,
        message_count bigint NOT NULL
    );
    CREATE INDEX wasmhub_chat_sessions_recent ON wasmhub_chat_sessions (updated_at DESC, id COLLATE \"C\");
    CREATE TABLE wasmhub_chat_messages (
        session_id text NOT NULL REFERENCES wasmhub_chat_sessions (id) ON DELETE CASCADE,
        idx bigint NOT NULL,
        message text NOT NULL,
        PRIMARY KEY (session_id, idx)
    );
    CREATE TABLE wasmhub_chat_approvals (
        session_id text NOT NULL,
        id text NOT NULL,
        approval text NOT NULL,
        PRIMARY KEY (session_id, id)
    );
    CREATE TABLE wasmhub_chat_leases (
        session_id text PRIMARY KEY,
        owner text NOT NULL,
        expires timestamptz NOT NULL
    );
",
    "
    -- Sessions stored before sessions had owners belong to the local operator
    -- (their JSON record has no principal, which reads as `local` too).
    ALTER TABLE wasmhub_chat_sessions
        ADD COLUMN principal text NOT NULL DEFAULT 'local',
        ADD COLUMN stored_bytes bigint NOT NULL DEFAULT 0;
    CREATE INDEX wasmhub_chat_sessions_principal
        ON wasmhub_chat_sessions (principal, updated_at DESC, id COLLATE \"C\");
",
];

/// A lease's expiry in Unix milliseconds, as SQL.
const EXPIRES_MS: &str = "(extract(epoch FROM expires) * 1000)::bigint";

/// The PostgreSQL session store. Cheap to clone.
#[derive(Clone)]
pub(crate) struct PgChatSessions {
    pg: Postgres,
}

fn decode<T: serde::de::DeserializeOwned>(text: &str) -> Result<T, StorageError> {
    serde_json::from_str(text).map_err(|source| StorageError::Corrupt {
        table: TABLE.into(),
        source,
    })
}

fn encode<T: serde::Serialize>(value: &T) -> Result<String, StorageError> {
    serde_json::to_string(value).map_err(StorageError::Encode)
}

fn secs(ttl: Duration) -> f64 {
    ttl.as_secs_f64()
}

impl PgChatSessions {
    /// The store on `pg`, its schema created or migrated first.
    pub(crate) async fn open(pg: &Postgres) -> Result<PgChatSessions, StorageError> {
        pg.migrate("chat_sessions", MIGRATIONS).await?;
        Ok(PgChatSessions { pg: pg.clone() })
    }

    /// The stored version of session `id`, if it exists.
    async fn version(&self, id: &str) -> Result<Option<u64>, StorageError> {
        let client = self.pg.client().await?;
        let row = client
            .query_opt("SELECT version FROM wasmhub_chat_sessions WHERE id = $1", &[&id])
            .await
            .map_err(StorageError::pg("read a session's version"))?;
        Ok(row.map(|r| r.get::<_, i64>(0) as u64))
    }
}

#[async_trait::async_trait]
impl SessionStore for PgChatSessions {
    async fn info(&self, id: &str) -> Result<Option<SessionInfo>, StorageError> {
        let client = self.pg.client().await?;
        let row = client
            .query_opt("SELECT record FROM wasmhub_chat_sessions WHERE id = $1", &[&id])
            .await
            .map_err(StorageError::pg("read a session"))?;
        row.map(|r| decode(r.get::<_, &str>(0))).transpose()
    }

    async fn load(&self, id: &str) -> Result<Option<Session>, StorageError> {
        let client = self.pg.client().await?;
        // One statement: one snapshot of the record and its messages.
        let rows = client
            .query(
                "SELECT s.record, m.message FROM wasmhub_chat_sessions s
                 LEFT JOIN wasmhub_chat_messages m ON m.session_id = s.id AND m.idx < s.message_count
                 WHERE s.id = $1 ORDER BY m.idx",
                &[&id],
            )
            .await
            .map_err(StorageError::pg("load a session"))?;
        let Some(first) = rows.first() else {
            return Ok(None);
        };
        let info: SessionInfo = decode(first.get::<_, &str>(0))?;
        let messages = rows
            .iter()
            .filter_map(|r| r.get::<_, Option<&str>>(1))
            .map(decode::<UiMessage>)
            .collect::<Result<Vec<_>, _>>()?;
        if messages.len() != info.message_count {
            return Err(missing_messages(TABLE, &info, messages.len()));
        }
        Ok(Some(Session { info, messages }))
    }

    async fn list(&self, principal: Option<&str>) -> Result<Vec<SessionInfo>, StorageError> {
        let client = self.pg.client().await?;
        let rows = client
            .query(
                "SELECT record FROM wasmhub_chat_sessions WHERE $1::text IS NULL OR principal = $1
                 ORDER BY updated_at DESC, id COLLATE \"C\"",
                &[&principal],
            )
            .await
            .map_err(StorageError::pg("list sessions"))?;
        rows.iter().map(|r| decode(r.get::<_, &str>(0))).collect()
    }

    async fn stored_usage(&self, principal: &str) -> Result<StoredUsage, StorageError> {
        let client = self.pg.client().await?;
        let row = client
            .query_one(
                "SELECT count(*), coalesce(sum(stored_bytes), 0)::bigint FROM wasmhub_chat_sessions
                 WHERE principal = $1",
                &[&principal],
            )
            .await
            .map_err(StorageError::pg("sum a principal's sessions"))?;
        Ok(StoredUsage {
            sessions: row.get::<_, i64>(0) as u64,
            bytes: row.get::<_, i64>(1) as u64,
        })
    }

    async fn hand_over(&self, id: &str, principal: &str) -> Result<Option<SessionInfo>, StorageError> {
        let Some(info) = self.info(id).await? else {
            return Ok(None);
        };
        let given = handed_over(&info, principal);
        let client = self.pg.client().await?;
        let updated = client
            .execute(
                "UPDATE wasmhub_chat_sessions SET record = $2, version = $3, principal = $4
                 WHERE id = $1 AND version = $5",
                &[
                    &id,
                    &encode(&given)?,
                    &(given.version as i64),
                    &principal,
                    &(info.version as i64),
                ],
            )
            .await
            .map_err(StorageError::pg("hand a session over"))?;
        if updated == 0 {
            // Only the lease holder writes a session, and the caller holds it.
            return Err(StorageError::Inconsistent {
                table: TABLE.into(),
                message: format!("session {id} changed while it was handed over"),
            });
        }
        Ok(Some(given))
    }

    async fn save(&self, save: SaveRequest<'_>) -> Result<SaveOutcome, StorageError> {
        let info = next_record(&save);
        let (mut idx, mut messages) = (Vec::new(), Vec::new());
        for (i, m) in written(&save) {
            idx.push(i as i64);
            messages.push(encode(m)?);
        }
        let (record, expected) = (encode(&info)?, save.info.version);
        let (version, updated, count, bytes) = (
            info.version as i64,
            info.updated_at as i64,
            info.message_count as i64,
            info.stored_bytes as i64,
        );
        let mut client = self.pg.client().await?;
        let tx = client
            .transaction()
            .await
            .map_err(StorageError::pg("begin a session save"))?;
        if !save.durable {
            tx.batch_execute("SET LOCAL synchronous_commit = off")
                .await
                .map_err(StorageError::pg("begin a session save"))?;
        }
        let swapped = if expected == 0 {
            tx.execute(
                "INSERT INTO wasmhub_chat_sessions
                 (id, record, version, updated_at, message_count, stored_bytes, principal)
                 VALUES ($1, $2, $3, $4, $5, $6, $7) ON CONFLICT (id) DO NOTHING",
                &[
                    &info.id,
                    &record,
                    &version,
                    &updated,
                    &count,
                    &bytes,
                    &info.principal,
                ],
            )
            .await
        } else {
            // The owner is not written: only a hand-over changes it.
            tx.execute(
                "UPDATE wasmhub_chat_sessions
                 SET record = $2, version = $3, updated_at = $4, message_count = $5, stored_bytes = $6
                 WHERE id = $1 AND version = $7",
                &[
                    &info.id,
                    &record,
                    &version,
                    &updated,
                    &count,
                    &bytes,
                    &(expected as i64),
                ],
            )
            .await
        }
        .map_err(StorageError::pg("save a session"))?;
        if swapped == 0 {
            drop(tx);
            drop(client);
            return Ok(SaveOutcome::Conflict(Conflict {
                found: self.version(&info.id).await?,
                session_id: info.id,
                expected,
            }));
        }
        tx.execute(
            "DELETE FROM wasmhub_chat_messages WHERE session_id = $1 AND idx >= $2",
            &[&info.id, &count],
        )
        .await
        .map_err(StorageError::pg("save a session's messages"))?;
        tx.execute(
            "INSERT INTO wasmhub_chat_messages (session_id, idx, message)
             SELECT $1, * FROM UNNEST($2::bigint[], $3::text[])
             ON CONFLICT (session_id, idx) DO UPDATE SET message = EXCLUDED.message",
            &[&info.id, &idx, &messages],
        )
        .await
        .map_err(StorageError::pg("save a session's messages"))?;
        tx.commit()
            .await
            .map_err(StorageError::pg("commit a session save"))?;
        Ok(SaveOutcome::Saved(info))
    }

    async fn issue_approvals(&self, id: &str, issued: &[IssuedApproval]) -> Result<(), StorageError> {
        let ids: Vec<&str> = issued.iter().map(|a| a.id.as_str()).collect();
        let records = issued.iter().map(encode).collect::<Result<Vec<_>, _>>()?;
        let client = self.pg.client().await?;
        client
            .execute(
                "INSERT INTO wasmhub_chat_approvals (session_id, id, approval)
                 SELECT $1, * FROM UNNEST($2::text[], $3::text[])
                 ON CONFLICT (session_id, id) DO UPDATE SET approval = EXCLUDED.approval",
                &[&id, &ids, &records],
            )
            .await
            .map_err(StorageError::pg("record issued approvals"))?;
        Ok(())
    }

    async fn issued_approval(
        &self,
        id: &str,
        approval: &str,
    ) -> Result<Option<IssuedApproval>, StorageError> {
        let client = self.pg.client().await?;
        let row = client
            .query_opt(
                "SELECT approval FROM wasmhub_chat_approvals WHERE session_id = $1 AND id = $2",
                &[&id, &approval],
            )
            .await
            .map_err(StorageError::pg("read an issued approval"))?;
        row.map(|r| decode(r.get::<_, &str>(0))).transpose()
    }

    async fn delete(&self, id: &str) -> Result<bool, StorageError> {
        let mut client = self.pg.client().await?;
        let tx = client
            .transaction()
            .await
            .map_err(StorageError::pg("delete a session"))?;
        // The messages go with the record (ON DELETE CASCADE).
        let existed = tx
            .execute("DELETE FROM wasmhub_chat_sessions WHERE id = $1", &[&id])
            .await
            .map_err(StorageError::pg("delete a session"))?;
        tx.execute("DELETE FROM wasmhub_chat_approvals WHERE session_id = $1", &[&id])
            .await
            .map_err(StorageError::pg("delete a session's approvals"))?;
        tx.commit().await.map_err(StorageError::pg("delete a session"))?;
        Ok(existed > 0)
    }

    async fn acquire(&self, id: &str, owner: &str, ttl: Duration) -> Result<Lease, StorageError> {
        let client = self.pg.client().await?;
        let taken = format!(
            "INSERT INTO wasmhub_chat_leases AS l (session_id, owner, expires)
             VALUES ($1, $2, now() + $3::float8 * interval '1 second')
             ON CONFLICT (session_id) DO UPDATE SET owner = EXCLUDED.owner, expires = EXCLUDED.expires
             WHERE l.expires <= now()
             RETURNING {EXPIRES_MS}"
        );
        let held = format!("SELECT owner, {EXPIRES_MS} FROM wasmhub_chat_leases WHERE session_id = $1");
        // A lease released between the two statements is free: try again.
        for _ in 0..5 {
            let row = client
                .query_opt(&taken, &[&id, &owner, &secs(ttl)])
                .await
                .map_err(StorageError::pg("take a session lease"))?;
            if let Some(row) = row {
                return Ok(Lease::Acquired {
                    expires_ms: row.get::<_, i64>(0) as u64,
                });
            }
            let row = client
                .query_opt(&held, &[&id])
                .await
                .map_err(StorageError::pg("read a session lease"))?;
            if let Some(row) = row {
                return Ok(Lease::HeldBy {
                    owner: row.get(0),
                    expires_ms: row.get::<_, i64>(1) as u64,
                });
            }
        }
        Err(StorageError::Inconsistent {
            table: "wasmhub_chat_leases".into(),
            message: format!("the lease of session {id} changed hands faster than it could be read"),
        })
    }

    async fn renew(&self, id: &str, owner: &str, ttl: Duration) -> Result<bool, StorageError> {
        let client = self.pg.client().await?;
        let renewed = client
            .execute(
                "UPDATE wasmhub_chat_leases SET expires = now() + $3::float8 * interval '1 second'
                 WHERE session_id = $1 AND owner = $2",
                &[&id, &owner, &secs(ttl)],
            )
            .await
            .map_err(StorageError::pg("renew a session lease"))?;
        Ok(renewed > 0)
    }

    async fn release(&self, id: &str, owner: &str) -> Result<(), StorageError> {
        let client = self.pg.client().await?;
        client
            .execute(
                "DELETE FROM wasmhub_chat_leases WHERE session_id = $1 AND owner = $2",
                &[&id, &owner],
            )
            .await
            .map_err(StorageError::pg("release a session lease"))?;
        Ok(())
    }

    async fn leased(&self) -> Result<HashSet<String>, StorageError> {
        let client = self.pg.client().await?;
        let rows = client
            .query(
                "SELECT session_id FROM wasmhub_chat_leases WHERE expires > now()",
                &[],
            )
            .await
            .map_err(StorageError::pg("list session leases"))?;
        Ok(rows.iter().map(|r| r.get(0)).collect())
    }
}

#[cfg(test)]
mod tests {
    use super::PgChatSessions;
    use crate::agent::store::{SessionStore, conformance};
    use crate::storage::postgres::test_database;
    use std::sync::Arc;

    /// Two stores on one fresh database: two replicas.
    async fn two() -> (Arc<dyn SessionStore>, Arc<dyn SessionStore>) {
        let pg = test_database().await;
        let a = Arc::new(PgChatSessions::open(&pg).await.unwrap());
        // Migrating again is a no-op, as for a second replica starting.
        let b = Arc::new(PgChatSessions::open(&pg).await.unwrap());
        (a, b)
    }

    #[tokio::test]
    async fn conformance_save_load_list_delete() {
        conformance::save_load_list_delete(two().await.0).await;
    }

    #[tokio::test]
    async fn conformance_compare_and_swap_between_two_replicas() {
        let (a, b) = two().await;
        conformance::saves_are_compare_and_swap(a, b).await;
    }

    #[tokio::test]
    async fn conformance_principals_own_their_sessions() {
        let (a, b) = two().await;
        conformance::principals_own_their_sessions(a, b).await;
    }

    #[tokio::test]
    async fn conformance_leases_between_two_replicas() {
        let (a, b) = two().await;
        conformance::leases(a, b).await;
    }
}
