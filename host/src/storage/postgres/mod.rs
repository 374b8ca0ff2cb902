//! The PostgreSQL backend's handle: a bounded pool of connections to the
//! database in the environment variable `storage.url_env` names, shared by every
//! store of this replica.
//!
//! - `migrate`: each store's versioned schema, applied under an advisory lock so
//!   replicas starting at once are safe;
//! - `listen`: a dedicated connection delivering `NOTIFY` payloads of one channel.
//!
//! Connections are plain TCP (no TLS connector is built in; see the README's
//! "Running several replicas"). A connection that broke is dropped when it comes
//! back to the pool, and the next checkout opens a fresh one.

mod listen;
mod migrate;

pub use listen::Notifications;

use super::StorageError;
use crate::config::StorageConfig;
use std::ops::{Deref, DerefMut};
use std::sync::{Arc, Mutex};
use std::time::Duration;
use tokio::sync::{OwnedSemaphorePermit, Semaphore};
use tokio_postgres::{Client, NoTls};

/// A pool of connections to one database. Cheap to clone.
#[derive(Clone)]
pub struct Postgres {
    pool: Arc<Pool>,
}

struct Pool {
    config: tokio_postgres::Config,
    idle: Mutex<Vec<Client>>,
    /// One permit per connection that may be open (`storage.pool_size`).
    permits: Arc<Semaphore>,
    pool_size: usize,
    wait: Duration,
}

/// A connection checked out of the pool; it goes back when dropped.
pub struct PgClient {
    client: Option<Client>,
    pool: Arc<Pool>,
    _permit: OwnedSemaphorePermit,
}

impl Postgres {
    /// A pool for the database in the variable `config.url_env` names. Connects
    /// once to fail early on a wrong URL or an unreachable server.
    pub async fn connect(config: &StorageConfig) -> Result<Postgres, StorageError> {
        let url = std::env::var(&config.url_env).map_err(|_| StorageError::MissingUrl {
            env: config.url_env.clone(),
        })?;
        let pg_config: tokio_postgres::Config = url
            .parse()
            .map_err(StorageError::pg("parse the connection string"))?;
        let pg = Postgres::with_config(
            pg_config,
            config.pool_size,
            Duration::from_millis(config.connect_timeout_ms),
        );
        drop(pg.client().await?);
        Ok(pg)
    }

    fn with_config(config: tokio_postgres::Config, pool_size: usize, wait: Duration) -> Postgres {
        Postgres {
            pool: Arc::new(Pool {
                config,
                idle: Mutex::new(Vec::new()),
                permits: Arc::new(Semaphore::new(pool_size)),
                pool_size,
                wait,
            }),
        }
    }

    /// A pooled connection: an idle one, or a new one while fewer than
    /// `storage.pool_size` are open; waits at most `storage.connect_timeout_ms`.
    pub async fn client(&self) -> Result<PgClient, StorageError> {
        let pool = &self.pool;
        let timeout = StorageError::PoolTimeout {
            pool_size: pool.pool_size,
            waited_ms: pool.wait.as_millis() as u64,
        };
        let permit = match tokio::time::timeout(pool.wait, pool.permits.clone().acquire_owned()).await {
            Ok(Ok(permit)) => permit,
            Ok(Err(_)) => return Err(StorageError::Shutdown),
            Err(_) => return Err(timeout),
        };
        let idle = {
            let mut idle = pool.idle.lock().unwrap_or_else(|p| p.into_inner());
            std::iter::from_fn(|| idle.pop()).find(|c| !c.is_closed())
        };
        let client = match idle {
            Some(client) => client,
            None => match tokio::time::timeout(pool.wait, open(&pool.config)).await {
                Ok(client) => client?,
                Err(_) => return Err(timeout),
            },
        };
        Ok(PgClient {
            client: Some(client),
            pool: pool.clone(),
            _permit: permit,
        })
    }

