//! Per-surface concurrency limits: each HTTP surface serves at most its
//! `[concurrency]` number of requests at once; the rest wait in a first-in,
//! first-out line of at most `concurrency.queue` requests for at most
//! `concurrency.queue_wait_ms`, then get 429 with `Retry-After`.
//!
//! A surface takes its turn with [`SurfaceLimits::enter`] (or runs its work under
//! one with [`SurfaceLimits::serve`]) after it has read the request body: from
//! then on hyper notices a client that closes its connection and drops the
//! request's future, and dropping a waiting [`SurfaceLimits::enter`] takes the
//! request out of the line, so its work never starts. A [`Permit`] is handed from
//! a finishing request straight to the oldest waiting one, so nobody overtakes the
//! line. Held by a response body ([`held`]) the permit lasts until the answer is
//! sent (or its client is gone), not just until the handler returns.

use super::respond::{self, Resp};
use crate::config::ConcurrencyConfig;
use http::{HeaderValue, StatusCode, header};
use std::collections::VecDeque;
use std::fmt::Write;
use std::future::Future;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};
use tokio::sync::oneshot;

/// The surfaces with a limit of their own.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Surface {
    /// `POST /mcp`.
    Mcp,
    /// `POST /api/hub/{list,search,schema,call}`.
    Rest,
    /// `POST /v1/chat/completions` and `POST /api/ui/chat/completions`.
    Proxy,
    /// `POST /v1/messages`.
    Anthropic,
    /// Agent turns of `POST /api/chat`.
    Chat,
}

impl Surface {
    const ALL: [Surface; 5] = [
        Surface::Mcp,
        Surface::Rest,
        Surface::Proxy,
        Surface::Anthropic,
        Surface::Chat,
    ];

    /// The name in metrics labels and the config key (`concurrency.<name>`).
    pub fn name(self) -> &'static str {
        match self {
            Surface::Mcp => "mcp",
            Surface::Rest => "rest",
            Surface::Proxy => "proxy",
            Surface::Anthropic => "anthropic",
            Surface::Chat => "chat",
        }
    }

    fn index(self) -> usize {
        self as usize
    }

    fn limit(self, config: &ConcurrencyConfig) -> usize {
        match self {
            Surface::Mcp => config.mcp,
            Surface::Rest => config.rest,
            Surface::Proxy => config.proxy,
            Surface::Anthropic => config.anthropic,
            Surface::Chat => config.chat,
        }
    }
}

/// Why a request was not served.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LimitRefusal {
    /// The surface whose limit was hit.
    pub surface: Surface,
    /// Its limit (`concurrency.<surface>`).
    pub limit: usize,
    /// What happened in line.
    pub reason: RefusalReason,
}

/// What happened to a refused request.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum RefusalReason {
    /// The line was full (`concurrency.queue` requests waiting).
    QueueFull {
        /// `concurrency.queue`.
        queue: usize,
    },
    /// It waited `concurrency.queue_wait_ms` without getting a turn.
    Waited {
        /// `concurrency.queue_wait_ms`.
        wait_ms: u64,
    },
}

impl std::fmt::Display for LimitRefusal {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let (surface, limit) = (self.surface.name(), self.limit);
        match self.reason {
            RefusalReason::QueueFull { queue } => write!(
                f,
                "the {surface} surface is busy: {limit} requests are being served (concurrency.{surface} = {limit}) \
                 and {queue} are waiting (concurrency.queue = {queue}); retry shortly"
            ),
            RefusalReason::Waited { wait_ms } => write!(
                f,
                "the {surface} surface is busy: waited {wait_ms} ms (concurrency.queue_wait_ms) for one of its \
                 {limit} places (concurrency.{surface} = {limit}); retry shortly"
            ),
        }
    }
}

impl std::error::Error for LimitRefusal {}

