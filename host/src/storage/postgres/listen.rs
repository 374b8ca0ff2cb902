//! `LISTEN`: one dedicated connection per listener, driven on its own task, its
//! notifications' payloads handed over in order. Notifications only wake a
//! reader; what changed is always read from the tables, so a listener that was
//! gone for a while re-reads from its last position and misses nothing.

use crate::storage::StorageError;
use tokio::sync::mpsc;
use tokio_postgres::{AsyncMessage, Client, NoTls};

/// The payloads of `NOTIFY` on one channel, in order.
pub struct Notifications {
    rx: mpsc::UnboundedReceiver<String>,
    /// Dropping the client closes the connection, which ends its task.
    _client: Client,
}

impl Notifications {
    /// The next payload; `None` once the connection is gone (listen again and
    /// re-read what may have changed meanwhile).
    pub async fn recv(&mut self) -> Option<String> {
        self.rx.recv().await
    }
}

/// Opens a connection, starts driving it, then `LISTEN`s on `channel`.
pub(super) async fn start(
    config: &tokio_postgres::Config,
    channel: &str,
) -> Result<Notifications, StorageError> {
    assert!(
        !channel.is_empty()
            && channel
                .bytes()
                .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'_'),
        "channel names are [a-z0-9_] identifiers chosen by the stores: {channel:?}"
    );
    let (client, mut connection) = config
        .connect(NoTls)
        .await
        .map_err(StorageError::pg("connect to listen"))?;
    let (tx, rx) = mpsc::unbounded_channel();
    tokio::spawn(async move {
        while let Some(message) = std::future::poll_fn(|cx| connection.poll_message(cx)).await {
            match message {
                Ok(AsyncMessage::Notification(n)) => {
                    if tx.send(n.payload().to_string()).is_err() {
                        break;
                    }
                }
                Ok(_) => {}
                Err(e) => {
                    crate::warn!("storage: a PostgreSQL LISTEN connection closed: {e}");
                    break;
                }
            }
        }
    });
    client
        .batch_execute(&format!("LISTEN {channel}"))
        .await
        .map_err(StorageError::pg("listen"))?;
    Ok(Notifications { rx, _client: client })
}
