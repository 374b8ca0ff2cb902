//! Server-sent events: the one encoder for every stream the hub sends (data frames,
//! `: keepalive` comments, `[DONE]`) and the parser for streams it reads (upstream
//! model providers, MCP servers).
//!
//! The parser follows the WHATWG event-stream rules that matter in practice: lines end
//! in CRLF, LF or CR (a CR at the end of one read may be followed by the LF in the
//! next), `:` lines are comments, `data:` lines of one event are joined with `\n`, an
//! empty line dispatches. It works on arbitrary read boundaries (a multi-byte UTF-8
//! character may be split across reads) and refuses an event larger than its cap
//! instead of buffering without limit.

use serde::Serialize;

/// A comment frame clients ignore; sent on idle streams so proxies keep them open.
pub const KEEPALIVE: &[u8] = b": keepalive\n\n";
/// The frame that ends OpenAI and AI SDK UI message streams.
pub const DONE: &[u8] = b"data: [DONE]\n\n";

/// Appends `data: <compact JSON>\n\n`. Compact JSON never contains a raw newline, so
/// one `data:` line is always enough.
pub fn write_json<T: Serialize + ?Sized>(buf: &mut Vec<u8>, value: &T) {
    buf.extend_from_slice(b"data: ");
    serde_json::to_writer(&mut *buf, value).expect("serializing to a Vec cannot fail");
    buf.extend_from_slice(b"\n\n");
}

/// Appends one event with an optional `event:` and `id:` line; `data` is split into
/// one `data:` line per line so embedded newlines survive the round trip.
pub fn write_event(buf: &mut Vec<u8>, event: Option<&str>, id: Option<&str>, data: &str) {
    if let Some(event) = event {
        buf.extend_from_slice(b"event: ");
        buf.extend_from_slice(single_line(event).as_bytes());
        buf.push(b'\n');
    }
    if let Some(id) = id {
        buf.extend_from_slice(b"id: ");
        buf.extend_from_slice(single_line(id).as_bytes());
        buf.push(b'\n');
    }
    for line in data.split('\n') {
        buf.extend_from_slice(b"data: ");
        buf.extend_from_slice(line.strip_suffix('\r').unwrap_or(line).as_bytes());
        buf.push(b'\n');
    }
    buf.push(b'\n');
}

/// Appends a comment frame (`: text\n\n`).
pub fn write_comment(buf: &mut Vec<u8>, text: &str) {
    buf.extend_from_slice(b": ");
    buf.extend_from_slice(single_line(text).as_bytes());
    buf.extend_from_slice(b"\n\n");
}

/// Field values cannot contain line breaks; cut at the first one.
fn single_line(s: &str) -> &str {
    s.split(['\n', '\r']).next().unwrap_or("")
}

/// Index of the first `\n` or `\r`. Word-at-a-time: SSE lines are long JSON
/// payloads, and a byte loop was the parser's main cost.
fn find_eol(bytes: &[u8]) -> Option<usize> {
    use crate::swar::{find_first, xor_each, zero_bytes};
    find_first(
        bytes,
        |w| zero_bytes(xor_each(w, b'\n')) | zero_bytes(xor_each(w, b'\r')),
        |b| b == b'\n' || b == b'\r',
    )
}

/// Bytes a line may carry besides its value (the field name and colon).
const FIELD_SLACK: usize = 16;

/// One dispatched event, borrowed from the parser until the callback returns.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Event<'a> {
    /// The `event:` field; `"message"` when absent.
    pub event: &'a str,
    /// The `data:` lines joined with `\n`.
    pub data: &'a str,
    /// The last `id:` seen on this stream, if any.
    pub id: Option<&'a str>,
}

/// An owned [`Event`], for callers that queue events.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct OwnedEvent {
    /// The `event:` field; `"message"` when absent.
    pub event: String,
    /// The `data:` lines joined with `\n`.
    pub data: String,
    /// The last `id:` seen on the stream, if any.
    pub id: Option<String>,
}

impl Event<'_> {
    /// Copies the event out of the parser's buffer so it can outlive the callback.
    pub fn to_owned(&self) -> OwnedEvent {
        OwnedEvent {
            event: self.event.to_string(),
            data: self.data.to_string(),
            id: self.id.map(str::to_string),
        }
    }
}

