//! Waiting on two futures at once: the one shape of tokio's `select!` the hub uses,
//! as a function, so the binary's tree does without tokio's proc-macro crate.

use std::future::{Future, poll_fn};
use std::pin::pin;
use std::task::Poll;

/// Which of the two raced futures finished, with its output.
#[derive(Debug, PartialEq, Eq)]
pub(crate) enum Race<A, B> {
    First(A),
    Second(B),
}

/// Runs `first` and `second` until one finishes, and drops the other. `first` is
/// polled first on every wake-up, so it wins when both are ready.
pub(crate) async fn race<A: Future, B: Future>(first: A, second: B) -> Race<A::Output, B::Output> {
    let (mut first, mut second) = (pin!(first), pin!(second));
    poll_fn(|cx| {
        if let Poll::Ready(out) = first.as_mut().poll(cx) {
            return Poll::Ready(Race::First(out));
        }
        second.as_mut().poll(cx).map(Race::Second)
    })
    .await
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Duration;

    // Paused time: the one-minute sleep costs nothing and the order is certain.
    #[tokio::test(start_paused = true)]
    async fn the_first_to_finish_wins_and_the_other_is_dropped() {
        let (tx, mut rx) = tokio::sync::mpsc::channel::<()>(1);
        let slow = async move {
            let _alive = tx;
            tokio::time::sleep(Duration::from_secs(60)).await;
        };
        let quick = tokio::time::sleep(Duration::from_millis(1));
        assert_eq!(race(slow, quick).await, Race::Second(()));
        // The loser was dropped: its sender is gone.
        assert_eq!(rx.recv().await, None);
    }

    #[tokio::test]
    async fn the_first_wins_a_tie() {
        assert_eq!(race(async { 1 }, async { 2 }).await, Race::First(1));
        assert_eq!(
            race(std::future::pending::<()>(), async { 2 }).await,
            Race::Second(2)
        );
    }
}
