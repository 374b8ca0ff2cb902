//! Process-wide logging to stderr.
//!
//! The hub logs plain lines (`<time> <LEVEL> <target>: <message>`) to stderr only, so
//! `wasmhub mcp --stdio` can keep stdout for the protocol. `<time>` is RFC 3339 in UTC
//! with milliseconds (`2026-11-23T01:02:03.456Z`), so a reader need not convert it. The level comes from
//! `WASMHUB_LOG` (`error`, `warn`, `info`, `debug`, `trace`; default `info`).
//! A line written while a traced request is served ends with `trace_id=<hex>`;
//! with `telemetry.log_format = "json"` each line is one JSON object instead
//! (`time`, `level`, `target`, `message`, `trace_id` when there is one).
//! `telemetry` tells this module where the current trace id is ([`configure`]),
//! so logging imports nothing.

use std::fmt::Write as _;
use std::io::Write;
use std::sync::OnceLock;
use std::sync::atomic::{AtomicBool, AtomicU8, Ordering};

/// Severity of a log line, most severe first.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
#[repr(u8)]
pub(crate) enum Level {
    Error = 1,
    Warn = 2,
    Info = 3,
    Debug = 4,
    Trace = 5,
}

impl Level {
    fn label(self) -> &'static str {
        match self {
            Level::Error => "ERROR",
            Level::Warn => "WARN",
            Level::Info => "INFO",
            Level::Debug => "DEBUG",
            Level::Trace => "TRACE",
        }
    }

    fn parse(s: &str) -> Option<Level> {
        match s.trim().to_ascii_lowercase().as_str() {
            "error" => Some(Level::Error),
            "warn" | "warning" => Some(Level::Warn),
            "info" => Some(Level::Info),
            "debug" => Some(Level::Debug),
            "trace" => Some(Level::Trace),
            _ => None,
        }
    }
}

static MAX_LEVEL: AtomicU8 = AtomicU8::new(Level::Info as u8);
static JSON: AtomicBool = AtomicBool::new(false);
/// Where the current trace id comes from (set by `telemetry::install`).
static TRACE_ID: OnceLock<fn() -> Option<[u8; 16]>> = OnceLock::new();

/// Sets the line format (`json` or text) and the source of the trace id lines carry.
pub(crate) fn configure(json: bool, trace_id: fn() -> Option<[u8; 16]>) {
    JSON.store(json, Ordering::Relaxed);
    let _ = TRACE_ID.set(trace_id);
}

/// Reads `WASMHUB_LOG` once at start-up.
pub(crate) fn init_from_env() {
    if let Ok(value) = std::env::var("WASMHUB_LOG") {
        match Level::parse(&value) {
            Some(level) => MAX_LEVEL.store(level as u8, Ordering::Relaxed),
            // A line of the log like any other (a warning is written at every level).
            None => write(
                Level::Warn,
                module_path!(),
                format_args!("ignoring WASMHUB_LOG={value:?} (use error, warn, info, debug or trace)"),
            ),
        }
    }
}

/// Whether lines of `level` are written.
pub(crate) fn enabled(level: Level) -> bool {
    level as u8 <= MAX_LEVEL.load(Ordering::Relaxed)
}

#[doc(hidden)]
pub(crate) fn write(level: Level, target: &str, args: std::fmt::Arguments<'_>) {
    let trace_id = TRACE_ID.get().and_then(|source| source());
    let line = line(level, target, args, trace_id, JSON.load(Ordering::Relaxed));
    // One write per line so concurrent lines do not interleave.
    let _ = std::io::stderr().lock().write_all(line.as_bytes());
}

/// One log line, newline included.
fn line(
    level: Level,
    target: &str,
    args: std::fmt::Arguments<'_>,
    trace_id: Option<[u8; 16]>,
    json: bool,
) -> String {
    let time = Rfc3339(crate::clock::now_ms());
    let hex = trace_id.map(|id| {
        id.iter().fold(String::with_capacity(32), |mut s, b| {
            let _ = write!(s, "{b:02x}");
            s
        })
    });
    if json {
        let mut object = serde_json::json!({
            "time": time.to_string(),
            "level": level.label(),
            "target": target,
            "message": args.to_string(),
        });
        if let Some(hex) = hex {
            object["trace_id"] = serde_json::Value::String(hex);
        }
        return format!("{object}\n");
    }
    match hex {
        Some(hex) => format!("{time} {:5} {target}: {args} trace_id={hex}\n", level.label()),
        None => format!("{time} {:5} {target}: {args}\n", level.label()),
    }
}

/// Unix milliseconds shown as an RFC 3339 UTC time, `YYYY-MM-DDThh:mm:ss.mmmZ`.
pub(crate) struct Rfc3339(pub u64);