impl LimitRefusal {
    /// The config key of the bound that refused: the line's length or its wait.
    pub fn key(&self) -> &'static str {
        match self.reason {
            RefusalReason::QueueFull { .. } => "concurrency.queue",
            RefusalReason::Waited { .. } => "concurrency.queue_wait_ms",
        }
    }

    /// The error code of the hub's error shape.
    pub fn code(&self) -> &'static str {
        match self.reason {
            RefusalReason::QueueFull { .. } => "queue_full",
            RefusalReason::Waited { .. } => "queue_timeout",
        }
    }

    /// Seconds a client should wait before retrying (`Retry-After`).
    pub fn retry_after_secs(&self) -> u64 {
        1
    }

    /// 429 with `Retry-After` and the hub's error shape, plus `"limit"` (the key
    /// that refused) and `"surface"`.
    pub fn into_response(self) -> Resp {
        let mut body = respond::error_body(self.code(), self.to_string());
        body["error"]["limit"] = self.key().into();
        body["error"]["surface"] = self.surface.name().into();
        let resp = respond::json(StatusCode::TOO_MANY_REQUESTS, &body);
        self.with_retry_after(resp)
    }

    /// `resp` with this refusal's `Retry-After` header.
    pub fn with_retry_after(&self, mut resp: Resp) -> Resp {
        resp.headers_mut()
            .insert(header::RETRY_AFTER, HeaderValue::from(self.retry_after_secs()));
        resp
    }
}

/// One request's turn on a surface; dropping it passes the turn on.
pub struct Permit {
    gate: Arc<Gate>,
}

impl Drop for Permit {
    fn drop(&mut self) {
        self.gate.release();
    }
}

/// The limiter of every surface. Shared by the whole server (in `App`).
pub struct SurfaceLimits {
    gates: Vec<Arc<Gate>>,
}

impl SurfaceLimits {
    /// The limits of `config`.
    pub fn new(config: &ConcurrencyConfig) -> SurfaceLimits {
        SurfaceLimits {
            gates: Surface::ALL
                .iter()
                .map(|s| {
                    Arc::new(Gate {
                        surface: *s,
                        limit: s.limit(config),
                        queue: config.queue,
                        wait: Duration::from_millis(config.queue_wait_ms),
                        state: Mutex::new(State::default()),
                        stats: Stats::default(),
                    })
                })
                .collect(),
        }
    }

    /// A turn on `surface`: at once when it has room and nobody waits, else after
    /// the requests ahead in line; a [`LimitRefusal`] when the line is full or the wait
    /// runs out. Dropping the future leaves the line.
    pub async fn enter(&self, surface: Surface) -> Result<Permit, LimitRefusal> {
        self.gates[surface.index()].clone().enter().await
    }

    /// Runs `work` (the rest of a request, after its body was read) with a turn on
    /// `surface`, held until the response body is sent; a refusal is answered with
    /// [`LimitRefusal::into_response`].
    pub async fn serve(&self, surface: Surface, work: impl Future<Output = Resp>) -> Resp {
        match self.enter(surface).await {
            Ok(permit) => held(work.await, permit),
            Err(refusal) => refusal.into_response(),
        }
    }

    /// The Prometheus text of every surface's gauges and counters.
    pub fn metrics_text(&self) -> String {
        let mut out = String::new();
        let families: [Family; 5] = [
            (
                "wasmhub_surface_in_flight",
                "gauge",
                "Requests each surface is serving now (agent turns for chat).",
                |g| g.state.lock().expect("gate lock").running.to_string(),
            ),
            (
                "wasmhub_surface_queued",
                "gauge",
                "Requests waiting in line for a surface.",
                |g| g.state.lock().expect("gate lock").queue.len().to_string(),
            ),
            (
                "wasmhub_surface_queue_wait_seconds_sum",
                "counter",
                "Time requests that got a turn spent waiting in line.",
                |g| (g.stats.waited_us.load(Ordering::Relaxed) as f64 / 1e6).to_string(),
            ),
            (
                "wasmhub_surface_queue_wait_seconds_count",
                "counter",
                "Requests that got a turn after waiting in line.",
                |g| g.stats.waited.load(Ordering::Relaxed).to_string(),
            ),
            (
                "wasmhub_surface_queue_left_total",
                "counter",
                "Requests whose client went away while waiting in line.",
                |g| g.stats.left.load(Ordering::Relaxed).to_string(),
            ),
        ];
        for (name, kind, help, value) in families {
            let _ = writeln!(out, "# HELP {name} {help}\n# TYPE {name} {kind}");
            for g in &self.gates {
                let _ = writeln!(out, "{name}{{surface=\"{}\"}} {}", g.surface.name(), value(g));
            }
        }
        let name = "wasmhub_surface_rejected_total";
        let _ = writeln!(
            out,
            "# HELP {name} Requests answered 429 by reason (queue_full, queue_timeout).\n# TYPE {name} counter"
        );
        for g in &self.gates {
            for (reason, n) in [
                ("queue_full", &g.stats.full),
                ("queue_timeout", &g.stats.timed_out),
            ] {
                let _ = writeln!(
                    out,
                    "{name}{{surface=\"{}\",reason=\"{reason}\"}} {}",
                    g.surface.name(),
                    n.load(Ordering::Relaxed)
                );
            }
        }
        out
    }
}

