//! Call metrics in Prometheus text format: call counts and latency histograms by
//! tool and outcome, calls in flight, plugins by state, and counters kept elsewhere
//! (records the writers dropped, calls run at low priority, CPU ticks spent by
//! token and plugin).
//!
//! Hand-written (no metrics crate, the series from `prom`): one mutex-guarded map updated once per finished
//! call, rendered on `GET /metrics`. Calls to tools that do not exist are counted
//! under `tool="_unknown"` so a client sending garbage names cannot grow the map.

use super::registry::PluginCounts;
use crate::prom::Series;
pub(crate) use crate::prom::escape;
use std::collections::BTreeMap;
use std::fmt::Write;
use std::sync::Mutex;
use std::sync::atomic::{AtomicI64, Ordering};
use std::time::Duration;

/// The tool label of calls to tools the registry does not know.
pub(super) const UNKNOWN_TOOL: &str = "_unknown";

#[derive(Default)]
pub(crate) struct Metrics {
    /// tool → outcome → series.
    calls: Mutex<BTreeMap<String, BTreeMap<&'static str, Series>>>,
    in_flight: AtomicI64,
}

/// Decrements the in-flight gauge when the call ends, however it ends.
pub(crate) struct InFlightCall<'a>(&'a Metrics);

impl Drop for InFlightCall<'_> {
    fn drop(&mut self) {
        self.0.in_flight.fetch_sub(1, Ordering::Relaxed);
    }
}

impl Metrics {
    pub(super) fn start(&self) -> InFlightCall<'_> {
        self.in_flight.fetch_add(1, Ordering::Relaxed);
        InFlightCall(self)
    }

    pub(super) fn observe(&self, tool: &str, outcome: &'static str, elapsed: Duration) {
        let mut calls = self.calls.lock().unwrap();
        // Look up by the borrowed name first: no allocation on the common path.
        let by_outcome = match calls.get_mut(tool) {
            Some(m) => m,
            None => calls.entry(tool.to_string()).or_default(),
        };
        by_outcome.entry(outcome).or_default().observe(elapsed);
    }

    /// The Prometheus exposition text.
    pub(super) fn render(&self, plugins: &PluginCounts, operations: usize, totals: &Totals) -> String {
        let Totals {
            audit_dropped,
            accounting_dropped,
            low_priority_calls,
            low_priority_parses,
            low_priority_yields,
            cpu_ticks,
        } = totals;
        let mut out = String::new();
        let calls = self.calls.lock().unwrap();
        out.push_str("# HELP wasmhub_calls_total Operation calls by tool and outcome (ok or error code).\n");
        out.push_str("# TYPE wasmhub_calls_total counter\n");
        let series = || {
            calls
                .iter()
                .flat_map(|(tool, m)| m.iter().map(move |(outcome, s)| (tool, outcome, s)))
        };
        for (tool, outcome, s) in series() {
            let _ = writeln!(
                out,
                "wasmhub_calls_total{{tool=\"{}\",outcome=\"{outcome}\"}} {}",
                escape(tool),
                s.count
            );
        }
        out.push_str("# HELP wasmhub_call_duration_seconds Operation call latency, validation and bookkeeping included.\n");
        out.push_str("# TYPE wasmhub_call_duration_seconds histogram\n");
        for (tool, outcome, s) in series() {
            let labels = format!("tool=\"{}\",outcome=\"{outcome}\"", escape(tool));
            s.render(&mut out, "wasmhub_call_duration_seconds", &labels);
        }
        drop(calls);
        let in_flight = self.in_flight.load(Ordering::Relaxed);
        let help = "Operation calls running now (nested ones included).";
        single(&mut out, "wasmhub_calls_in_flight", "gauge", help, in_flight);
        out.push_str("# HELP wasmhub_plugins Plugins in the plugins folder by state.\n");
        out.push_str("# TYPE wasmhub_plugins gauge\n");
        for (state, n) in plugins.by_state() {
            let _ = writeln!(out, "wasmhub_plugins{{state=\"{state}\"}} {n}");
        }
        single(
            &mut out,
            "wasmhub_operations",
            "gauge",
            "Callable operations.",
            operations,
        );
        let counters = [
            (
                "wasmhub_audit_dropped_total",
                "Audit records dropped because the writer fell behind.",
                audit_dropped,
            ),
            (
                "wasmhub_accounting_dropped_total",
                "Accounting records dropped because the writer fell behind.",
                accounting_dropped,
            ),
            (
                "wasmhub_low_priority_calls_total",
                "Calls of busy tokens run on the low-priority threads (limits.busy_nice).",
                low_priority_calls,
            ),
            (
                "wasmhub_low_priority_parses_total",
                "Large request bodies and inputs parsed or validated on the low-priority blocking pool (limits.validate_blocking_kb).",
                low_priority_parses,
            ),
            (
                "wasmhub_low_priority_yields_total",
                "Epoch checks at which a guest on the low-priority threads offered its core to other threads (limits.busy_yield_us).",
                low_priority_yields,
            ),
        ];
        for (name, help, value) in counters {
            single(&mut out, name, "counter", help, value);
        }
        out.push_str("# HELP wasmhub_cpu_ticks_total Epoch ticks calls ran past their free first tick (each spent a CPU ticket of their token), by token and plugin.\n");
        out.push_str("# TYPE wasmhub_cpu_ticks_total counter\n");
        for (token, plugin, n) in cpu_ticks {
            let _ = writeln!(
                out,
                "wasmhub_cpu_ticks_total{{token=\"{}\",plugin=\"{}\"}} {n}",
                escape(token),
                escape(plugin)
            );
        }
        out
    }
}

