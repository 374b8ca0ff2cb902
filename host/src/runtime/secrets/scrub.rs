//! Scrubbing the secret values a call used from what leaves it: its output, its
//! error, its captured stdout/stderr, its `host.log` lines, the input of its nested
//! calls and the hub-log lines about its requests. Each occurrence becomes
//! `[redacted:NAME]`.
//!
//! What is recognised, for each value: the value itself and every run of
//! [`WINDOW`] characters of it (a value cut into pieces that long, or longer, is
//! still found); and the whole value in standard and URL-safe base64 (with or
//! without padding, at any alignment inside a longer encoded text), in lower- and
//! upper-case hex, URL-encoded (`%XX`, upper or lower case) and JSON-escaped.
//! JSON output is scrubbed string by string after decoding, so any JSON escaping
//! is covered there. Not recognised, and cannot be: pieces shorter than
//! [`WINDOW`], and any other transformation (reversed, XOR-ed, encrypted). Hence
//! `reveal` needs the operator's `allow_reveal`, and injection is the default.

use super::Secret;
use crate::base64;

/// The shortest piece of a value recognised on its own, in characters.
pub const WINDOW: usize = 8;

/// The patterns of every value one call used.
#[derive(Debug, Default)]
pub(crate) struct Scrubber {
    /// (pattern, the secret's name), longest first.
    patterns: Vec<(String, String)>,
}

impl Scrubber {
    pub(crate) fn new(used: &[(String, Secret)]) -> Scrubber {
        let mut patterns = Vec::new();
        for (name, secret) in used {
            for p in encodings(secret.expose()) {
                if !p.is_empty() {
                    patterns.push((p, name.clone()));
                }
            }
        }
        patterns.sort_by(|a, b| b.0.len().cmp(&a.0.len()).then_with(|| a.0.cmp(&b.0)));
        patterns.dedup();
        Scrubber { patterns }
    }

    pub(crate) fn is_empty(&self) -> bool {
        self.patterns.is_empty()
    }

    /// `text` with every recognised occurrence replaced by `[redacted:NAME]`.
    pub(crate) fn text(&self, text: &str) -> String {
        if self.is_empty() {
            return text.to_string();
        }
        // Byte ranges to replace, each with the name of the value it belongs to.
        let mut hits: Vec<(usize, usize, &str)> = Vec::new();
        for (pattern, name) in &self.patterns {
            for (start, _) in text.match_indices(pattern.as_str()) {
                hits.push((start, start + pattern.len(), name));
            }
        }
        if hits.is_empty() {
            return text.to_string();
        }
        hits.sort();
        let mut out = String::with_capacity(text.len());
        let mut at = 0;
        let mut i = 0;
        while i < hits.len() {
            let (start, mut end, name) = hits[i];
            if start < at {
                i += 1;
                continue;
            }
            // Overlapping or touching hits make one redaction.
            while i + 1 < hits.len() && hits[i + 1].0 <= end {
                end = end.max(hits[i + 1].1);
                i += 1;
            }
            out.push_str(&text[at..start]);
            out.push_str("[redacted:");
            out.push_str(name);
            out.push(']');
            at = end;
            i += 1;
        }
        out.push_str(&text[at..]);
        out
    }

    /// JSON text with every string (and object key) scrubbed after decoding, so
    /// an escaped form is found too; text that is not JSON is scrubbed as text.
    pub(crate) fn json(&self, json: &str) -> String {
        if self.is_empty() {
            return json.to_string();
        }
        match serde_json::from_str::<serde_json::Value>(json) {
            Ok(mut value) => {
                self.value(&mut value);
                value.to_string()
            }
            Err(_) => self.text(json),
        }
    }

    /// Every string of `value`, in place.
    pub(crate) fn value(&self, value: &mut serde_json::Value) {
        use serde_json::Value;
        match value {
            Value::String(s) => *s = self.text(s),
            Value::Array(items) => items.iter_mut().for_each(|v| self.value(v)),
            Value::Object(map) => {
                let entries = std::mem::take(map);
                for (k, mut v) in entries {
                    self.value(&mut v);
                    map.insert(self.text(&k), v);
                }
            }
            Value::Null | Value::Bool(_) | Value::Number(_) => {}
        }
    }

    /// Whether `text` holds a recognised occurrence.
    pub(crate) fn finds(&self, text: &str) -> bool {
        self.patterns.iter().any(|(p, _)| text.contains(p.as_str()))
    }
}