/// A metric family: name, type, help, and its value for one surface.
type Family = (&'static str, &'static str, &'static str, fn(&Gate) -> String);

/// `resp` with `permit` held by its body: the turn ends when the body is sent or
/// dropped (the client went away).
pub fn held(resp: Resp, permit: Permit) -> Resp {
    resp.map(|body| body.holding(Box::new(permit)))
}

/// One surface's counter and line.
struct Gate {
    surface: Surface,
    limit: usize,
    queue: usize,
    wait: Duration,
    state: Mutex<State>,
    stats: Stats,
}

#[derive(Default)]
struct State {
    running: usize,
    next_ticket: u64,
    /// Oldest first; a waiter is woken by sending on its channel.
    queue: VecDeque<(u64, oneshot::Sender<()>)>,
}

#[derive(Default)]
struct Stats {
    waited: AtomicU64,
    waited_us: AtomicU64,
    left: AtomicU64,
    full: AtomicU64,
    timed_out: AtomicU64,
}

impl Gate {
    async fn enter(self: Arc<Self>) -> Result<Permit, LimitRefusal> {
        let (ticket, granted) = {
            let mut state = self.state.lock().expect("gate lock");
            if state.running < self.limit && state.queue.is_empty() {
                state.running += 1;
                return Ok(Permit { gate: self.clone() });
            }
            if state.queue.len() >= self.queue {
                self.stats.full.fetch_add(1, Ordering::Relaxed);
                return Err(self.refusal(RefusalReason::QueueFull { queue: self.queue }));
            }
            let (tx, rx) = oneshot::channel();
            let ticket = state.next_ticket;
            state.next_ticket += 1;
            state.queue.push_back((ticket, tx));
            (ticket, rx)
        };
        let started = Instant::now();
        let mut waiting = Waiting {
            gate: &self,
            ticket,
            granted,
            done: false,
        };
        let outcome = tokio::time::timeout(self.wait, &mut waiting.granted).await;
        match outcome {
            Ok(Ok(())) => {
                waiting.done = true;
                self.stats.waited.fetch_add(1, Ordering::Relaxed);
                self.stats
                    .waited_us
                    .fetch_add(started.elapsed().as_micros() as u64, Ordering::Relaxed);
                Ok(Permit { gate: self.clone() })
            }
            // Timed out (the sender is never dropped unsent while queued).
            _ => {
                waiting.leave(false);
                self.stats.timed_out.fetch_add(1, Ordering::Relaxed);
                Err(self.refusal(RefusalReason::Waited {
                    wait_ms: self.wait.as_millis() as u64,
                }))
            }
        }
    }

    fn refusal(&self, reason: RefusalReason) -> LimitRefusal {
        LimitRefusal {
            surface: self.surface,
            limit: self.limit,
            reason,
        }
    }

    /// A turn ends: the oldest waiter gets it, else the count goes down.
    fn release(&self) {
        let mut state = self.state.lock().expect("gate lock");
        while let Some((_, waiter)) = state.queue.pop_front() {
            if waiter.send(()).is_ok() {
                return;
            }
        }
        state.running = state.running.saturating_sub(1);
    }
}

/// A request in line; leaving it (dropped, or timed out) takes it out. It owns
/// the receiving end of its turn, so while it is in line a release can always hand
/// it the turn (the receiver is dropped only after `leave` ran).
struct Waiting<'g> {
    gate: &'g Gate,
    ticket: u64,
    granted: oneshot::Receiver<()>,
    done: bool,
}

impl Waiting<'_> {
    /// Takes the request out of the line; if the turn was handed to it meanwhile,
    /// passes the turn on.
    fn leave(&mut self, client_gone: bool) {
        if std::mem::replace(&mut self.done, true) {
            return;
        }
        let mut state = self.gate.state.lock().expect("gate lock");
        if let Some(at) = state.queue.iter().position(|(t, _)| *t == self.ticket) {
            state.queue.remove(at);
            if client_gone {
                self.gate.stats.left.fetch_add(1, Ordering::Relaxed);
            }
            return;
        }
        drop(state);
        // Granted between the timeout and now: the turn is ours to pass on.
        self.gate.release();
    }
}

impl Drop for Waiting<'_> {
    fn drop(&mut self) {
        self.leave(true);
    }
}

#[cfg(test)]
mod tests;
