//! A call that moves to the low-priority threads once its plugin turns busy, even
//! in the middle of its run.
//!
//! Deciding once, when a call starts, missed the calls that matter most: a client
//! keeping long spinning calls open starts them all at once, before any of them
//! has overrun a tick, and they then spin until their timeout on the hub's
//! normal-priority workers, beside the benign calls of the same cores. In
//! `bench/fairness.sh` same-spin (128 spinning calls of the benign client's own
//! token) not one call ran on the low-priority threads, and 71.5% of the async
//! workers' time went to the spinning guests' code (docs/performance/fairness.md).
//! So the check is made before every poll: a guest future is `Send` and wasmtime
//! resumes its fiber on whatever thread polls it, so a call whose plugin turned
//! busy between two polls is handed to the low-priority runtime as it stands, and
//! finishes there. It never moves back (the mark lasts `limits.busy_ms` anyway).

use super::background::{Background, Offloaded, on_low_priority_thread};
use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::task::{Context, Poll};
use tokio::task::JoinError;

/// Whether a plugin is busy for a tenant: when one of its calls last overran its
/// first tick, and for how many ticks that counts (`TickGate::busy`).
#[derive(Clone)]
pub(crate) struct BusyMark {
    pub(super) overran: Arc<AtomicU64>,
    pub(super) clock: Arc<AtomicU64>,
    pub(super) busy_ticks: u64,
}

impl BusyMark {
    pub(crate) fn busy(&self) -> bool {
        let overran = self.overran.load(Ordering::Relaxed);
        overran != super::NEVER
            && self.clock.load(Ordering::Relaxed).saturating_sub(overran) <= self.busy_ticks
    }
}

/// A call polled where it started until its plugin is busy, then on the
/// low-priority threads (the module doc). Dropping it drops the call, wherever
/// it runs.
pub(crate) struct Movable<'a, F: Future> {
    place: Place<F>,
    busy: BusyMark,
    background: &'a Background,
}

enum Place<F: Future> {
    Here(Pin<Box<F>>),
    /// Here for good: the low-priority threads are off.
    Stays(Pin<Box<F>>),
    There(Offloaded<F::Output>),
    /// Only while being handed over.
    Moving,
}

impl<'a, F> Movable<'a, F>
where
    F: Future + Send + 'static,
    F::Output: Send + 'static,
{
    pub(super) fn new(call: F, busy: BusyMark, background: &'a Background) -> Self {
        Movable {
            place: Place::Here(Box::pin(call)),
            busy,
            background,
        }
    }

    /// Hands the call to the low-priority runtime if its plugin is busy and it is
    /// not there already.
    fn move_if_busy(&mut self) {
        if !matches!(self.place, Place::Here(_)) || !self.busy.busy() || on_low_priority_thread() {
            return;
        }
        let Place::Here(call) = std::mem::replace(&mut self.place, Place::Moving) else {
            unreachable!("checked above")
        };
        self.place = match self.background.spawn(call) {
            Ok(offloaded) => Place::There(offloaded),
            Err(call) => Place::Stays(call),
        };
    }
}