    /// Brings the schema of `component` to version `steps.len()`: `steps[i]` takes
    /// it from version `i` to `i + 1`. Call once when a store opens.
    pub async fn migrate(&self, component: &'static str, steps: &[&'static str]) -> Result<(), StorageError> {
        migrate::run(self, component, steps).await
    }

    /// Deletes all but the newest `keep` rows of `table` (by its `id` column),
    /// once it holds more than `keep + slack`: a retention every replica may apply
    /// at any time, whoever wrote the rows.
    pub async fn keep_newest(
        &self,
        table: &'static str,
        keep: usize,
        slack: usize,
    ) -> Result<(), StorageError> {
        let client = self.client().await?;
        let sql = format!(
            "DELETE FROM {table}
             WHERE id <= (SELECT id FROM {table} ORDER BY id DESC OFFSET $1 LIMIT 1)
               AND EXISTS (SELECT 1 FROM {table} ORDER BY id DESC OFFSET $2 LIMIT 1)"
        );
        client
            .execute(&sql, &[&(keep as i64), &(keep.saturating_add(slack) as i64)])
            .await
            .map_err(StorageError::pg("trim to retention"))?;
        Ok(())
    }

    /// A dedicated connection that listens on `channel` (`[a-z0-9_]`).
    pub async fn listen(&self, channel: &str) -> Result<Notifications, StorageError> {
        listen::start(&self.pool.config, channel).await
    }
}

/// The thread every PostgreSQL connection of the process lives on: a socket
/// belongs to the runtime that opened it, and the stores' writer threads and the
/// hub's workers both use the pool, so connections must not depend on either
/// (a hub dropped on its runtime's last thread waits for its writers). Never
/// dropped: a runtime cannot be dropped inside another.
pub(super) fn io() -> &'static tokio::runtime::Handle {
    static IO: std::sync::OnceLock<tokio::runtime::Runtime> = std::sync::OnceLock::new();
    IO.get_or_init(|| {
        tokio::runtime::Builder::new_multi_thread()
            .worker_threads(1)
            .thread_name("wasmhub-pg")
            .enable_all()
            .build()
            .expect("the PostgreSQL I/O thread starts")
    })
    .handle()
}

/// Opens one connection on the I/O thread and drives it there until it closes.
async fn open(config: &tokio_postgres::Config) -> Result<Client, StorageError> {
    let config = config.clone();
    let opened = io().spawn(async move {
        let (client, connection) = config.connect(NoTls).await?;
        tokio::spawn(async move {
            if let Err(e) = connection.await {
                crate::warn!("storage: a PostgreSQL connection closed: {e}");
            }
        });
        Ok(client)
    });
    match opened.await {
        Ok(client) => client.map_err(StorageError::pg("connect")),
        Err(_) => Err(StorageError::Shutdown),
    }
}

impl Deref for PgClient {
    type Target = Client;
    fn deref(&self) -> &Client {
        self.client.as_ref().expect("present until dropped")
    }
}

impl DerefMut for PgClient {
    fn deref_mut(&mut self) -> &mut Client {
        self.client.as_mut().expect("present until dropped")
    }
}

impl Drop for PgClient {
    fn drop(&mut self) {
        if let Some(client) = self.client.take()
            && !client.is_closed()
        {
            self.pool
                .idle
                .lock()
                .unwrap_or_else(|p| p.into_inner())
                .push(client);
        }
    }
}

/// A fresh, empty database on the server in `WASMHUB_TEST_DATABASE_URL`, for one
/// test (the test command starts that server; see `scripts/pg.sh`).
#[cfg(test)]
pub(crate) async fn test_database() -> Postgres {
    use std::sync::atomic::{AtomicUsize, Ordering};
    static NEXT: AtomicUsize = AtomicUsize::new(0);
    let url = std::env::var("WASMHUB_TEST_DATABASE_URL").expect(
        "WASMHUB_TEST_DATABASE_URL must name a PostgreSQL server for the --features postgres tests \
         (scripts/test.sh starts one)",
    );
    let mut config: tokio_postgres::Config = url.parse().expect("WASMHUB_TEST_DATABASE_URL parses");
    let admin = open(&config)
        .await
        .expect("the test PostgreSQL server accepts connections");
    let name = format!(
        "wasmhub_test_{}_{}_{}",
        std::process::id(),
        NEXT.fetch_add(1, Ordering::Relaxed),
        crate::ids::new_id("db")
            .trim_start_matches("db_")
            .get(..8)
            .unwrap_or("0")
    );
    admin
        .batch_execute(&format!("CREATE DATABASE {name}"))
        .await
        .expect("the test database is created");
    config.dbname(&name);
    Postgres::with_config(config, 4, Duration::from_secs(10))
}

#[cfg(test)]
mod tests;
