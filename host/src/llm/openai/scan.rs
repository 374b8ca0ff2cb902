//! The fast path for streamed chunks: a byte scanner that fills a [`ChatChunk`] in
//! place for the shape providers actually send, skipping unknown keys without
//! building anything.
//!
//! serde's derived parser spent most of its time moving the (large) partly built
//! structs between its visitors; this one writes each field where it ends up. It
//! is strict: anything it is not sure serde would read the same way (escaped keys,
//! duplicate known keys, odd numbers, lone surrogates, deep nesting) makes it give up with `None`, and the caller parses
//! the text with serde instead, which then gives the result or the error. So the
//! two paths never disagree (the rare `usage`, `x_groq` and `error` values are
//! handed to serde as text); `scan_tests.rs` checks that on the recorded streams
//! and on edge cases.

use super::{ChatChunk, Choice, Delta, FunctionDelta, Str, ToolCallDelta};
use std::borrow::Cow;

/// Parses `text` into `chunk` (a default one) when it has the common shape;
/// `None`: use serde (`chunk` then holds what was read so far). Filling the
/// caller's chunk instead of returning one saves moving it (about 250 bytes)
/// twice per streamed chunk, which was about 5% of the transformer's time.
pub(super) fn parse_into<'a>(text: &'a str, chunk: &mut ChatChunk<'a>) -> Option<()> {
    let mut sc = Scan {
        text,
        bytes: text.as_bytes(),
        at: 0,
        depth: 0,
    };
    let mut seen = Seen(0);
    sc.object(|sc, key| {
        match key {
            "object" => chunk.object = seen.once(0).and_then(|_| sc.opt_str())?,
            "model" => chunk.model = seen.once(1).and_then(|_| sc.opt_str())?,
            "message" => chunk.message = seen.once(2).and_then(|_| sc.opt_str())?,
            "choices" => seen.once(3).and_then(|_| sc.choices(&mut chunk.choice))?,
            // Rare (the last chunk, an error frame): serde reads their text.
            "usage" => chunk.usage = seen.once(4).and_then(|_| sc.opt_serde())?,
            "x_groq" => chunk.x_groq = seen.once(5).and_then(|_| sc.opt_serde())?,
            "error" => chunk.error = seen.once(6).and_then(|_| sc.opt_serde())?,
            _ => sc.skip_value()?,
        }
        Some(())
    })?;
    sc.ws();
    (sc.at == sc.bytes.len()).then_some(())
}

/// Known keys already read in one object (serde refuses duplicates).
struct Seen(u32);

impl Seen {
    fn once(&mut self, bit: u32) -> Option<()> {
        let mask = 1 << bit;
        if self.0 & mask != 0 {
            return None;
        }
        self.0 |= mask;
        Some(())
    }
}

/// Nesting deeper than this is left to serde (its own limit is 128).
const MAX_DEPTH: u32 = 64;

struct Scan<'a> {
    text: &'a str,
    bytes: &'a [u8],
    at: usize,
    depth: u32,
}

impl<'a> Scan<'a> {
    fn ws(&mut self) {
        while let Some(b' ' | b'\t' | b'\n' | b'\r') = self.bytes.get(self.at) {
            self.at += 1;
        }
    }

    /// The next non-whitespace byte, not consumed.
    fn peek(&mut self) -> Option<u8> {
        self.ws();
        self.bytes.get(self.at).copied()
    }

    fn eat(&mut self, byte: u8) -> Option<()> {
        (self.peek()? == byte).then(|| self.at += 1)
    }

    fn literal(&mut self, word: &[u8]) -> Option<()> {
        self.ws();
        let end = self.at + word.len();
        (self.bytes.get(self.at..end)? == word).then(|| self.at = end)
    }

    fn null(&mut self) -> Option<()> {
        self.literal(b"null")
    }

