//! One client's view of a live turn: what the turn had sent when it joined (or
//! its replay), then the live chunks; told when it fell behind the kept chunks.

use super::log::{Lagged, Position, ReaderId};
use super::{FELL_BEHIND, LiveTurn};
use crate::llm::UiChunk;
use std::sync::Arc;
use tokio::sync::watch;

/// One client's view of a turn.
pub struct Subscription {
    turn: Arc<LiveTurn>,
    /// Sent before any live chunk: what the turn had sent when this joined.
    first: Vec<UiChunk>,
    /// The position of the next live chunk.
    next: Position,
    rx: watch::Receiver<(usize, bool)>,
    /// Whether this subscription counts as a watcher (see [`LiveTurn::follow`]).
    counted: bool,
    /// Whether it fell behind and was told so.
    lagged: bool,
    /// Its place in the turn's log, which keeps what it has not read.
    reader: ReaderId,
}

impl Subscription {
    /// A reader of `turn` that first returns `first` and then the chunks from
    /// position `next` on.
    pub(super) fn new(
        turn: Arc<LiveTurn>,
        (first, next, reader): (Vec<UiChunk>, Position, ReaderId),
        rx: watch::Receiver<(usize, bool)>,
        counted: bool,
    ) -> Subscription {
        Subscription {
            turn,
            first,
            next,
            rx,
            counted,
            lagged: false,
            reader,
        }
    }

    /// The chunks not yet seen, waiting for some; `None` once the turn ended and
    /// everything was delivered. A watcher that fell behind the kept chunks gets
    /// an `error` chunk saying so, then `None`: it reconnects to resume.
    pub async fn next_batch(&mut self) -> Option<Vec<UiChunk>> {
        if self.lagged {
            return None;
        }
        match self.next_chunks().await? {
            Ok(batch) => Some(batch),
            Err(Lagged) => {
                self.lagged = true;
                crate::warn!(
                    "chat session {}: a watcher fell behind the turn by more than agent.lagging_watcher_kb; its stream ends",
                    self.turn.session_id
                );
                Some(vec![UiChunk::Error {
                    error_text: FELL_BEHIND.into(),
                }])
            }
        }
    }

    /// As [`Self::next_batch`], but says when the chunks after this watcher's
    /// position are gone instead of ending.
    pub(crate) async fn next_chunks(&mut self) -> Option<Result<Vec<UiChunk>, Lagged>> {
        if !self.first.is_empty() {
            return Some(Ok(std::mem::take(&mut self.first)));
        }
        loop {
            let (head, ended) = *self.rx.borrow_and_update();
            if self.next < head {
                let batch = self.turn.log().read(self.reader, self.next);
                if let Ok(batch) = &batch {
                    self.next += batch.len();
                }
                return Some(batch);
            }
            if ended {
                return None;
            }
            if self.rx.changed().await.is_err() {
                return None;
            }
        }
    }

    /// The replay of the message as it is at this subscription's position, if the
    /// turn sent nothing since (else `None`: the replay would cover chunks this
    /// subscription has not returned).
    #[cfg(feature = "postgres")]
    pub(crate) fn replay_here(&self) -> Option<Vec<UiChunk>> {
        let log = self.turn.log();
        (log.head() == self.next).then(|| log.replay())
    }

    /// Skips to the newest chunk: the replay of the message there, and its
    /// position (for a reader that fell behind).
    #[cfg(feature = "postgres")]
    pub(crate) fn skip_to_head(&mut self) -> (Vec<UiChunk>, Position) {
        let (replay, head) = {
            let mut log = self.turn.log();
            let head = log.head();
            log.move_reader(self.reader, Some(head));
            (log.replay(), head)
        };
        self.first.clear();
        self.next = head;
        (replay, head)
    }

    /// The turn this subscription watches.
    pub fn turn(&self) -> &Arc<LiveTurn> {
        &self.turn
    }
}

impl Drop for Subscription {
    fn drop(&mut self) {
        self.turn.log().move_reader(self.reader, None);
        if self.counted {
            self.turn.unwatch();
        }
    }
}