/// Why the parser gave up on a stream.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ParseError {
    /// One event (or one line) grew past the cap without ending.
    EventTooLarge {
        /// The cap the parser was built with, in bytes.
        limit: usize,
    },
}

impl std::fmt::Display for ParseError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            ParseError::EventTooLarge { limit } => {
                write!(f, "an event is larger than the {limit}-byte limit")
            }
        }
    }
}

impl std::error::Error for ParseError {}

/// Incremental event-stream parser. Feed it reads in order, then call [`finish`].
///
/// [`finish`]: Parser::finish
pub struct Parser {
    /// Bytes of the current, not yet terminated line.
    line: Vec<u8>,
    /// The previous read ended in CR: a leading LF in the next read belongs to it.
    after_cr: bool,
    data: Vec<u8>,
    /// Whether the current event has any `data:` line (an empty `data:` counts).
    has_data: bool,
    event: String,
    id: Option<String>,
    max_event: usize,
    failed: bool,
}

impl Parser {
    /// A parser that refuses events larger than `max_event` bytes.
    pub fn new(max_event: usize) -> Parser {
        Parser {
            line: Vec::new(),
            after_cr: false,
            data: Vec::new(),
            has_data: false,
            event: String::new(),
            id: None,
            max_event,
            failed: false,
        }
    }

    /// Parses `bytes` and calls `on_event` for every event they complete.
    pub fn feed(&mut self, mut bytes: &[u8], on_event: &mut impl FnMut(Event<'_>)) -> Result<(), ParseError> {
        if self.failed {
            return Err(ParseError::EventTooLarge {
                limit: self.max_event,
            });
        }
        if self.after_cr {
            self.after_cr = false;
            if let [b'\n', rest @ ..] = bytes {
                bytes = rest;
            }
        }
        while !bytes.is_empty() {
            if self.line.is_empty()
                && !self.has_data
                && let Some(rest) = self.whole_data_event(bytes, on_event)?
            {
                bytes = rest;
                continue;
            }
            match find_eol(bytes) {
                Some(end) => {
                    let terminator = bytes[end];
                    if self.line.is_empty() {
                        self.check_size(end)?;
                        self.take_line(&bytes[..end], on_event);
                    } else {
                        self.line.extend_from_slice(&bytes[..end]);
                        self.check_size(0)?;
                        let line = std::mem::take(&mut self.line);
                        self.take_line(&line, on_event);
                        self.line = line;
                        self.line.clear();
                    }
                    bytes = &bytes[end + 1..];
                    if terminator == b'\r' {
                        match bytes.first() {
                            Some(b'\n') => bytes = &bytes[1..],
                            Some(_) => {}
                            None => self.after_cr = true,
                        }
                    }
                }
                None => {
                    self.line.extend_from_slice(bytes);
                    self.check_size(0)?;
                    break;
                }
            }
        }
        Ok(())
    }

    /// Fast path for the common frame, `data: <payload>\n\n` whole in this read:
    /// dispatches straight from the read buffer without copying the payload.
    /// Returns the bytes after the frame, or `None` to take the general path.
    fn whole_data_event<'b>(
        &mut self,
        bytes: &'b [u8],
        on_event: &mut impl FnMut(Event<'_>),
    ) -> Result<Option<&'b [u8]>, ParseError> {
        let Some(rest) = bytes.strip_prefix(b"data:") else {
            return Ok(None);
        };
        let Some(end) = find_eol(rest) else {
            return Ok(None);
        };
        let after = match &rest[end..] {
            [b'\n', b'\n', after @ ..] => after,
            [b'\r', b'\n', b'\r', b'\n', after @ ..] => after,
            _ => return Ok(None),
        };
        self.check_size(end)?;
        let value = &rest[..end];
        let value = value.strip_prefix(b" ").unwrap_or(value);
        let Ok(data) = std::str::from_utf8(value) else {
            return Ok(None);
        };
        let event = if self.event.is_empty() {
            "message"
        } else {
            self.event.as_str()
        };
        on_event(Event {
            event,
            data,
            id: self.id.as_deref(),
        });
        self.event.clear();
        Ok(Some(after))
    }