/// A metric family of one unlabelled sample: its `HELP` and `TYPE` lines and value.
fn single(out: &mut String, name: &str, kind: &str, help: &str, value: impl std::fmt::Display) {
    let _ = writeln!(out, "# HELP {name} {help}\n# TYPE {name} {kind}\n{name} {value}");
}

/// Counters kept elsewhere (the writers, the runtime), rendered with the calls'.
#[derive(Default)]
pub(super) struct Totals {
    pub audit_dropped: u64,
    pub accounting_dropped: u64,
    pub low_priority_calls: u64,
    pub low_priority_parses: u64,
    pub low_priority_yields: u64,
    /// (token, plugin, epoch ticks past the free first one) from `runtime::cpu`.
    pub cpu_ticks: Vec<(std::sync::Arc<str>, std::sync::Arc<str>, u64)>,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn renders_counters_cumulative_buckets_and_gauges() {
        let m = Metrics::default();
        m.observe("text.slugify", "ok", Duration::from_micros(300));
        m.observe("text.slugify", "ok", Duration::from_millis(20));
        m.observe("text.slugify", "timeout", Duration::from_secs(11));
        let guard = m.start();
        let plugins = PluginCounts {
            active: 2,
            deprecated: 0,
            rejected: 1,
            loading: 0,
        };
        let totals = Totals {
            low_priority_calls: 3,
            low_priority_parses: 4,
            low_priority_yields: 6,
            cpu_ticks: vec![("ci".into(), "calc".into(), 5)],
            ..Totals::default()
        };
        let text = m.render(&plugins, 7, &totals);
        drop(guard);
        assert!(
            text.contains("wasmhub_calls_total{tool=\"text.slugify\",outcome=\"ok\"} 2\n"),
            "{text}"
        );
        assert!(text.contains("wasmhub_calls_total{tool=\"text.slugify\",outcome=\"timeout\"} 1\n"));
        assert!(
            text.contains("{tool=\"text.slugify\",outcome=\"ok\",le=\"0.0005\"} 1\n"),
            "{text}"
        );
        assert!(text.contains("{tool=\"text.slugify\",outcome=\"ok\",le=\"0.025\"} 2\n"));
        // Past the last bound: only +Inf counts it.
        assert!(text.contains("{tool=\"text.slugify\",outcome=\"timeout\",le=\"10\"} 0\n"));
        assert!(text.contains("{tool=\"text.slugify\",outcome=\"timeout\",le=\"+Inf\"} 1\n"));
        assert!(text.contains("wasmhub_calls_in_flight 1\n"));
        assert!(text.contains("wasmhub_plugins{state=\"rejected\"} 1\n"));
        assert!(text.contains("wasmhub_operations 7\n"));
        assert!(text.contains("wasmhub_low_priority_calls_total 3\n"));
        assert!(text.contains("wasmhub_low_priority_parses_total 4\n"));
        assert!(text.contains("wasmhub_low_priority_yields_total 6\n"));
        assert!(text.contains("wasmhub_cpu_ticks_total{token=\"ci\",plugin=\"calc\"} 5\n"));
        assert!(
            m.render(&PluginCounts::default(), 0, &Totals::default())
                .contains("wasmhub_calls_in_flight 0\n")
        );
    }
}