/// Everything recognised of `value`.
fn encodings(value: &str) -> Vec<String> {
    let mut out = vec![value.to_string()];
    let chars: Vec<(usize, char)> = value.char_indices().collect();
    if chars.len() > WINDOW {
        for w in 0..=chars.len() - WINDOW {
            let start = chars[w].0;
            let end = chars.get(w + WINDOW).map_or(value.len(), |c| c.0);
            out.push(value[start..end].to_string());
        }
    }
    let bytes = value.as_bytes();
    // Base64 at each alignment: the characters that depend only on the value.
    for shift in 0..3 {
        let mut padded = vec![0u8; shift];
        padded.extend_from_slice(bytes);
        let encoded = base64::encode(&padded);
        let skip = if shift == 0 { 0 } else { (shift * 8).div_ceil(6) };
        let tail_bits = (padded.len() * 8) % 6;
        let core_end = encoded.trim_end_matches('=').len() - usize::from(tail_bits != 0);
        if core_end > skip {
            let core = &encoded[skip..core_end];
            out.push(core.to_string());
            out.push(core.replace('+', "-").replace('/', "_"));
        }
    }
    let hex: String = bytes.iter().map(|b| format!("{b:02x}")).collect();
    out.push(hex.to_uppercase());
    out.push(hex);
    let url: String = bytes
        .iter()
        .map(|&b| match b {
            b'A'..=b'Z' | b'a'..=b'z' | b'0'..=b'9' | b'-' | b'.' | b'_' | b'~' => (b as char).to_string(),
            _ => format!("%{b:02X}"),
        })
        .collect();
    out.push(lower_escapes(&url));
    out.push(url);
    if let Ok(quoted) = serde_json::to_string(value) {
        out.push(quoted[1..quoted.len() - 1].to_string());
    }
    out
}

/// `%XX` escapes in lower case (`%2f`), the rest unchanged.
fn lower_escapes(url: &str) -> String {
    let mut out = String::with_capacity(url.len());
    let mut rest = url;
    while let Some(i) = rest.find('%') {
        out.push_str(&rest[..i]);
        let code = rest.get(i..i + 3).unwrap_or(&rest[i..]);
        out.push_str(&code.to_ascii_lowercase());
        rest = &rest[i + code.len()..];
    }
    out.push_str(rest);
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn scrubber(value: &str) -> Scrubber {
        Scrubber::new(&[("SIGN".to_string(), Secret::new(value.to_string()))])
    }

    #[test]
    fn raw_pieces_and_encodings_are_redacted() {
        let secret = "s3cr3t/Key+value?&=42";
        let s = scrubber(secret);
        let b64 = base64::encode(secret.as_bytes());
        let hex: String = secret.bytes().map(|b| format!("{b:02x}")).collect();
        for leak in [
            format!("value: {secret}."),
            format!("first {} then {}", &secret[..10], &secret[10..]),
            format!("b64 {b64}"),
            format!("inside x{}", base64::encode(format!("x{secret}").as_bytes())),
            format!("inside xy{}", base64::encode(format!("xy{secret}").as_bytes())),
            format!(
                "url-safe {}",
                b64.replace('+', "-").replace('/', "_").trim_end_matches('=')
            ),
            format!("hex {hex} HEX {}", hex.to_uppercase()),
            "url s3cr3t%2FKey%2Bvalue%3F%26%3D42 and s3cr3t%2fKey%2bvalue%3f%26%3d42".to_string(),
        ] {
            let out = s.text(&leak);
            assert!(out.contains("[redacted:SIGN]"), "{leak} -> {out}");
            assert!(
                !out.contains("s3cr3t/K") && !out.contains(&b64[4..16]) && !out.contains(&hex[..16]),
                "{out}"
            );
        }
        assert_eq!(s.text("nothing here"), "nothing here");
        assert_eq!(s.text(&format!("{secret}{secret}")), "[redacted:SIGN]");
    }

    #[test]
    fn json_is_scrubbed_after_decoding_and_stays_json() {
        let s = scrubber("quote\"and\\slash");
        let out = s.json(r#"{"a":"quote\"and\\slash","quote\"and\\slash":[1,"x quote\u0022and\\slash"]}"#);
        let v: serde_json::Value = serde_json::from_str(&out).unwrap();
        assert_eq!(
            v,
            serde_json::json!({"a": "[redacted:SIGN]", "[redacted:SIGN]": [1, "x [redacted:SIGN]"]})
        );
        assert!(s.finds("a quote\"and\\slash"));
    }

    #[test]
    fn multibyte_values_cut_on_character_boundaries() {
        let s = scrubber("ключ-секрет-значение");
        let out = s.text("leak: секрет-зна!");
        assert!(out.contains("[redacted:SIGN]"), "{out}");
    }
}