    /// `{ "key": value, ... }`, calling `field` with the scanner at each value.
    fn object(&mut self, mut field: impl FnMut(&mut Self, &'a str) -> Option<()>) -> Option<()> {
        self.eat(b'{')?;
        self.enter()?;
        if self.peek()? == b'}' {
            self.at += 1;
        } else {
            loop {
                self.ws();
                let (key, escaped) = self.raw_string()?;
                if escaped {
                    return None;
                }
                self.eat(b':')?;
                field(self, key)?;
                match self.peek()? {
                    b',' => self.at += 1,
                    b'}' => {
                        self.at += 1;
                        break;
                    }
                    _ => return None,
                }
            }
        }
        self.depth -= 1;
        Some(())
    }

    /// `[ value, ... ]`, calling `item` with the scanner at each value.
    fn array(&mut self, mut item: impl FnMut(&mut Self) -> Option<()>) -> Option<()> {
        self.eat(b'[')?;
        self.enter()?;
        if self.peek()? == b']' {
            self.at += 1;
        } else {
            loop {
                item(self)?;
                match self.peek()? {
                    b',' => self.at += 1,
                    b']' => {
                        self.at += 1;
                        break;
                    }
                    _ => return None,
                }
            }
        }
        self.depth -= 1;
        Some(())
    }

    fn enter(&mut self) -> Option<()> {
        self.depth += 1;
        (self.depth <= MAX_DEPTH).then_some(())
    }

    /// A string's text between the quotes, as written, and whether it has escapes.
    fn raw_string(&mut self) -> Option<(&'a str, bool)> {
        if self.bytes.get(self.at) != Some(&b'"') {
            return None;
        }
        let start = self.at + 1;
        let mut i = start;
        let mut escaped = false;
        loop {
            i += crate::swar::json_special(&self.bytes[i..])?;
            match self.bytes[i] {
                b'"' => break,
                b'\\' => {
                    escaped = true;
                    i += match *self.bytes.get(i + 1)? {
                        b'"' | b'\\' | b'/' | b'b' | b'f' | b'n' | b'r' | b't' => 2,
                        b'u' if self.bytes.get(i + 2..i + 6)?.iter().all(u8::is_ascii_hexdigit) => 6,
                        _ => return None,
                    };
                }
                // A raw control character: serde refuses it.
                _ => return None,
            }
        }
        self.at = i + 1;
        // Quotes and backslashes are ASCII, so these are char boundaries.
        Some((&self.text[start..i], escaped))
    }

    /// A string or `null`.
    fn opt_str(&mut self) -> Option<Option<Str<'a>>> {
        if self.peek()? == b'n' {
            return self.null().map(|_| None);
        }
        let (raw, escaped) = self.raw_string()?;
        let text = if escaped {
            Cow::Owned(unescape(raw)?)
        } else {
            Cow::Borrowed(raw)
        };
        Some(Some(Str(text)))
    }

    /// `null`, or a value serde reads from its text (boxed, as in [`ChatChunk`]).
    fn opt_serde<T: serde::de::DeserializeOwned>(&mut self) -> Option<Option<Box<T>>> {
        if self.peek()? == b'n' {
            return self.null().map(|_| None);
        }
        let start = self.at;
        self.skip_value()?;
        serde_json::from_str(&self.text[start..self.at]).ok().map(Some)
    }

    /// A plain non-negative integer that fits `u32`, or `null`.
    fn opt_u32(&mut self) -> Option<Option<u32>> {
        match self.peek()? {
            b'n' => self.null().map(|_| None),
            b'0' => {
                self.at += 1;
                self.after_integer().map(|_| Some(0))
            }
            b'1'..=b'9' => {
                let mut n: u32 = 0;
                while let Some(d @ b'0'..=b'9') = self.bytes.get(self.at) {
                    n = n.checked_mul(10)?.checked_add(u32::from(d - b'0'))?;
                    self.at += 1;
                }
                self.after_integer().map(|_| Some(n))
            }
            _ => None,
        }
    }

    /// Fractions and exponents are left to serde.
    fn after_integer(&self) -> Option<()> {
        match self.bytes.get(self.at) {
            Some(b'.' | b'e' | b'E' | b'0'..=b'9') => None,
            _ => Some(()),
        }
    }

    /// Any JSON value, checked as strictly as serde checks what it ignores.
    fn skip_value(&mut self) -> Option<()> {
        match self.peek()? {
            b'"' => self.raw_string().map(drop),
            b'{' => self.object(|sc, _| sc.skip_value()),
            b'[' => self.array(Self::skip_value),
            b'n' => self.null(),
            b't' => self.literal(b"true"),
            b'f' => self.literal(b"false"),
            b'-' | b'0'..=b'9' => self.number(),
            _ => None,
        }
    }

    /// `-?(0|[1-9][0-9]*)(\.[0-9]+)?([eE][+-]?[0-9]+)?`
    fn number(&mut self) -> Option<()> {
        if self.bytes.get(self.at) == Some(&b'-') {
            self.at += 1;
        }
        match self.bytes.get(self.at)? {
            b'0' => self.at += 1,
            b'1'..=b'9' => self.digits()?,
            _ => return None,
        }
        if self.bytes.get(self.at) == Some(&b'.') {
            self.at += 1;
            self.digits()?;
        }
        if let Some(b'e' | b'E') = self.bytes.get(self.at) {
            self.at += 1;
            if let Some(b'+' | b'-') = self.bytes.get(self.at) {
                self.at += 1;
            }
            self.digits()?;
        }
        Some(())
    }

    /// One or more digits.
    fn digits(&mut self) -> Option<()> {
        let start = self.at;
        while let Some(b'0'..=b'9') = self.bytes.get(self.at) {
            self.at += 1;
        }
        (self.at > start).then_some(())
    }

    /// `choices`: `null`, or an array whose first index-0 choice is kept (the
    /// others are still read, as serde reads them).
    fn choices(&mut self, found: &mut Option<Choice<'a>>) -> Option<()> {
        if self.peek()? == b'n' {
            return self.null();
        }
        self.array(|sc| {
            if found.is_some() {
                return sc.choice(&mut Choice::default());
            }
            let choice = found.insert(Choice::default());
            sc.choice(choice)?;
            if choice.index.unwrap_or(0) != 0 {
                *found = None;
            }
            Some(())
        })
    }

