//! The relay: copies a turn running on this replica into the tables, chunk by
//! chunk, so watchers on other replicas can replay and follow it.
//!
//! The rows stay bounded like the turn's memory: once the chunks written since
//! the last replay outweigh `agent.resume_buffer_kb` (or the last replay, whichever
//! is more, so a long turn writes replays of total size linear in its length), the
//! relay stores a replay of the message at its position (`replay_at`, `replay`); a
//! new watcher starts there. Rows are kept for the watchers part way through, as a
//! turn keeps chunks for its slow readers, up to `agent.lagging_watcher_kb` of rows
//! (whole stretches between replays, `kept_from` the first kept); a watcher behind
//! that is told it fell behind. When the relay itself fell behind the turn (the
//! database slower than that limit allows), the chunks it skipped are only in the
//! replay: every row before it goes, and every watcher part way through is told.

use super::{CHANNEL, Inner, KEEP_ENDED_SECS, encode};
use crate::agent::live::{Lagged, LiveTurn, Position};
use crate::llm::UiChunk;
use crate::storage::StorageError;
use std::collections::VecDeque;
use std::sync::Arc;
use std::time::Duration;

/// The stretches of rows between replays that are kept, oldest first: where each
/// starts and how many bytes it holds.
struct KeptRows {
    stretches: VecDeque<(Position, usize)>,
    /// The most bytes kept (`agent.lagging_watcher_kb`), in whole stretches.
    limit: usize,
}

impl KeptRows {
    fn new(limit: usize) -> KeptRows {
        KeptRows {
            stretches: VecDeque::from([(0, 0)]),
            limit,
        }
    }

    fn written(&mut self, bytes: usize) {
        if let Some(last) = self.stretches.back_mut() {
            last.1 += bytes;
        }
    }

    /// A replay at `at`: the first position still kept.
    fn replayed(&mut self, at: Position) -> Position {
        self.stretches.push_back((at, 0));
        let mut kept: usize = self.stretches.iter().map(|s| s.1).sum();
        while kept > self.limit && self.stretches.len() > 1 {
            kept -= self.stretches.pop_front().map_or(0, |s| s.1);
        }
        self.stretches.front().map_or(at, |s| s.0)
    }

    /// A replay at `at` after chunks before it were skipped: nothing before it is kept.
    fn skipped_to(&mut self, at: Position) -> Position {
        self.stretches = VecDeque::from([(at, 0)]);
        at
    }
}

/// Copies a turn running here into the tables until it ends, then sets its end
/// marker and deletes its rows a minute later.
pub(super) async fn relay(inner: Arc<Inner>, turn_id: String, live: Arc<LiveTurn>) {
    let mut chunks = live.follow();
    // `pending` starts at `at`; written since the last replay: `since_replay` bytes.
    let (mut at, mut pending): (Position, Vec<UiChunk>) = (0, Vec::new());
    let (mut since_replay, mut replay_every) = (0, inner.limits.resume_buffer);
    let mut kept = KeptRows::new(inner.limits.lagging_watcher);
    let every = (inner.ttl / 3).max(Duration::from_millis(100));
    loop {
        match tokio::time::timeout(every, chunks.next_chunks()).await {
            Ok(Some(Ok(batch))) => pending.extend(batch),
            Ok(Some(Err(Lagged))) => {
                // The database fell behind by more than the budget: what was not
                // written is in the replay of the message as it is now.
                let (replay, head) = chunks.skip_to_head();
                pending.clear();
                let kept_from = kept.skipped_to(head);
                match inner.store_replay(&turn_id, head, &replay, kept_from).await {
                    Ok(_) => crate::warn!(
                        "turn bus: turn {turn_id} ran more than agent.lagging_watcher_kb ahead of the database; \
                         watchers elsewhere that were behind are told so"
                    ),
                    Err(e) => crate::warn!("turn bus: watchers elsewhere cannot follow turn {turn_id}: {e}"),
                }
                at = head;
                continue;
            }
            Ok(None) => break,
            Err(_quiet) => {
                if let Err(e) = inner.beat(&turn_id).await {
                    crate::warn!("turn bus: {e}");
                }
                continue;
            }
        }
        // Kept for the next batch when the database is unreachable.
        match inner.append(&turn_id, at, &pending).await {
            Ok(bytes) => {
                at += pending.len();
                since_replay += bytes;
                kept.written(bytes);
                pending.clear();
            }
            Err(e) => crate::warn!("turn bus: watchers elsewhere wait for chunks: {e}"),
        }
        if since_replay > replay_every
            && let Some(replay) = chunks.replay_here()
        {
            let kept_from = kept.replayed(at);
            match inner.store_replay(&turn_id, at, &replay, kept_from).await {
                Ok(bytes) => {
                    since_replay = 0;
                    replay_every = inner.limits.resume_buffer.max(bytes);
                }
                Err(e) => crate::warn!("turn bus: the turn's rows grow until a replay is stored: {e}"),
            }
        }
    }
    if !pending.is_empty()
        && let Err(e) = inner.append(&turn_id, at, &pending).await
    {
        crate::warn!("turn bus: watchers elsewhere miss the turn's last chunks: {e}");
    }
    if let Err(e) = inner.end(&turn_id).await {
        crate::warn!("turn bus: watchers elsewhere see the turn end when it stops looking alive: {e}");
    }
    inner.owned.lock().expect("owned turns lock").remove(&turn_id);
    tokio::time::sleep(Duration::from_secs_f64(KEEP_ENDED_SECS)).await;
    if let Err(e) = inner.forget(&turn_id).await {
        crate::warn!("turn bus: {e}");
    }
}