impl std::fmt::Display for Rfc3339 {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let (secs, ms) = (self.0 / 1000, self.0 % 1000);
        let (days, day_secs) = (secs / 86_400, secs % 86_400);
        let (year, month, day) = civil_from_days(days);
        let (h, m, s) = (day_secs / 3600, day_secs / 60 % 60, day_secs % 60);
        write!(f, "{year:04}-{month:02}-{day:02}T{h:02}:{m:02}:{s:02}.{ms:03}Z")
    }
}

/// (year, month, day) of the day `days` after 1970-01-01 in the proleptic Gregorian
/// calendar: Howard Hinnant's `civil_from_days`, counted in 400-year eras that start
/// on 0000-03-01 so the leap day falls at the end of each era-year.
fn civil_from_days(days: u64) -> (u64, u64, u64) {
    let z = days + 719_468; // days since 0000-03-01
    let era = z / 146_097;
    let doe = z % 146_097; // day of era, 0..146096
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365; // 0..399
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100); // day of the March-based year
    let mp = (5 * doy + 2) / 153; // month from March, 0..11
    let day = doy - (153 * mp + 2) / 5 + 1;
    let month = if mp < 10 { mp + 3 } else { mp - 9 };
    let year = era * 400 + yoe + u64::from(month <= 2);
    (year, month, day)
}

/// `log!(Level::Info, "loaded {name}")`: writes one line when the level is enabled.
#[macro_export]
macro_rules! log {
    ($level:expr, $($arg:tt)+) => {{
        let level = $level;
        if $crate::logging::enabled(level) {
            $crate::logging::write(level, module_path!(), format_args!($($arg)+));
        }
    }};
}

/// `error!("...")`: writes one line at `Level::Error` when that level is enabled (like `log!`).
#[macro_export]
macro_rules! error { ($($arg:tt)+) => { $crate::log!($crate::logging::Level::Error, $($arg)+) }; }
/// `warn!("...")`: writes one line at `Level::Warn` when that level is enabled (like `log!`).
#[macro_export]
macro_rules! warn { ($($arg:tt)+) => { $crate::log!($crate::logging::Level::Warn, $($arg)+) }; }
/// `info!("...")`: writes one line at `Level::Info` when that level is enabled (like `log!`).
#[macro_export]
macro_rules! info { ($($arg:tt)+) => { $crate::log!($crate::logging::Level::Info, $($arg)+) }; }
/// `debug!("...")`: writes one line at `Level::Debug` when that level is enabled (like `log!`).
#[macro_export]
macro_rules! debug { ($($arg:tt)+) => { $crate::log!($crate::logging::Level::Debug, $($arg)+) }; }
/// `trace!("...")`: writes one line at `Level::Trace` when that level is enabled (like `log!`).
#[macro_export]
macro_rules! trace { ($($arg:tt)+) => { $crate::log!($crate::logging::Level::Trace, $($arg)+) }; }

#[cfg(test)]
mod tests {
    use super::{Level, Rfc3339, line};

    fn at(ms: u64) -> String {
        Rfc3339(ms).to_string()
    }

    #[test]
    fn lines_carry_the_trace_id_as_text_or_json() {
        let id = Some([0xab; 16]);
        let text = line(Level::Info, "t", format_args!("hello"), id, false);
        assert!(
            text.ends_with(&format!("INFO  t: hello trace_id={}\n", "ab".repeat(16))),
            "{text}"
        );
        let plain = line(Level::Warn, "t", format_args!("x"), None, false);
        assert!(plain.ends_with("WARN  t: x\n"), "{plain}");
        let json = line(Level::Error, "m::n", format_args!("a \"quote\""), id, true);
        let v: serde_json::Value = serde_json::from_str(json.trim_end()).unwrap();
        assert_eq!(v["level"], "ERROR");
        assert_eq!(v["target"], "m::n");
        assert_eq!(v["message"], "a \"quote\"");
        assert_eq!(v["trace_id"], "ab".repeat(16));
        let v: serde_json::Value =
            serde_json::from_str(line(Level::Info, "t", format_args!("m"), None, true).trim_end()).unwrap();
        assert!(v.get("trace_id").is_none() && v["time"].as_str().unwrap().ends_with('Z'));
    }

    #[test]
    fn timestamps_are_rfc3339_utc_with_milliseconds() {
        assert_eq!(at(0), "1970-01-01T00:00:00.000Z");
        // Leap days: a year divisible by 4, and 2000 (divisible by 400).
        assert_eq!(at(951_782_400_000), "2000-02-29T00:00:00.000Z");
        assert_eq!(at(1_709_251_199_999), "2024-02-29T23:59:59.999Z");
        assert_eq!(at(1_709_251_200_000), "2024-03-01T00:00:00.000Z");
        // End of year and the instant after.
        assert_eq!(at(1_767_225_599_999), "2025-12-31T23:59:59.999Z");
        assert_eq!(at(1_767_225_600_000), "2026-01-01T00:00:00.000Z");
        // 2100 is not a leap year.
        assert_eq!(at(4_107_542_400_000), "2100-03-01T00:00:00.000Z");
        assert_eq!(at(1_795_395_723_456), "2026-11-23T01:02:03.456Z");
    }
}
