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

/// Bucket upper bounds of `gen_ai.client.token.usage` (the GenAI conventions'
/// advice: powers of 4 from 1 to 4^13 tokens).
pub(crate) const TOKEN_BUCKETS: [f64; 14] = [
    1.0, 4.0, 16.0, 64.0, 256.0, 1024.0, 4096.0, 16384.0, 65536.0, 262144.0, 1048576.0, 4194304.0,
    16777216.0, 67108864.0,
];

/// One histogram series: a count per bucket, the count and the sum.
pub(crate) struct Series {
    bounds: &'static [f64],
    buckets: Vec<u64>,
    pub count: u64,
    sum: f64,
}

impl Default for Series {
    fn default() -> Series {
        Series::with_bounds(&BUCKETS)
    }
}

impl Series {
    /// A series with its own bucket upper bounds.
    pub(crate) fn with_bounds(bounds: &'static [f64]) -> Series {
        Series {
            bounds,
            buckets: vec![0; bounds.len()],
            count: 0,
            sum: 0.0,
        }
    }

    pub(crate) fn observe(&mut self, elapsed: Duration) {
        self.observe_value(elapsed.as_secs_f64());
    }

    /// Counts `value` (in the unit of the series' bounds).
    pub(crate) fn observe_value(&mut self, value: f64) {
        self.count += 1;
        self.sum += value;
        if let Some(i) = self.bounds.iter().position(|&b| value <= b) {
            self.buckets[i] += 1;
        }
    }

    /// The `_bucket` (cumulative), `_sum` and `_count` lines of `name{labels}`.
    pub(crate) fn render(&self, out: &mut String, name: &str, labels: &str) {
        let sep = if labels.is_empty() { "" } else { "," };
        let mut cumulative = 0;
        for (bound, n) in self.bounds.iter().zip(&self.buckets) {
            cumulative += n;
            let _ = writeln!(out, "{name}_bucket{{{labels}{sep}le=\"{bound}\"}} {cumulative}");
        }
        let _ = writeln!(out, "{name}_bucket{{{labels}{sep}le=\"+Inf\"}} {}", self.count);
        let _ = writeln!(out, "{name}_sum{{{labels}}} {}", self.sum);
        let _ = writeln!(out, "{name}_count{{{labels}}} {}", self.count);
    }
}

/// A histogram family: one series per label set (`a="x",b="y"`, rendered by the
/// caller from values it bounds), with the hub's latency buckets unless made
/// [`Histograms::with_bounds`].
pub(crate) struct Histograms {
    bounds: &'static [f64],
    series: Mutex<BTreeMap<String, Series>>,
}

impl Default for Histograms {
    fn default() -> Histograms {
        Histograms::with_bounds(&BUCKETS)
    }
}

impl Histograms {
    /// A family whose series count into `bounds`.
    pub(crate) fn with_bounds(bounds: &'static [f64]) -> Histograms {
        Histograms {
            bounds,
            series: Mutex::new(BTreeMap::new()),
        }
    }

    pub(crate) fn observe(&self, labels: String, elapsed: Duration) {
        self.observe_value(labels, elapsed.as_secs_f64());
    }

    /// Counts `value` (in the unit of the family's bounds) into `labels`' series.
    pub(crate) fn observe_value(&self, labels: String, value: f64) {
        let bounds = self.bounds;
        let mut series = self.series.lock().unwrap();
        series
            .entry(labels)
            .or_insert_with(|| Series::with_bounds(bounds))
            .observe_value(value);
    }

    /// The family's `HELP`, `TYPE` and series lines.
    pub(crate) fn render(&self, out: &mut String, name: &str, help: &str) {
        let _ = writeln!(out, "# HELP {name} {help}\n# TYPE {name} histogram");
        for (labels, series) in self.series.lock().unwrap().iter() {
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
        let tokens = Histograms::with_bounds(&TOKEN_BUCKETS);
        tokens.observe_value("t=\"input\"".into(), 100.0);
        let mut out = String::new();
        tokens.render(&mut out, "tokens", "help");
        assert!(out.contains("tokens_bucket{t=\"input\",le=\"64\"} 0\n"), "{out}");
        assert!(out.contains("tokens_bucket{t=\"input\",le=\"256\"} 1\n"), "{out}");
        assert!(out.contains("tokens_sum{t=\"input\"} 100\n"), "{out}");
    }
}