    fn choice(&mut self, choice: &mut Choice<'a>) -> Option<()> {
        let mut seen = Seen(0);
        self.object(|sc, key| {
            match key {
                "index" => choice.index = seen.once(0).and_then(|_| sc.opt_u32())?,
                "finish_reason" => choice.finish_reason = seen.once(1).and_then(|_| sc.opt_str())?,
                "delta" => {
                    seen.once(2)?;
                    if sc.peek()? == b'n' {
                        sc.null()?;
                    } else {
                        sc.delta(choice.delta.insert(Delta::default()))?;
                    }
                }
                _ => sc.skip_value()?,
            }
            Some(())
        })
    }

    fn delta(&mut self, delta: &mut Delta<'a>) -> Option<()> {
        let mut seen = Seen(0);
        self.object(|sc, key| {
            match key {
                "content" => delta.content = seen.once(0).and_then(|_| sc.opt_str())?,
                "refusal" => delta.refusal = seen.once(1).and_then(|_| sc.opt_str())?,
                "reasoning_content" => delta.reasoning_content = seen.once(2).and_then(|_| sc.opt_str())?,
                "reasoning" => delta.reasoning = seen.once(3).and_then(|_| sc.opt_str())?,
                "tool_calls" => {
                    seen.once(4)?;
                    if sc.peek()? == b'n' {
                        sc.null()?;
                    } else {
                        let calls = delta.tool_calls.insert(Vec::new());
                        sc.array(|sc| {
                            calls.push(ToolCallDelta::default());
                            sc.tool_call(calls.last_mut().expect("just pushed"))
                        })?;
                    }
                }
                // Rare (provider extensions): serde reads their text.
                "extra_content" => delta.extra_content = seen.once(5).and_then(|_| sc.opt_serde())?,
                _ => sc.skip_value()?,
            }
            Some(())
        })
    }

    fn tool_call(&mut self, call: &mut ToolCallDelta<'a>) -> Option<()> {
        let mut seen = Seen(0);
        self.object(|sc, key| {
            match key {
                "index" => call.index = seen.once(0).and_then(|_| sc.opt_u32())?,
                "id" => call.id = seen.once(1).and_then(|_| sc.opt_str())?,
                "function" => {
                    seen.once(2)?;
                    if sc.peek()? == b'n' {
                        sc.null()?;
                    } else {
                        sc.function(call.function.insert(FunctionDelta::default()))?;
                    }
                }
                "extra_content" => call.extra_content = seen.once(3).and_then(|_| sc.opt_serde())?,
                _ => sc.skip_value()?,
            }
            Some(())
        })
    }

    fn function(&mut self, function: &mut FunctionDelta<'a>) -> Option<()> {
        let mut seen = Seen(0);
        self.object(|sc, key| {
            match key {
                "name" => function.name = seen.once(0).and_then(|_| sc.opt_str())?,
                "arguments" => function.arguments = seen.once(1).and_then(|_| sc.opt_str())?,
                _ => sc.skip_value()?,
            }
            Some(())
        })
    }
}

/// The text of a string whose escapes `raw_string` checked; `None` for a lone
/// surrogate (serde's error to report).
fn unescape(raw: &str) -> Option<String> {
    let mut out = String::with_capacity(raw.len());
    let mut rest = raw;
    while let Some(at) = rest.find('\\') {
        out.push_str(&rest[..at]);
        let b = rest.as_bytes();
        let (c, used) = match b[at + 1] {
            b'n' => ('\n', 2),
            b't' => ('\t', 2),
            b'r' => ('\r', 2),
            b'b' => ('\u{8}', 2),
            b'f' => ('\u{c}', 2),
            b'u' => {
                let hi = hex4(&rest[at + 2..at + 6])?;
                match hi {
                    0xD800..=0xDBFF => {
                        let lo = rest.get(at + 6..at + 12).filter(|s| s.starts_with("\\u"));
                        let lo = hex4(&lo?[2..])?;
                        if !(0xDC00..=0xDFFF).contains(&lo) {
                            return None;
                        }
                        let code = 0x10000 + ((hi - 0xD800) << 10) + (lo - 0xDC00);
                        (char::from_u32(code)?, 12)
                    }
                    0xDC00..=0xDFFF => return None,
                    _ => (char::from_u32(hi)?, 6),
                }
            }
            // `"`, `\` and `/` stand for themselves.
            other => (char::from(other), 2),
        };
        out.push(c);
        rest = &rest[at + used..];
    }
    out.push_str(rest);
    Some(out)
}

fn hex4(s: &str) -> Option<u32> {
    let s = s.get(..4)?;
    if !s.bytes().all(|b| b.is_ascii_hexdigit()) {
        return None;
    }
    u32::from_str_radix(s, 16).ok()
}

#[cfg(test)]
#[path = "scan_tests.rs"]
mod tests;