    /// Ends the stream. A last event that was not followed by an empty line is still
    /// dispatched: several providers close the connection right after the final
    /// `data:` line, and dropping that line would lose the finish reason or usage.
    pub fn finish(&mut self, on_event: &mut impl FnMut(Event<'_>)) -> Result<(), ParseError> {
        if self.failed {
            return Err(ParseError::EventTooLarge {
                limit: self.max_event,
            });
        }
        if !self.line.is_empty() {
            let line = std::mem::take(&mut self.line);
            self.take_line(&line, on_event);
        }
        self.after_cr = false;
        self.dispatch(on_event);
        Ok(())
    }

    /// Bytes held for the event in progress.
    pub fn buffered(&self) -> usize {
        self.line.len() + self.data.len()
    }

    fn check_size(&mut self, extra: usize) -> Result<(), ParseError> {
        // The slack covers the field name (`data: `) so the cap is about the value.
        if self.line.len() + self.data.len() + extra > self.max_event + FIELD_SLACK {
            self.failed = true;
            self.line = Vec::new();
            self.data = Vec::new();
            return Err(ParseError::EventTooLarge {
                limit: self.max_event,
            });
        }
        Ok(())
    }

    fn take_line(&mut self, line: &[u8], on_event: &mut impl FnMut(Event<'_>)) {
        if line.is_empty() {
            self.dispatch(on_event);
            return;
        }
        if line[0] == b':' {
            return;
        }
        let (field, value) = match line.iter().position(|&b| b == b':') {
            Some(colon) => {
                let value = &line[colon + 1..];
                (&line[..colon], value.strip_prefix(b" ").unwrap_or(value))
            }
            None => (line, &b""[..]),
        };
        match field {
            b"data" => {
                if self.has_data {
                    self.data.push(b'\n');
                }
                self.data.extend_from_slice(value);
                self.has_data = true;
            }
            b"event" => self.event = String::from_utf8_lossy(value).into_owned(),
            // An id containing NUL is ignored, as the spec says.
            b"id" if !value.contains(&0) => self.id = Some(String::from_utf8_lossy(value).into_owned()),
            // `retry:` and unknown fields are ignored.
            _ => {}
        }
    }

    fn dispatch(&mut self, on_event: &mut impl FnMut(Event<'_>)) {
        if !self.has_data {
            self.event.clear();
            return;
        }
        let data = String::from_utf8_lossy(&self.data);
        let event = if self.event.is_empty() {
            "message"
        } else {
            self.event.as_str()
        };
        on_event(Event {
            event,
            data: &data,
            id: self.id.as_deref(),
        });
        self.data.clear();
        self.has_data = false;
        self.event.clear();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parse_in_pieces(input: &[u8], piece: usize) -> Vec<OwnedEvent> {
        let mut parser = Parser::new(1 << 20);
        let mut out = Vec::new();
        for chunk in input.chunks(piece.max(1)) {
            parser.feed(chunk, &mut |e| out.push(e.to_owned())).unwrap();
        }
        parser.finish(&mut |e| out.push(e.to_owned())).unwrap();
        out
    }

    fn datas(events: &[OwnedEvent]) -> Vec<&str> {
        events.iter().map(|e| e.data.as_str()).collect()
    }

    #[test]
    fn every_line_ending_and_every_split_point_gives_the_same_events() {
        let lf = "data: {\"a\":1}\n\n: PROCESSING\n\ndata: two\ndata: lines\n\ndata: é✓\n\ndata: [DONE]\n\n";
        let crlf = lf.replace('\n', "\r\n");
        let cr = lf.replace('\n', "\r");
        let want = vec!["{\"a\":1}", "two\nlines", "é✓", "[DONE]"];
        for input in [lf.to_string(), crlf, cr] {
            for piece in 1..input.len() {
                assert_eq!(
                    datas(&parse_in_pieces(input.as_bytes(), piece)),
                    want,
                    "piece {piece}: {input:?}"
                );
            }
        }
    }

    #[test]
    fn fields_comments_and_ids() {
        let input = b"event: error\nid: 7\nretry: 10\ndata:no-space\n\n:comment only\n\ndata\n\nevent: x\n\ndata: after\n\n";
        let events = parse_in_pieces(input, 1000);
        assert_eq!(events.len(), 3);
        assert_eq!(
            events[0],
            OwnedEvent {
                event: "error".into(),
                data: "no-space".into(),
                id: Some("7".into())
            }
        );
        // `data` with no colon is an empty data line; the id persists across events.
        assert_eq!(
            events[1],
            OwnedEvent {
                event: "message".into(),
                data: "".into(),
                id: Some("7".into())
            }
        );
        // An event with no data is dropped and its `event:` does not leak into the next.
        assert_eq!(events[2].event, "message");
        assert_eq!(events[2].data, "after");
    }

    #[test]
    fn missing_final_blank_line_still_dispatches() {
        assert_eq!(
            datas(&parse_in_pieces(b"data: a\n\ndata: last", 3)),
            vec!["a", "last"]
        );
        assert_eq!(
            datas(&parse_in_pieces(b"data: a\n\ndata: last\n", 3)),
            vec!["a", "last"]
        );
        assert!(parse_in_pieces(b"", 3).is_empty());
    }

    #[test]
    fn oversized_events_are_refused_in_one_line_or_many() {
        let mut parser = Parser::new(64);
        let big = format!("data: {}\n\n", "x".repeat(100));
        let err = parser
            .feed(big.as_bytes(), &mut |_| panic!("no event expected"))
            .unwrap_err();
        assert_eq!(err, ParseError::EventTooLarge { limit: 64 });
        // Once failed, the parser stays failed instead of resynchronising mid-event.
        assert!(parser.feed(b"data: ok\n\n", &mut |_| {}).is_err());

        let mut parser = Parser::new(64);
        let mut got = 0;
        let many = "data: 0123456789\n".repeat(20);
        assert!(parser.feed(many.as_bytes(), &mut |_| got += 1).is_err());
        assert_eq!(got, 0);

        // Byte-by-byte growth of an unterminated line is caught too.
        let mut parser = Parser::new(64);
        let mut result = Ok(());
        for b in big.as_bytes() {
            result = parser.feed(std::slice::from_ref(b), &mut |_| {});
            if result.is_err() {
                break;
            }
        }
        assert!(result.is_err());
        assert!(parser.buffered() <= 64 + FIELD_SLACK);
    }

    #[test]
    fn end_of_line_search_finds_the_first_break_at_every_offset() {
        for len in 0..40 {
            for at in 0..len {
                for brk in [b'\n', b'\r'] {
                    let mut v = vec![b'x'; len];
                    v[at] = brk;
                    if at + 3 < len {
                        v[at + 3] = b'\n';
                    }
                    assert_eq!(find_eol(&v), Some(at), "len {len} at {at}");
                }
            }
            assert_eq!(
                find_eol(&vec![0x8au8; len]),
                None,
                "bytes with the high bit set are not breaks"
            );
        }
    }

    #[test]
    fn events_right_at_the_cap_pass() {
        let mut parser = Parser::new(10);
        let mut out = Vec::new();
        parser
            .feed(b"data: 0123456789\n\n", &mut |e| out.push(e.data.to_string()))
            .unwrap();
        assert_eq!(out, vec!["0123456789"]);
    }

    #[test]
    fn encoder_round_trips_through_the_parser() {
        let mut buf = Vec::new();
        write_json(&mut buf, &("text-delta", "a\nb"));
        write_event(
            &mut buf,
            Some("message"),
            Some("3"),
            "line one\nline two\r\nthree",
        );
        write_comment(&mut buf, "keepalive\nignored");
        buf.extend_from_slice(KEEPALIVE);
        buf.extend_from_slice(DONE);
        let text = std::str::from_utf8(&buf).unwrap();
        assert!(text.starts_with("data: [\"text-delta\",\"a\\nb\"]\n\n"), "{text}");
        assert!(text.contains(": keepalive\n\n"));
        let events = parse_in_pieces(&buf, 5);
        assert_eq!(
            datas(&events),
            vec![
                "[\"text-delta\",\"a\\nb\"]",
                "line one\nline two\nthree",
                "[DONE]"
            ]
        );
        assert_eq!(events[1].id.as_deref(), Some("3"));
    }
}
