//! Cancellation tokens: a tree of flags where cancelling a node cancels every
//! descendant.
//!
//! Hand-rolled instead of `tokio-util` to keep the dependency list short. A surface
//! makes one token per request (cancelled when the client leaves), the hub makes a
//! child per call and a grandchild per nested call, so one `cancel()` at the top
//! stops the whole call graph.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, Weak};
use tokio::sync::Notify;

/// A cloneable handle on one node of the cancellation tree.
#[derive(Clone, Default)]
pub struct CancelToken {
    inner: Arc<Inner>,
}

#[derive(Default)]
struct Inner {
    cancelled: AtomicBool,
    notify: Notify,
    // Weak: a finished call's token must not stay alive because its parent lives on.
    children: Mutex<Vec<Weak<Inner>>>,
}

impl std::fmt::Debug for CancelToken {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("CancelToken")
            .field("cancelled", &self.is_cancelled())
            .finish()
    }
}

impl CancelToken {
    /// A fresh root token.
    pub fn new() -> CancelToken {
        CancelToken::default()
    }

    /// A token cancelled when this one is (and also cancellable on its own).
    pub fn child(&self) -> CancelToken {
        let child = CancelToken::new();
        {
            let mut children = self.inner.children.lock().unwrap();
            // Drop entries of finished children so a long-lived parent does not grow.
            children.retain(|w| w.strong_count() > 0);
            children.push(Arc::downgrade(&child.inner));
        }
        // Checked after registering: a cancel racing with us either sees the child in
        // the list or has already set the flag we read here.
        if self.is_cancelled() {
            child.cancel();
        }
        child
    }

    /// Cancels this token and every descendant. Idempotent.
    pub fn cancel(&self) {
        Inner::cancel(&self.inner);
    }

    /// Whether this token (or an ancestor) has been cancelled.
    pub fn is_cancelled(&self) -> bool {
        self.inner.cancelled.load(Ordering::Acquire)
    }

    /// Resolves once the token is cancelled (immediately if it already is).
    pub async fn cancelled(&self) {
        loop {
            let notified = self.inner.notify.notified();
            tokio::pin!(notified);
            // Register interest before checking the flag so a cancel in between wakes us.
            notified.as_mut().enable();
            if self.is_cancelled() {
                return;
            }
            notified.await;
        }
    }
}

impl Inner {
    fn cancel(this: &Arc<Inner>) {
        if this.cancelled.swap(true, Ordering::AcqRel) {
            return;
        }
        this.notify.notify_waiters();
        let children = std::mem::take(&mut *this.children.lock().unwrap());
        for child in children {
            if let Some(child) = child.upgrade() {
                Inner::cancel(&child);
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Duration;

    #[test]
    fn cancelling_a_parent_cancels_descendants_but_not_the_other_way() {
        let root = CancelToken::new();
        let child = root.child();
        let grandchild = child.child();
        let sibling = root.child();
        grandchild.cancel();
        assert!(grandchild.is_cancelled());
        assert!(!child.is_cancelled() && !root.is_cancelled());
        root.cancel();
        assert!(child.is_cancelled() && sibling.is_cancelled());
    }

    #[test]
    fn a_child_of_a_cancelled_token_starts_cancelled() {
        let root = CancelToken::new();
        root.cancel();
        assert!(root.child().is_cancelled());
    }

    #[test]
    fn finished_children_are_pruned() {
        let root = CancelToken::new();
        for _ in 0..100 {
            drop(root.child());
        }
        let _kept = root.child();
        assert_eq!(root.inner.children.lock().unwrap().len(), 1);
    }

    // Paused time: the sleep below ends only once every task is idle, so the waiter
    // is parked on its token by then, however slow the machine.
    #[tokio::test(start_paused = true)]
    async fn cancelled_wakes_waiters() {
        let root = CancelToken::new();
        let child = root.child();
        let waiter = tokio::spawn(async move { child.cancelled().await });
        tokio::time::sleep(Duration::from_millis(10)).await;
        assert!(!waiter.is_finished());
        root.cancel();
        tokio::time::timeout(Duration::from_secs(1), waiter)
            .await
            .unwrap()
            .unwrap();
        // Already cancelled: returns at once.
        root.cancelled().await;
    }
}
