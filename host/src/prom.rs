//! The Prometheus text format's building blocks, shared by every `/metrics`
//! family: latency histogram series with the hub's bucket bounds, labelled
//! histogram and counter families keyed by their label values, and label
//! escaping.
//! Hand-written (no metrics crate); each family is one mutex-guarded map
//! updated once per observation.

use std::collections::BTreeMap;
use std::fmt::Write;
use std::sync::Mutex;
use std::time::Duration;

/// Histogram upper bounds, in seconds.
pub(crate) const BUCKETS: [f64; 16] = [
    0.0001, 0.00025, 0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0,
];

/// One histogram series: a count per bucket, the count and the sum.
#[derive(Default)]
pub(crate) struct Series {
    buckets: [u64; BUCKETS.len()],
    pub count: u64,
    sum_seconds: f64,
}

impl Series {
    pub(crate) fn observe(&mut self, elapsed: Duration) {
        let seconds = elapsed.as_secs_f64();
        self.count += 1;
        self.sum_seconds += seconds;
        if let Some(i) = BUCKETS.iter().position(|&b| seconds <= b) {
            self.buckets[i] += 1;
        }
    }

    /// The `_bucket` (cumulative), `_sum` and `_count` lines of `name{labels}`.
    pub(crate) fn render(&self, out: &mut String, name: &str, labels: &str) {
        let sep = if labels.is_empty() { "" } else { "," };
        let mut cumulative = 0;
        for (bound, n) in BUCKETS.iter().zip(self.buckets) {
            cumulative += n;
            let _ = writeln!(out, "{name}_bucket{{{labels}{sep}le=\"{bound}\"}} {cumulative}");
        }
        let _ = writeln!(out, "{name}_bucket{{{labels}{sep}le=\"+Inf\"}} {}", self.count);
        let _ = writeln!(out, "{name}_sum{{{labels}}} {}", self.sum_seconds);
        let _ = writeln!(out, "{name}_count{{{labels}}} {}", self.count);
    }
}

/// A histogram family: one series per label set (`a="x",b="y"`, rendered by the
/// caller from values it bounds).
#[derive(Default)]
pub(crate) struct Histograms(Mutex<BTreeMap<String, Series>>);

impl Histograms {
    pub(crate) fn observe(&self, labels: String, elapsed: Duration) {
        self.0.lock().unwrap().entry(labels).or_default().observe(elapsed);
    }

    /// The family's `HELP`, `TYPE` and series lines.
    pub(crate) fn render(&self, out: &mut String, name: &str, help: &str) {
        let _ = writeln!(out, "# HELP {name} {help}\n# TYPE {name} histogram");
        for (labels, series) in self.0.lock().unwrap().iter() {
            series.render(out, name, labels);
        }
    }
}

/// A counter family: one count per label set.
#[derive(Default)]
pub(crate) struct Counters(Mutex<BTreeMap<String, u64>>);

impl Counters {
    pub(crate) fn add(&self, labels: String, n: u64) {
        *self.0.lock().unwrap().entry(labels).or_default() += n;
    }

    /// The family's `HELP`, `TYPE` and sample lines.
    pub(crate) fn render(&self, out: &mut String, name: &str, help: &str) {
        let _ = writeln!(out, "# HELP {name} {help}\n# TYPE {name} counter");
        for (labels, n) in self.0.lock().unwrap().iter() {
            let _ = writeln!(out, "{name}{{{labels}}} {n}");
        }
    }
}

/// A Prometheus label value with `\\`, `"` and newlines escaped.
pub(crate) fn escape(label: &str) -> String {
    label
        .replace('\\', "\\\\")
        .replace('"', "\\\"")
        .replace('\n', "\\n")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn families_render_per_label_set() {
        let h = Histograms::default();
        h.observe("m=\"a\"".into(), Duration::from_millis(3));
        h.observe("m=\"a\"".into(), Duration::from_secs(20));
        let c = Counters::default();
        c.add("k=\"x\"".into(), 2);
        c.add("k=\"x\"".into(), 1);
        let mut out = String::new();
        h.render(&mut out, "d_seconds", "help");
        c.render(&mut out, "n_total", "help");
        assert!(out.contains("# TYPE d_seconds histogram\n"));
        assert!(
            out.contains("d_seconds_bucket{m=\"a\",le=\"0.005\"} 1\n"),
            "{out}"
        );
        assert!(out.contains("d_seconds_bucket{m=\"a\",le=\"+Inf\"} 2\n"));
        assert!(out.contains("d_seconds_count{m=\"a\"} 2\n"));
        assert!(out.contains("n_total{k=\"x\"} 3\n"));
        assert_eq!(escape("a\"b\\c\n"), "a\\\"b\\\\c\\n");
    }
}
