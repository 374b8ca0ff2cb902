//! The PostgreSQL MCP session store, shared by every replica:
//! `wasmhub_mcp_sessions` (one row per session: id, caller, negotiated version,
//! what the client declared, created and last seen by the database's clock) and
//! `wasmhub_mcp_keys` (the `requestState` key, created by the first replica that
//! starts and read by every other). Opening a session holds a transaction-level
//! advisory lock, so the bound (`server.mcp_max_sessions`) holds when several
//! replicas open sessions at once; the idle expiry is checked against the
//! database's clock on every use.

use super::SessionLimits;
use super::{McpSessionStore, StoredSession};
use crate::storage::{Postgres, StorageError};
use crate::surfaces::mcp::approval::McpClient;
use crate::surfaces::mcp::revision;

/// The schema, one step per version (`Postgres::migrate`).
const MIGRATIONS: &[&str] = &["CREATE TABLE wasmhub_mcp_sessions (
        id text PRIMARY KEY,
        caller text NOT NULL,
        version text NOT NULL,
        client_name text NOT NULL,
        elicitation boolean NOT NULL,
        created timestamptz NOT NULL DEFAULT clock_timestamp(),
        last_seen timestamptz NOT NULL DEFAULT clock_timestamp()
    );
    CREATE INDEX wasmhub_mcp_sessions_last_seen ON wasmhub_mcp_sessions (last_seen);
    CREATE TABLE wasmhub_mcp_keys (
        name text PRIMARY KEY,
        key bytea NOT NULL
    )"];

/// Serializes session opens across replicas (`pg_advisory_xact_lock`).
const OPEN_LOCK: i64 = 0x7761_736d_6d63_7001;
/// The row of `wasmhub_mcp_keys` holding the `requestState` key.
const STATE_KEY: &str = "request_state";
/// "Older than the idle TTL", the TTL in milliseconds as the parameter.
const EXPIRED: &str = "last_seen < clock_timestamp() - $1::bigint * interval '1 millisecond'";

/// MCP sessions in PostgreSQL.
pub(crate) struct PgMcpSessions {
    pg: Postgres,
    max_sessions: i64,
    idle_ms: i64,
}

impl PgMcpSessions {
    /// The store on `pg` with `limits`, its tables created or migrated first.
    pub(crate) async fn open(pg: Postgres, limits: SessionLimits) -> Result<PgMcpSessions, StorageError> {
        pg.migrate("mcp_sessions", MIGRATIONS).await?;
        Ok(PgMcpSessions {
            pg,
            max_sessions: limits.max_sessions.max(1).min(i64::MAX as usize) as i64,
            idle_ms: limits.idle_ttl.as_millis().min(i64::MAX as u128) as i64,
        })
    }
}

#[async_trait::async_trait]
impl McpSessionStore for PgMcpSessions {
    async fn open(&self, id: &str, session: StoredSession) -> Result<Vec<String>, StorageError> {
        let mut client = self.pg.client().await?;
        let tx = client
            .transaction()
            .await
            .map_err(StorageError::pg("begin opening an MCP session"))?;
        tx.execute("SELECT pg_advisory_xact_lock($1)", &[&OPEN_LOCK])
            .await
            .map_err(StorageError::pg("lock the MCP session table"))?;
        let sql = format!("DELETE FROM wasmhub_mcp_sessions WHERE {EXPIRED} RETURNING id");
        let mut removed: Vec<String> = tx
            .query(&sql, &[&self.idle_ms])
            .await
            .map_err(StorageError::pg("sweep expired MCP sessions"))?
            .iter()
            .map(|row| row.get(0))
            .collect();
        // Room for the new one: the least recently used go.
        let evicted = tx
            .query(
                "DELETE FROM wasmhub_mcp_sessions WHERE id IN (
                   SELECT id FROM wasmhub_mcp_sessions ORDER BY last_seen
                   LIMIT greatest((SELECT count(*) FROM wasmhub_mcp_sessions) - $1 + 1, 0))
                 RETURNING id",
                &[&self.max_sessions],
            )
            .await
            .map_err(StorageError::pg("evict MCP sessions"))?;
        removed.extend(evicted.iter().map(|row| row.get::<_, String>(0)));
        tx.execute(
            "INSERT INTO wasmhub_mcp_sessions (id, caller, version, client_name, elicitation)
             VALUES ($1, $2, $3, $4, $5)",
            &[
                &id,
                &session.caller,
                &session.version,
                &session.client.name,
                &session.client.elicitation,
            ],
        )
        .await
        .map_err(StorageError::pg("store an MCP session"))?;
        tx.commit()
            .await
            .map_err(StorageError::pg("commit an MCP session"))?;
        Ok(removed)
    }

    async fn touch(&self, id: &str, caller: &str) -> Result<Option<StoredSession>, StorageError> {
        let client = self.pg.client().await?;
        let sql = format!(
            "UPDATE wasmhub_mcp_sessions SET last_seen = clock_timestamp()
             WHERE id = $2 AND caller = $3 AND NOT ({EXPIRED})
             RETURNING version, client_name, elicitation"
        );
        let row = client
            .query_opt(&sql, &[&self.idle_ms, &id, &caller])
            .await
            .map_err(StorageError::pg("use an MCP session"))?;
        let Some(row) = row else {
            let sql = format!("DELETE FROM wasmhub_mcp_sessions WHERE id = $2 AND caller = $3 AND {EXPIRED}");
            client
                .execute(&sql, &[&self.idle_ms, &id, &caller])
                .await
                .map_err(StorageError::pg("drop an expired MCP session"))?;
            return Ok(None);
        };
        let stored: &str = row.get(0);
        let version = revision::handshake_version(stored).ok_or_else(|| StorageError::Inconsistent {
            table: "wasmhub_mcp_sessions".into(),
            message: format!("session {id} has the unknown protocol version {stored:?}"),
        })?;
        Ok(Some(StoredSession {
            caller: caller.to_string(),
            version,
            client: McpClient {
                name: row.get(1),
                elicitation: row.get(2),
            },
        }))
    }

    async fn close(&self, id: &str, caller: &str) -> Result<bool, StorageError> {
        let client = self.pg.client().await?;
        let n = client
            .execute(
                "DELETE FROM wasmhub_mcp_sessions WHERE id = $1 AND caller = $2",
                &[&id, &caller],
            )
            .await
            .map_err(StorageError::pg("close an MCP session"))?;
        Ok(n == 1)
    }

    async fn state_key(&self) -> Result<Vec<u8>, StorageError> {
        let mut key = vec![0u8; 32];
        getrandom::fill(&mut key).expect("the system random generator works");
        let client = self.pg.client().await?;
        // The first replica's key wins; every replica reads the stored one.
        client
            .execute(
                "INSERT INTO wasmhub_mcp_keys (name, key) VALUES ($1, $2) ON CONFLICT (name) DO NOTHING",
                &[&STATE_KEY, &key],
            )
            .await
            .map_err(StorageError::pg("store the requestState key"))?;
        let row = client
            .query_one("SELECT key FROM wasmhub_mcp_keys WHERE name = $1", &[&STATE_KEY])
            .await
            .map_err(StorageError::pg("read the requestState key"))?;
        Ok(row.get(0))
    }
}