impl<F> Future for Movable<'_, F>
where
    F: Future + Send + 'static,
    F::Output: Send + 'static,
{
    /// `Err` only when the low-priority runtime stopped the call (a panic there,
    /// or the hub shutting down).
    type Output = Result<F::Output, JoinError>;

    fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Self::Output> {
        let this = self.get_mut();
        this.move_if_busy();
        match &mut this.place {
            Place::Here(call) | Place::Stays(call) => call.as_mut().poll(cx).map(Ok),
            Place::There(offloaded) => Pin::new(offloaded).poll(cx),
            Place::Moving => unreachable!("a call is handed over within one poll"),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::atomic::AtomicBool;

    fn mark() -> BusyMark {
        BusyMark {
            overran: Arc::new(AtomicU64::new(super::super::NEVER)),
            clock: Arc::new(AtomicU64::new(10)),
            busy_ticks: 5,
        }
    }

    /// A call that records on which kind of thread each poll ran, and is ready at
    /// its third poll (it wakes itself after the first two).
    fn call(
        polls: Arc<std::sync::Mutex<Vec<bool>>>,
        go_on: Arc<AtomicBool>,
    ) -> impl Future<Output = usize> + Send {
        std::future::poll_fn(move |cx| {
            let mut polls = polls.lock().unwrap();
            polls.push(on_low_priority_thread());
            if polls.len() < 3 || !go_on.load(Ordering::SeqCst) {
                cx.waker().wake_by_ref();
                return Poll::Pending;
            }
            Poll::Ready(polls.len())
        })
    }

    #[tokio::test]
    async fn a_call_moves_to_the_low_priority_threads_when_its_plugin_turns_busy() {
        let background = Background::new(5, false, 1);
        let busy = mark();
        let polls = Arc::new(std::sync::Mutex::new(Vec::new()));
        let go_on = Arc::new(AtomicBool::new(false));
        let mut movable = Movable::new(call(polls.clone(), go_on.clone()), busy.clone(), &background);
        // Not busy: polled right here.
        assert!(futures_poll_once(&mut movable).await.is_pending());
        assert!(futures_poll_once(&mut movable).await.is_pending());
        assert_eq!(*polls.lock().unwrap(), [false, false]);
        assert_eq!(background.calls(), 0);
        // Its plugin overran a tick: the next poll hands it over, mid-run.
        busy.overran.store(9, Ordering::Relaxed);
        go_on.store(true, Ordering::SeqCst);
        assert_eq!(movable.await.unwrap(), 3);
        assert_eq!(*polls.lock().unwrap(), [false, false, true]);
        assert_eq!(background.calls(), 1);
    }

    #[tokio::test]
    async fn a_call_stays_when_the_mark_is_old_or_the_threads_are_off() {
        let busy = mark();
        // Overran longer ago than `busy_ticks`: not busy.
        busy.overran.store(4, Ordering::Relaxed);
        let background = Background::new(5, false, 1);
        let polls = Arc::new(std::sync::Mutex::new(Vec::new()));
        let go_on = Arc::new(AtomicBool::new(true));
        let done = Movable::new(call(polls.clone(), go_on.clone()), busy.clone(), &background).await;
        assert_eq!(done.unwrap(), 3);
        assert_eq!(*polls.lock().unwrap(), [false, false, false]);
        // Busy, but `busy_nice = 0`: it runs here.
        busy.overran.store(10, Ordering::Relaxed);
        let off = Background::new(0, false, 1);
        polls.lock().unwrap().clear();
        let done = Movable::new(call(polls.clone(), go_on), busy, &off).await;
        assert_eq!(done.unwrap(), 3);
        assert_eq!(*polls.lock().unwrap(), [false, false, false]);
        assert_eq!(background.calls() + off.calls(), 0);
    }

    #[tokio::test]
    async fn dropping_a_moved_call_drops_it_there() {
        let background = Background::new(5, false, 1);
        let busy = mark();
        busy.overran.store(10, Ordering::Relaxed);
        let (tx, rx) = tokio::sync::oneshot::channel::<()>();
        let (started_tx, started_rx) = tokio::sync::oneshot::channel::<bool>();
        let mut started_tx = Some(started_tx);
        let pending = std::future::poll_fn(move |_| {
            let _keep = &tx;
            if let Some(s) = started_tx.take() {
                let _ = s.send(on_low_priority_thread());
            }
            Poll::<()>::Pending
        });
        let mut movable = Movable::new(pending, busy, &background);
        assert!(futures_poll_once(&mut movable).await.is_pending());
        assert!(started_rx.await.unwrap(), "it ran on a low-priority thread");
        drop(movable);
        assert!(rx.await.is_err(), "the call was dropped, not left running");
    }

    /// Polls `f` once with this task's waker.
    async fn futures_poll_once<F: Future + Unpin>(f: &mut F) -> Poll<F::Output> {
        std::future::poll_fn(|cx| Poll::Ready(Pin::new(&mut *f).poll(cx))).await
    }
}
