//! A watcher on this replica of a turn running on another: it reads the turn's
//! rows from its position (or, joining a long turn, the stored replay and the
//! rows after it), then waits for a notification, or re-reads every second (a
//! notification lost while the listening connection was replaced).

use super::{Inner, POLL, READ_ATTEMPTS};
use crate::agent::bus::RemoteFeed;
use crate::agent::live::FELL_BEHIND;
use crate::llm::UiChunk;
use crate::storage::StorageError;
use std::sync::Arc;
use tokio::sync::watch;

/// A watcher here of a turn running on another replica.
pub(super) struct Follower {
    pub(super) inner: Arc<Inner>,
    pub(super) turn_id: String,
    /// The position of the next chunk; 0 before the first read.
    pub(super) next: i64,
    pub(super) rx: watch::Receiver<u64>,
    pub(super) done: bool,
}

/// One read of a turn's rows.
enum Read {
    /// The chunks from the position asked for (or the replay and the chunks
    /// after it), the position after them, and whether the turn is over.
    Chunks {
        chunks: Vec<UiChunk>,
        next: i64,
        over: bool,
    },
    /// The rows from the position asked for are gone.
    Lagged,
}

#[async_trait::async_trait]
impl RemoteFeed for Follower {
    async fn next_batch(&mut self) -> Option<Vec<UiChunk>> {
        let mut failures = 0;
        while !self.done {
            self.rx.borrow_and_update();
            match self.inner.read(&self.turn_id, self.next).await {
                Ok(Read::Chunks { chunks, next, over }) => {
                    failures = 0;
                    self.done = over;
                    self.next = next;
                    if !chunks.is_empty() {
                        return Some(chunks);
                    }
                    if over {
                        break;
                    }
                }
                Ok(Read::Lagged) => {
                    self.done = true;
                    crate::warn!(
                        "turn bus: a watcher of turn {} fell behind its kept rows",
                        self.turn_id
                    );
                    return Some(vec![UiChunk::Error {
                        error_text: FELL_BEHIND.into(),
                    }]);
                }
                Err(e) => {
                    failures += 1;
                    crate::warn!("turn bus: cannot read turn {}: {e}", self.turn_id);
                    self.done = failures >= READ_ATTEMPTS;
                }
            }
            let _ = tokio::time::timeout(POLL, self.rx.changed()).await;
        }
        None
    }
}

fn corrupt(table: &str) -> impl FnOnce(serde_json::Error) -> StorageError + '_ {
    move |source| StorageError::Corrupt {
        table: table.into(),
        source,
    }
}

impl Inner {
    /// The chunks of `turn` from `from` on (from its stored replay when `from` is
    /// 0 and there is one), and whether it is over (ended, dead or gone), from one
    /// snapshot.
    async fn read(&self, turn: &str, from: i64) -> Result<Read, StorageError> {
        let client = self.pg.client().await?;
        // The turn's row first (its state, and the replay for a new watcher), then
        // the chunk rows in order.
        let rows = client
            .query(
                "WITH t AS (
                     SELECT ended IS NOT NULL OR alive_until <= now() AS over, replay_at, kept_from,
                            CASE WHEN $2::bigint = 0 THEN replay END AS replay
                     FROM wasmhub_chat_turns WHERE turn_id = $1
                 )
                 SELECT over, replay_at, kept_from, replay, NULL::bigint AS seq, NULL::text AS chunk FROM t
                 UNION ALL
                 SELECT NULL, NULL, NULL, NULL, c.seq, c.chunk
                 FROM t JOIN wasmhub_chat_turn_chunks c ON c.turn_id = $1
                  AND c.seq >= CASE WHEN $2::bigint = 0 THEN t.replay_at ELSE $2::bigint END
                 ORDER BY seq NULLS FIRST",
                &[&turn, &from],
            )
            .await
            .map_err(StorageError::pg("read turn chunks"))?;
        let Some(state) = rows.first().filter(|r| r.get::<_, Option<bool>>(0).is_some()) else {
            // The turn's row is gone: it ended long ago.
            return Ok(Read::Chunks {
                chunks: Vec::new(),
                next: from,
                over: true,
            });
        };
        let over: bool = state.get(0);
        let (replay_at, kept_from): (i64, i64) = (state.get(1), state.get(2));
        if from > 0 && from < kept_from {
            return Ok(Read::Lagged);
        }
        let mut chunks: Vec<UiChunk> = Vec::with_capacity(rows.len());
        let mut next = from;
        if let Some(replay) = state.get::<_, Option<&str>>(3) {
            chunks = serde_json::from_str(replay).map_err(corrupt("wasmhub_chat_turns"))?;
            next = replay_at;
        }
        for row in &rows[1..] {
            let text: &str = row.get(5);
            chunks.push(serde_json::from_str(text).map_err(corrupt("wasmhub_chat_turn_chunks"))?);
            next = row.get::<_, i64>(4) + 1;
        }
        Ok(Read::Chunks { chunks, next, over })
    }
}

impl Drop for Follower {
    fn drop(&mut self) {
        {
            let mut wakers = self.inner.wakers.lock().expect("wakers lock");
            if wakers.get(&self.turn_id).is_some_and(|w| w.receiver_count() <= 1) {
                wakers.remove(&self.turn_id);
            }
        }
        if self.done {
            return;
        }
        // The turn's replica counts this watcher gone (and may cancel the turn).
        let (inner, turn) = (self.inner.clone(), self.turn_id.clone());
        if let Ok(rt) = tokio::runtime::Handle::try_current() {
            rt.spawn(async move {
                if let Err(e) = inner.notify("l", &turn).await {
                    crate::warn!("turn bus: cannot tell turn {turn}'s replica a watcher left: {e}");
                }
            });
        }
    }
}
