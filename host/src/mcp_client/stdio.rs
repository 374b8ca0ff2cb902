//! The stdio transport: a [`Connection`] over a child's stdin and stdout as
//! newline-delimited JSON-RPC (`mcp_wire::lines`), and its stderr to the hub log
//! within `stderr_lines_per_minute`. A line longer than `max_message_kb`, a line
//! that is not JSON, or the end of stdout closes the connection, saying which.

use super::connection::{Connection, Event, Outbound};
use super::error::RequestError;
use super::process::Child;
use crate::config::McpServerConfig;
use crate::mcp_wire::jsonrpc::{self, Payload};
use crate::mcp_wire::lines::{self, Line};
use serde_json::Value;
use std::sync::Arc;
use std::time::Duration;
use tokio::io::BufReader;
use tokio::sync::mpsc;

/// Messages queued for the child's stdin; past it the child is not reading.
const INBOX: usize = 256;

/// Longest stderr line logged, in bytes.
const MAX_STDERR_LINE: usize = 1024;

struct Lines(mpsc::Sender<Value>);

impl Outbound for Lines {
    fn send(&self, message: Value) -> Result<(), RequestError> {
        self.0.try_send(message).map_err(|e| match e {
            mpsc::error::TrySendError::Full(_) => RequestError::NotReading,
            mpsc::error::TrySendError::Closed(_) => {
                RequestError::Closed("the server's input is closed".into())
            }
        })
    }
}

/// Connects to `child`: the connection, its events, and the tasks that carry it
/// (they end when the child's stdout does).
pub(super) fn connect(
    child: &mut Child,
    config: &McpServerConfig,
) -> (Arc<Connection>, mpsc::UnboundedReceiver<Event>) {
    let (tx, rx) = mpsc::channel(INBOX);
    let (conn, events) = Connection::new(Box::new(Lines(tx)), super::asked::Asked::of(config));
    if let Some(stdin) = child.stdin.take() {
        tokio::spawn(async move {
            // A write error means the child went; its stdout's end reports that.
            let _ = lines::write_loop(stdin, rx).await;
        });
    }
    if let Some(stderr) = child.stderr.take() {
        tokio::spawn(log_stderr(
            stderr,
            config.name.clone(),
            config.stderr_lines_per_minute,
        ));
    }
    if let Some(stdout) = child.stdout.take() {
        let reader = Reader {
            conn: conn.clone(),
            max_line: (config.max_message_kb * 1024) as usize,
            max_kb: config.max_message_kb,
            exited: child.exited.clone(),
            grace: Duration::from_millis(config.stop_grace_ms),
        };
        tokio::spawn(reader.run(stdout));
    }
    (conn, events)
}

struct Reader {
    conn: Arc<Connection>,
    max_line: usize,
    max_kb: u64,
    exited: tokio::sync::watch::Receiver<Option<super::process::Exit>>,
    grace: Duration,
}

impl Reader {
    async fn run(mut self, stdout: tokio::net::unix::pipe::Receiver) {
        let mut input = BufReader::new(stdout);
        let mut line = Vec::with_capacity(4096);
        let how = loop {
            match lines::read_line(&mut input, &mut line, self.max_line).await {
                Err(e) => break format!("reading its stdout failed: {e}"),
                Ok(Line::End) => break self.ended().await,
                Ok(Line::TooLong) => {
                    break format!(
                        "it sent a message larger than max_message_kb ({} KiB)",
                        self.max_kb
                    );
                }
                Ok(Line::Read) => {}
            }
            if line.iter().all(u8::is_ascii_whitespace) {
                continue;
            }
            match jsonrpc::parse(&line) {
                Ok(Payload::Single(m)) => self.conn.deliver(m),
                Ok(Payload::Batch(ms)) => ms.into_iter().for_each(|m| self.conn.deliver(m)),
                Err(e) => {
                    let text = String::from_utf8_lossy(&line[..line.len().min(80)]).into_owned();
                    break format!("it sent a line that is not JSON-RPC ({}): {text:?}", e.message);
                }
            }
            if self.conn.closed().is_some() {
                return;
            }
        };
        self.conn.close(how);
    }

    /// Its stdout ended: how the process ended, when it does within the grace time.
    async fn ended(&mut self) -> String {
        let wait = async { self.exited.wait_for(Option::is_some).await.map_or(None, |e| *e) };
        match tokio::time::timeout(self.grace, wait).await {
            Ok(Some(exit)) => format!("the server {exit}"),
            _ => "the server closed its stdout".into(),
        }
    }
}

/// The child's stderr, line by line, into the hub log: at most `per_minute` lines
/// a minute, each cut at 1 KiB; the lines left out are counted and the count is
/// logged when the minute is over.
async fn log_stderr(stderr: tokio::net::unix::pipe::Receiver, server: String, per_minute: u32) {
    let mut input = BufReader::new(stderr);
    let mut line = Vec::with_capacity(256);
    let mut window = tokio::time::Instant::now();
    let (mut logged, mut dropped) = (0u32, 0u64);
    loop {
        match lines::read_line(&mut input, &mut line, MAX_STDERR_LINE).await {
            Ok(Line::End) | Err(_) => break,
            Ok(Line::TooLong) => {
                if lines::skip_line(&mut input).await.is_err() {
                    break;
                }
            }
            Ok(Line::Read) => {}
        }
        if window.elapsed() >= Duration::from_secs(60) {
            if dropped > 0 {
                crate::warn!(
                    "mcp server {server}: {dropped} stderr lines left out of the log (stderr_lines_per_minute = {per_minute})"
                );
            }
            (window, logged, dropped) = (tokio::time::Instant::now(), 0, 0);
        }
        if logged >= per_minute {
            dropped += 1;
            continue;
        }
        logged += 1;
        let text = String::from_utf8_lossy(&line);
        crate::info!("mcp server {server}: {}", text.trim_end());
    }
    if dropped > 0 {
        crate::warn!(
            "mcp server {server}: {dropped} stderr lines left out of the log (stderr_lines_per_minute = {per_minute})"
        );
    }
}
