//! Versioned schemas: each store names its component and lists the SQL that
//! takes its schema from one version to the next; `wasmhub_schema` records where
//! each component is. Migrations run in one transaction under an advisory lock,
//! so replicas starting together apply each step exactly once, and the table
//! itself is created under that lock too.

use super::Postgres;
use crate::storage::StorageError;

/// The advisory lock every migration holds (an arbitrary constant: "wasmhub").
const LOCK: i64 = 0x0077_6173_6d68_7562;

pub(super) async fn run(
    pg: &Postgres,
    component: &'static str,
    steps: &[&'static str],
) -> Result<(), StorageError> {
    let mut client = pg.client().await?;
    let tx = client
        .transaction()
        .await
        .map_err(StorageError::pg("begin a migration"))?;
    tx.execute("SELECT pg_advisory_xact_lock($1)", &[&LOCK])
        .await
        .map_err(StorageError::pg("take the migration lock"))?;
    tx.batch_execute(
        "CREATE TABLE IF NOT EXISTS wasmhub_schema (component text PRIMARY KEY, version integer NOT NULL)",
    )
    .await
    .map_err(StorageError::pg("create wasmhub_schema"))?;
    let found: i32 = tx
        .query_opt(
            "SELECT version FROM wasmhub_schema WHERE component = $1",
            &[&component],
        )
        .await
        .map_err(StorageError::pg("read the schema version"))?
        .map(|row| row.get(0))
        .unwrap_or(0);
    let current = usize::try_from(found).unwrap_or(0);
    if current > steps.len() {
        return Err(StorageError::SchemaTooNew {
            component: component.to_string(),
            found,
            known: steps.len(),
        });
    }
    if current == steps.len() {
        return Ok(());
    }
    for step in &steps[current..] {
        tx.batch_execute(step)
            .await
            .map_err(StorageError::pg("apply a schema migration"))?;
    }
    let version = steps.len() as i32;
    tx.execute(
        "INSERT INTO wasmhub_schema (component, version) VALUES ($1, $2)
         ON CONFLICT (component) DO UPDATE SET version = EXCLUDED.version",
        &[&component, &version],
    )
    .await
    .map_err(StorageError::pg("record the schema version"))?;
    tx.commit()
        .await
        .map_err(StorageError::pg("commit a migration"))?;
    crate::info!("storage: {component} schema at version {version} (was {found})");
    Ok(())
}
