//! One tenant's CPU tickets and how they are divided between its plugins.
//!
//! A call still running at an epoch tick (past its free first tick) spends a
//! ticket to run on to the next one, or waits for one. The waiters wait in their
//! plugin's line, not in one line for the tenant: a ticket goes to the line with
//! the lowest *pass* (stride scheduling: a line's pass grows by `STRIDE / weight`
//! with each ticket its plugin spends), so plugins with waiters get tickets in
//! proportion to their weights (`plugin.NAME.cpu_weight`) however many calls each
//! has waiting: a long call of one plugin no longer queues behind a hundred
//! spinning calls of another. A line that starts waiting again after a pause
//! takes up the current pass (the last one a ticket was spent at), so a plugin
//! cannot save up turns while idle. A plugin alone has all the tenant's tickets.
//!
//! How many tickets a tenant has each tick is [`super`]'s decision (its share,
//! plus what idle tenants leave over); this book also says how much its calls
//! wanted in the tick that ends ([`Tickets::refill`]), for that decision.

use std::collections::VecDeque;
use std::sync::Mutex;
use tokio::sync::oneshot;

/// A ticket's pass for a plugin of weight 1.
const STRIDE: u64 = 1 << 20;

/// One tenant's tickets.
pub(super) struct Tickets {
    book: Mutex<Book>,
}

struct Book {
    /// Tickets left this tick.
    available: usize,
    /// Tickets spent this tick.
    spent: usize,
    /// Calls waiting for a ticket, all lines together.
    waiting: usize,
    /// The pass the last ticket was spent at.
    now: u64,
    lines: Vec<Line>,
}

/// One plugin's calls waiting for tickets.
struct Line {
    /// Its pass grows by this for each ticket spent: `STRIDE / weight`.
    stride: u64,
    pass: u64,
    /// Tickets its calls have spent since start.
    spent: u64,
    /// Each waiting call's way to be handed a ticket, oldest first.
    waiters: VecDeque<oneshot::Sender<()>>,
}

/// What a tenant's calls wanted in the tick that ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) struct Demand {
    /// Tickets spent.
    pub spent: usize,
    /// Calls still waiting for one.
    pub waiting: usize,
}

impl Demand {
    /// Whether the tenant ran anything past a first tick.
    pub(super) fn active(&self) -> bool {
        self.spent + self.waiting > 0
    }
}

impl Tickets {
    pub(super) fn new(available: usize) -> Tickets {
        Tickets {
            book: Mutex::new(Book {
                available,
                spent: 0,
                waiting: 0,
                now: 0,
                lines: Vec::new(),
            }),
        }
    }

    fn book(&self) -> std::sync::MutexGuard<'_, Book> {
        self.book.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// A new plugin's line, of `weight` (at least 1); its index.
    pub(super) fn line(&self, weight: u32) -> usize {
        let mut book = self.book();
        let pass = book.now;
        book.lines.push(Line {
            stride: STRIDE / u64::from(weight.max(1)),
            pass,
            spent: 0,
            waiters: VecDeque::new(),
        });
        book.lines.len() - 1
    }

    /// Spends a ticket for `line` if one is left and no call waits for one.
    pub(super) fn try_pass(&self, line: usize) -> bool {
        let mut book = self.book();
        if book.available == 0 || book.waiting > 0 {
            return false;
        }
        book.spend(line);
        true
    }

    /// Spends a ticket for `line`, waiting in its line when none is left (or
    /// other calls already wait).
    pub(super) async fn pass(&self, line: usize) {
        let handed = {
            let mut book = self.book();
            if book.available > 0 && book.waiting == 0 {
                book.spend(line);
                return;
            }
            let (tx, rx) = oneshot::channel();
            let now = book.now;
            let waiting = &mut book.lines[line];
            if waiting.waiters.is_empty() {
                waiting.pass = waiting.pass.max(now);
            }
            waiting.waiters.push_back(tx);
            book.waiting += 1;
            rx
        };
        // The book never drops a waiter's sender without sending.
        let _ = handed.await;
    }

    /// Tickets spent since start by the calls of the plugin of `line`.
    pub(super) fn spent(&self, line: usize) -> u64 {
        self.book().lines[line].spent
    }

    /// What the tenant's calls wanted in the tick that is ending.
    pub(super) fn demand(&self) -> Demand {
        let book = self.book();
        Demand {
            spent: book.spent,
            waiting: book.waiting,
        }
    }

    /// A new tick: `available` tickets (unspent ones do not carry over), handed
    /// first to the waiting calls, line by line by pass.
    pub(super) fn refill(&self, available: usize) {
        let mut book = self.book();
        book.spent = 0;
        book.available = available;
        book.hand_out();
    }
}

impl Book {
    fn spend(&mut self, line: usize) {
        self.available -= 1;
        self.spent += 1;
        let line = &mut self.lines[line];
        self.now = self.now.max(line.pass);
        line.pass += line.stride;
        line.spent += 1;
    }