fn seq(at: Position) -> i64 {
    i64::try_from(at).unwrap_or(i64::MAX)
}

impl Inner {
    /// Appends `chunks` from position `at` on, keeps the turn alive and announces
    /// them, in one statement; the bytes written.
    async fn append(&self, turn: &str, at: Position, chunks: &[UiChunk]) -> Result<usize, StorageError> {
        let seqs: Vec<i64> = (seq(at)..seq(at + chunks.len())).collect();
        let texts = chunks.iter().map(encode).collect::<Result<Vec<_>, _>>()?;
        let client = self.pg.client().await?;
        client
            .execute(
                "WITH added AS (
                     INSERT INTO wasmhub_chat_turn_chunks (turn_id, seq, chunk)
                     SELECT $1, * FROM UNNEST($2::bigint[], $3::text[])
                 ), alive AS (
                     UPDATE wasmhub_chat_turns SET alive_until = now() + $4::float8 * interval '1 second'
                     WHERE turn_id = $1
                 )
                 SELECT pg_notify($5, 'c ' || $1)",
                &[&turn, &seqs, &texts, &self.ttl.as_secs_f64(), &CHANNEL],
            )
            .await
            .map_err(StorageError::pg("append turn chunks"))?;
        Ok(texts.iter().map(String::len).sum())
    }

    /// Keeps turn `turn` alive while it sends nothing.
    async fn beat(&self, turn: &str) -> Result<(), StorageError> {
        let client = self.pg.client().await?;
        client
            .execute(
                "UPDATE wasmhub_chat_turns SET alive_until = now() + $2::float8 * interval '1 second'
                 WHERE turn_id = $1",
                &[&turn, &self.ttl.as_secs_f64()],
            )
            .await
            .map_err(StorageError::pg("keep a turn alive"))?;
        Ok(())
    }
    /// Sets the end marker and announces it.
    async fn end(&self, turn: &str) -> Result<(), StorageError> {
        let client = self.pg.client().await?;
        client
            .execute(
                "WITH over AS (UPDATE wasmhub_chat_turns SET ended = now() WHERE turn_id = $1)
                 SELECT pg_notify($2, 'e ' || $1)",
                &[&turn, &CHANNEL],
            )
            .await
            .map_err(StorageError::pg("end a turn"))?;
        Ok(())
    }

    /// Stores `replay` as the message at position `at` and deletes the rows
    /// before `kept_from`, in one statement; the replay's size.
    async fn store_replay(
        &self,
        turn: &str,
        at: Position,
        replay: &[UiChunk],
        kept_from: Position,
    ) -> Result<usize, StorageError> {
        let text = serde_json::to_string(replay).map_err(StorageError::Encode)?;
        let client = self.pg.client().await?;
        client
            .execute(
                "WITH gone AS (
                     DELETE FROM wasmhub_chat_turn_chunks WHERE turn_id = $1 AND seq < $4
                 )
                 UPDATE wasmhub_chat_turns SET kept_from = $4, replay_at = $2, replay = $3
                 WHERE turn_id = $1",
                &[&turn, &seq(at), &text, &seq(kept_from)],
            )
            .await
            .map_err(StorageError::pg("store a turn's replay"))?;
        Ok(text.len())
    }
}

#[cfg(test)]
mod tests {
    use super::KeptRows;

    #[test]
    fn rows_are_kept_in_whole_stretches_up_to_the_lagging_limit() {
        let mut kept = KeptRows::new(100);
        kept.written(60);
        assert_eq!(kept.replayed(10), 0, "60 bytes are within the limit");
        kept.written(60);
        assert_eq!(kept.replayed(20), 10, "120 are not: the oldest stretch goes");
        kept.written(30);
        assert_eq!(kept.replayed(30), 10, "90 are");
        assert_eq!(kept.skipped_to(50), 50, "after a gap nothing before it");
        kept.written(500);
        assert_eq!(kept.replayed(60), 60, "the newest stretch always stays");
    }
}
