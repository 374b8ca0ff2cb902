//! Newline-delimited JSON-RPC, the stdio transport of MCP in both directions: one
//! message per line, read within a size bound, written one per line with a flush
//! whenever nothing else is queued. The hub's own stdio server
//! (`surfaces::mcp::stdio`) and its client of stdio servers (`mcp_client`) both
//! use it.

use serde_json::Value;
use tokio::io::{AsyncBufRead, AsyncBufReadExt, AsyncReadExt, AsyncWrite, AsyncWriteExt};
use tokio::sync::mpsc;

/// What one read gave.
#[derive(Debug, PartialEq, Eq)]
pub(crate) enum Line {
    /// The input ended.
    End,
    /// A line (with its newline, if it had one) is in the buffer.
    Read,
    /// The line is longer than the bound; the buffer holds its first bytes, the
    /// rest is still unread (skip it with [`skip_line`] or stop reading).
    TooLong,
}

/// Reads one line into `line` (cleared first), at most `max_line` bytes of it.
pub(crate) async fn read_line<R: AsyncBufRead + Unpin>(
    input: &mut R,
    line: &mut Vec<u8>,
    max_line: usize,
) -> std::io::Result<Line> {
    line.clear();
    let n = input.take(max_line as u64 + 1).read_until(b'\n', line).await?;
    Ok(if n == 0 {
        Line::End
    } else if line.len() > max_line && line.last() != Some(&b'\n') {
        Line::TooLong
    } else {
        Line::Read
    })
}

/// Skips the rest of the current line.
pub(crate) async fn skip_line<R: AsyncBufRead + Unpin>(input: &mut R) -> std::io::Result<()> {
    loop {
        let buf = input.fill_buf().await?;
        if buf.is_empty() {
            return Ok(());
        }
        if let Some(i) = buf.iter().position(|&b| b == b'\n') {
            input.consume(i + 1);
            return Ok(());
        }
        let len = buf.len();
        input.consume(len);
    }
}

/// Writes each message of `rx` as one line until the channel closes.
pub(crate) async fn write_loop<W: AsyncWrite + Unpin>(
    mut output: W,
    mut rx: mpsc::Receiver<Value>,
) -> std::io::Result<()> {
    while let Some(message) = rx.recv().await {
        let mut bytes = serde_json::to_vec(&message).expect("a JSON value serializes");
        bytes.push(b'\n');
        output.write_all(&bytes).await?;
        // Flush per message unless more are already queued.
        if rx.is_empty() {
            output.flush().await?;
        }
    }
    output.flush().await
}