    /// Hands the tickets left to waiting calls: the oldest of the line with the
    /// lowest pass first (a waiter gone meanwhile, a dropped call, gets none).
    fn hand_out(&mut self) {
        while self.available > 0 && self.waiting > 0 {
            let Some(at) = (0..self.lines.len())
                .filter(|&i| !self.lines[i].waiters.is_empty())
                .min_by_key(|&i| self.lines[i].pass)
            else {
                self.waiting = 0;
                return;
            };
            let waiter = self.lines[at].waiters.pop_front().expect("a line with waiters");
            self.waiting -= 1;
            if waiter.send(()).is_ok() {
                self.spend(at);
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::Arc;
    use std::sync::atomic::{AtomicUsize, Ordering};

    /// Queues `n` calls of `line` for a ticket; each counts into `got` once handed one.
    fn wait_n(tickets: &Arc<Tickets>, line: usize, n: usize, got: &Arc<AtomicUsize>) {
        for _ in 0..n {
            let (tickets, got) = (tickets.clone(), got.clone());
            tokio::spawn(async move {
                tickets.pass(line).await;
                got.fetch_add(1, Ordering::SeqCst);
            });
        }
    }

    /// Lets every spawned task run until it waits.
    async fn settle() {
        for _ in 0..8 {
            tokio::task::yield_now().await;
        }
    }

    #[tokio::test(start_paused = true)]
    async fn a_plugin_with_one_waiting_call_gets_every_other_ticket_beside_a_hundred_spinners() {
        let tickets = Arc::new(Tickets::new(2));
        let spinners = tickets.line(1);
        // The spinners spend this tick's tickets and a hundred of them wait.
        assert!(tickets.try_pass(spinners) && tickets.try_pass(spinners));
        let (spun, ran) = (Arc::new(AtomicUsize::new(0)), Arc::new(AtomicUsize::new(0)));
        wait_n(&tickets, spinners, 100, &spun);
        settle().await;
        // The long call of another plugin comes last...
        let long = tickets.line(1);
        wait_n(&tickets, long, 1, &ran);
        settle().await;
        assert_eq!(tickets.demand().waiting, 101);
        tickets.refill(1);
        settle().await;
        // ...and is handed the tick's ticket before 99 of the spinners.
        assert_eq!(ran.load(Ordering::SeqCst), 1, "not behind 100 spinners");
        // Then the next waits again: the two lines take turns.
        wait_n(&tickets, long, 1, &ran);
        settle().await;
        for _ in 0..4 {
            tickets.refill(1);
            settle().await;
        }
        assert_eq!(ran.load(Ordering::SeqCst), 2);
        assert_eq!(spun.load(Ordering::SeqCst), 3);
    }

    #[tokio::test(start_paused = true)]
    async fn tickets_go_to_waiting_plugins_in_proportion_to_their_weights() {
        let tickets = Arc::new(Tickets::new(0));
        let (heavy, light) = (tickets.line(3), tickets.line(1));
        let (got_heavy, got_light) = (Arc::new(AtomicUsize::new(0)), Arc::new(AtomicUsize::new(0)));
        wait_n(&tickets, heavy, 100, &got_heavy);
        wait_n(&tickets, light, 100, &got_light);
        settle().await;
        tickets.refill(40);
        settle().await;
        assert_eq!(
            (got_heavy.load(Ordering::SeqCst), got_light.load(Ordering::SeqCst)),
            (30, 10)
        );
    }

    #[tokio::test(start_paused = true)]
    async fn a_plugin_alone_has_every_ticket_and_an_idle_one_saves_up_no_turns() {
        let tickets = Arc::new(Tickets::new(3));
        let (busy, idle) = (tickets.line(1), tickets.line(1));
        assert!(tickets.try_pass(busy) && tickets.try_pass(busy) && tickets.try_pass(busy));
        assert!(!tickets.try_pass(busy), "three tickets this tick");
        assert_eq!(tickets.demand(), Demand { spent: 3, waiting: 0 });
        tickets.refill(50);
        for _ in 0..50 {
            assert!(tickets.try_pass(busy));
        }
        assert_eq!(
            tickets.demand(),
            Demand {
                spent: 50,
                waiting: 0
            }
        );
        tickets.refill(0);
        // The idle plugin comes back: it starts at the current pass, not 53
        // tickets ahead, so the two alternate.
        let (got_busy, got_idle) = (Arc::new(AtomicUsize::new(0)), Arc::new(AtomicUsize::new(0)));
        wait_n(&tickets, busy, 10, &got_busy);
        wait_n(&tickets, idle, 10, &got_idle);
        settle().await;
        tickets.refill(10);
        settle().await;
        let (b, i) = (got_busy.load(Ordering::SeqCst), got_idle.load(Ordering::SeqCst));
        assert!(b + i == 10 && b.abs_diff(i) <= 1, "{b} and {i}");
    }

    #[tokio::test(start_paused = true)]
    async fn a_waiting_call_dropped_gets_no_ticket_and_takes_none() {
        let tickets = Arc::new(Tickets::new(0));
        let line = tickets.line(1);
        let gone = tokio::spawn({
            let tickets = tickets.clone();
            async move { tickets.pass(line).await }
        });
        settle().await;
        gone.abort();
        settle().await;
        let got = Arc::new(AtomicUsize::new(0));
        wait_n(&tickets, line, 1, &got);
        settle().await;
        assert_eq!(tickets.demand().waiting, 2);
        tickets.refill(1);
        settle().await;
        assert_eq!(got.load(Ordering::SeqCst), 1, "the ticket went to the live call");
    }
}
