//! Where the time of a request goes: process-wide totals per stage (wall time in
//! nanoseconds and how many times each stage ran), exported on `/metrics` as
//! `wasmhub_stage_seconds_total{stage}` and `wasmhub_stage_runs_total{stage}`.
//! `bench/mcp.sh` reads them before and after its sequential run and prints
//! the average of each stage per call; operators can do the same with any two
//! scrapes.
//!
//! Each layer times its own stages with [`record`]; nothing is passed between
//! layers. A stage costs two clock reads (the monotonic clock is read from the
//! vDSO, tens of nanoseconds) and two relaxed atomic adds.

use std::fmt::Write;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Instant;

/// A stage of serving a request.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Stage {
    /// The whole request in the router: from its head being read to the response
    /// head being ready (what the other stages are part of).
    Request,
    /// Reading the request body (`surfaces::parse`).
    ReadBody,
    /// Parsing the request body (`surfaces::parse`), in place or off the workers.
    ParseBody,
    /// A meta-tool's whole answer (`Hub::invoke`): the calls' stages below and
    /// the hub's own work around them (the registry snapshot, the batch).
    Invoke,
    /// A call's checks before its plugin runs: call graph, allowlist, input
    /// validation, approval policy, a slot of the instance pool (`hub::protocol`).
    Checks,
    /// A fresh instance of the plugin in a fresh store (`runtime`).
    Instantiate,
    /// The guest's operation, nested calls included (`runtime`).
    Guest,
    /// Reading the result out of the store and dropping the store and instance.
    Teardown,
    /// The output check against the operation's schema (`hub::protocol`).
    Output,
    /// The call's metrics, accounting and audit records (`hub::protocol`).
    Record,
    /// Encoding a JSON response body (`surfaces::respond`).
    Encode,
}

impl Stage {
    /// Every stage, in the order a call goes through them.
    pub(crate) const ALL: [Stage; 11] = [
        Stage::Request,
        Stage::ReadBody,
        Stage::ParseBody,
        Stage::Invoke,
        Stage::Checks,
        Stage::Instantiate,
        Stage::Guest,
        Stage::Teardown,
        Stage::Output,
        Stage::Record,
        Stage::Encode,
    ];

    /// The `stage` label.
    pub(crate) fn name(self) -> &'static str {
        match self {
            Stage::Request => "request",
            Stage::ReadBody => "read_body",
            Stage::ParseBody => "parse_body",
            Stage::Invoke => "invoke",
            Stage::Checks => "checks",
            Stage::Instantiate => "instantiate",
            Stage::Guest => "guest",
            Stage::Teardown => "teardown",
            Stage::Output => "output",
            Stage::Record => "record",
            Stage::Encode => "encode",
        }
    }
}

/// Nanoseconds and runs of one stage.
struct Total {
    nanos: AtomicU64,
    runs: AtomicU64,
}

static TOTALS: [Total; Stage::ALL.len()] = [const {
    Total {
        nanos: AtomicU64::new(0),
        runs: AtomicU64::new(0),
    }
}; Stage::ALL.len()];

/// Adds the time since `started` to `stage`, and returns now (the start of
/// whatever comes next).
pub(crate) fn record(stage: Stage, started: Instant) -> Instant {
    let now = Instant::now();
    let total = &TOTALS[stage as usize];
    let nanos = now.saturating_duration_since(started).as_nanos();
    total
        .nanos
        .fetch_add(u64::try_from(nanos).unwrap_or(u64::MAX), Ordering::Relaxed);
    total.runs.fetch_add(1, Ordering::Relaxed);
    now
}

/// The Prometheus exposition text of every stage's totals.
pub(crate) fn metrics_text() -> String {
    let mut out = String::new();
    let seconds = |t: &Total| format!("{:.9}", t.nanos.load(Ordering::Relaxed) as f64 / 1e9);
    let runs = |t: &Total| t.runs.load(Ordering::Relaxed).to_string();
    let spent = "Wall time spent in each stage of serving requests (process-wide).";
    series(&mut out, "seconds", spent, seconds);
    series(
        &mut out,
        "runs",
        "Times each stage of serving requests ran (process-wide).",
        runs,
    );
    out
}

/// One counter family, `wasmhub_stage_{kind}_total{stage}`, valued by `value`.
fn series(out: &mut String, kind: &str, help: &str, value: impl Fn(&Total) -> String) {
    let name = format!("wasmhub_stage_{kind}_total");
    let _ = writeln!(out, "# HELP {name} {help}\n# TYPE {name} counter");
    for stage in Stage::ALL {
        let value = value(&TOTALS[stage as usize]);
        let _ = writeln!(out, "{name}{{stage=\"{}\"}} {value}", stage.name());
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Duration;

    /// The value of `series{stage="name"}` in `text`.
    fn value(text: &str, series: &str, stage: Stage) -> f64 {
        let prefix = format!("{series}{{stage=\"{}\"}} ", stage.name());
        text.lines()
            .find_map(|l| l.strip_prefix(&prefix))
            .unwrap_or_else(|| panic!("{prefix} in {text}"))
            .parse()
            .unwrap()
    }

    #[test]
    fn a_recorded_stage_adds_its_time_and_one_run() {
        // Other tests in this process record stages too: compare with before.
        let before = metrics_text();
        let started = Instant::now() - Duration::from_millis(3);
        let next = record(Stage::Teardown, started);
        assert!(next >= started + Duration::from_millis(3));
        let after = metrics_text();
        let runs = value(&after, "wasmhub_stage_runs_total", Stage::Teardown)
            - value(&before, "wasmhub_stage_runs_total", Stage::Teardown);
        assert!(runs >= 1.0, "{runs}");
        let seconds = value(&after, "wasmhub_stage_seconds_total", Stage::Teardown)
            - value(&before, "wasmhub_stage_seconds_total", Stage::Teardown);
        assert!(seconds >= 0.003, "{seconds}");
        let help = "# HELP wasmhub_stage_seconds_total Wall time spent in each stage of serving requests (process-wide).\n";
        assert!(after.contains(help), "{after}");
        // Every stage has both series.
        for stage in Stage::ALL {
            value(&after, "wasmhub_stage_seconds_total", stage);
            value(&after, "wasmhub_stage_runs_total", stage);
        }
    }
}
