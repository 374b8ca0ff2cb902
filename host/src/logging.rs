//! Process-wide logging to stderr.
//!
//! The hub logs plain lines (`<time> <LEVEL> <target>: <message>`) to stderr only, so
//! `wasmhub mcp --stdio` can keep stdout for the protocol. The level comes from
//! `WASMHUB_LOG` (`error`, `warn`, `info`, `debug`, `trace`; default `info`).

use std::io::Write;
use std::sync::atomic::{AtomicU8, Ordering};

/// Severity of a log line, most severe first.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
#[repr(u8)]
pub enum Level {
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

/// Reads `WASMHUB_LOG` once at start-up.
pub fn init_from_env() {
    if let Ok(value) = std::env::var("WASMHUB_LOG") {
        match Level::parse(&value) {
            Some(level) => MAX_LEVEL.store(level as u8, Ordering::Relaxed),
            None => {
                eprintln!("wasmhub: ignoring WASMHUB_LOG={value:?} (use error, warn, info, debug or trace)")
            }
        }
    }
}

/// Whether lines of `level` are written.
pub fn enabled(level: Level) -> bool {
    level as u8 <= MAX_LEVEL.load(Ordering::Relaxed)
}

#[doc(hidden)]
pub fn write(level: Level, target: &str, args: std::fmt::Arguments<'_>) {
    let now_ms = crate::clock::now_ms();
    let line = format!(
        "{}.{:03} {:5} {}: {}\n",
        now_ms / 1000,
        now_ms % 1000,
        level.label(),
        target,
        args
    );
    // One write per line so concurrent lines do not interleave.
    let _ = std::io::stderr().lock().write_all(line.as_bytes());
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
