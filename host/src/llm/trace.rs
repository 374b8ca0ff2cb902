//! The wire trace of upstream model calls (`[llm_trace] enabled`, `wasmhub serve
//! --trace-llm`): every request the hub sends a provider (method, URL, headers,
//! body) and every response (status, headers, and the body as it arrives, frame
//! by frame, before any translation), one numbered exchange per request, to a file
//! of bounded size. Headers that carry secrets are written as `[redacted]`: every
//! value marked sensitive (the API key), and any header whose name says it holds
//! one (`authorization`, `x-api-key`, `cookie`, names with `key`, `token`,
//! `secret` or `auth`). Request and response bodies are written as they are: they
//! hold the conversation, which is what the trace is for.
//!
//! The file is written under a lock with one write per record (records of
//! concurrent exchanges interleave, each line naming its exchange); past
//! `max_mb` it is renamed to `<file>.1`, replacing the one before. A failed
//! write is logged once and ends the trace; it never fails a model call.

use crate::config::LlmTraceConfig;
use http::{HeaderMap, StatusCode};
use std::fs::{File, OpenOptions};
use std::io::Write;
use std::path::{Path, PathBuf};
use std::sync::Mutex;
use std::sync::atomic::{AtomicU64, Ordering};

/// Why the trace file cannot be opened (names the file).
#[derive(Debug)]
pub struct TraceError {
    /// The trace file.
    pub path: PathBuf,
    /// Why it cannot be opened.
    pub source: std::io::Error,
}

impl std::fmt::Display for TraceError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "llm_trace.file {}: {}", self.path.display(), self.source)
    }
}

impl std::error::Error for TraceError {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        Some(&self.source)
    }
}

/// The open trace file.
pub struct Trace {
    path: PathBuf,
    max_bytes: u64,
    file: Mutex<Option<(File, u64)>>,
    next: AtomicU64,
}

impl Trace {
    /// Opens (appends to) the trace file `config` names, or
    /// `<data_dir>/logs/llm-trace.log`; `None` when tracing is off.
    pub fn open(config: &LlmTraceConfig, data_dir: &Path) -> Result<Option<Trace>, TraceError> {
        if !config.enabled {
            return Ok(None);
        }
        let path = config
            .file
            .clone()
            .unwrap_or_else(|| data_dir.join("logs").join("llm-trace.log"));
        let error = |source| TraceError {
            path: path.clone(),
            source,
        };
        if let Some(dir) = path.parent().filter(|d| !d.as_os_str().is_empty()) {
            std::fs::create_dir_all(dir).map_err(error)?;
        }
        let file = OpenOptions::new()
            .create(true)
            .append(true)
            .open(&path)
            .map_err(error)?;
        let len = file.metadata().map_err(error)?.len();
        crate::info!("tracing upstream model calls to {}", path.display());
        Ok(Some(Trace {
            max_bytes: config.max_mb.saturating_mul(1 << 20),
            file: Mutex::new(Some((file, len))),
            next: AtomicU64::new(1),
            path,
        }))
    }

    /// Records a request; returns the number naming its exchange.
    pub(crate) fn request(
        &self,
        provider: &str,
        method: &str,
        url: &str,
        headers: &HeaderMap,
        body: &[u8],
    ) -> u64 {
        let id = self.next.fetch_add(1, Ordering::Relaxed);
        let mut text = format!("#{id} -> {method} {url} (provider {provider:?})\n");
        write_headers(&mut text, id, '>', headers);
        write_body(&mut text, id, '>', body);
        self.write(&text);
        id
    }

    /// Records the response head of exchange `id`.
    pub(crate) fn response(&self, id: u64, status: StatusCode, headers: &HeaderMap) {
        let mut text = format!("#{id} <- {status}\n");
        write_headers(&mut text, id, '<', headers);
        self.write(&text);
    }

    /// Records bytes of exchange `id`'s response body as they arrived.
    pub(crate) fn body(&self, id: u64, bytes: &[u8]) {
        let mut text = String::new();
        write_body(&mut text, id, '<', bytes);
        self.write(&text);
    }

    /// Records how exchange `id` ended: its body read to the end, or `why` not.
    pub(crate) fn end(&self, id: u64, why: Option<&dyn std::fmt::Display>) {
        match why {
            None => self.write(&format!("#{id} end\n")),
            Some(why) => self.write(&format!("#{id} failed: {why}\n")),
        }
    }

    fn write(&self, text: &str) {
        let mut guard = self.file.lock().unwrap_or_else(|e| e.into_inner());
        let Some((file, len)) = guard.as_mut() else { return };
        let line = format!("{} {text}", crate::logging::Rfc3339(crate::clock::now_ms()));
        if *len + line.len() as u64 > self.max_bytes
            && let Err(e) = self.rotate(file, len)
        {
            crate::warn!(
                "the trace file {} cannot be rotated ({e}); tracing stops",
                self.path.display()
            );
            *guard = None;
            return;
        }
        if let Err(e) = file.write_all(line.as_bytes()) {
            crate::warn!(
                "the trace file {} cannot be written ({e}); tracing stops",
                self.path.display()
            );
            *guard = None;
            return;
        }
        *len += line.len() as u64;
    }

    /// Moves the full file to `<file>.1` and starts a new one.
    fn rotate(&self, file: &mut File, len: &mut u64) -> std::io::Result<()> {
        let mut old = self.path.clone().into_os_string();
        old.push(".1");
        std::fs::rename(&self.path, old)?;
        *file = OpenOptions::new().create(true).append(true).open(&self.path)?;
        *len = 0;
        Ok(())
    }
}

/// Whether a header's value is a secret by its name.
fn secret_name(name: &str) -> bool {
    matches!(
        name,
        "authorization" | "proxy-authorization" | "cookie" | "set-cookie"
    ) || ["key", "token", "secret", "auth"]
        .iter()
        .any(|part| name.contains(part))
}

fn write_headers(text: &mut String, id: u64, dir: char, headers: &HeaderMap) {
    for (name, value) in headers {
        let shown = if value.is_sensitive() || secret_name(name.as_str()) {
            "[redacted]".into()
        } else {
            String::from_utf8_lossy(value.as_bytes()).into_owned()
        };
        text.push_str(&format!("#{id} {dir} {name}: {shown}\n"));
    }
}

/// The body, line by line (`|` marks each), so frames keep their own lines.
fn write_body(text: &mut String, id: u64, dir: char, body: &[u8]) {
    for line in String::from_utf8_lossy(body).split_inclusive('\n') {
        text.push_str(&format!("#{id} {dir}| {}", line));
        if !line.ends_with('\n') {
            text.push('\n');
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use http::HeaderValue;

    #[test]
    fn secrets_are_redacted_frames_kept_and_the_file_is_bounded() {
        let dir = std::env::temp_dir().join(format!("wasmhub-trace-{}", crate::ids::new_id("t")));
        let config = LlmTraceConfig {
            enabled: true,
            file: Some(dir.join("t.log")),
            max_mb: 1,
        };
        let trace = Trace::open(&config, &dir).unwrap().unwrap();
        let mut headers = HeaderMap::new();
        let mut key = HeaderValue::from_static("Bearer sk-live-1");
        key.set_sensitive(true);
        headers.insert("authorization", key);
        headers.insert("x-api-key", HeaderValue::from_static("sk-ant-2"));
        headers.insert("x-team-token", HeaderValue::from_static("tok-3"));
        headers.insert("content-type", HeaderValue::from_static("application/json"));
        let id = trace.request(
            "p",
            "POST",
            "http://h/v1/messages",
            &headers,
            b"{\"model\":\"m\"}",
        );
        trace.response(id, StatusCode::OK, &HeaderMap::new());
        trace.body(id, b"event: ping\ndata: {\"type\":\"ping\"}\n\n");
        trace.end(id, None);
        let text = std::fs::read_to_string(dir.join("t.log")).unwrap();
        for secret in ["sk-live-1", "sk-ant-2", "tok-3"] {
            assert!(!text.contains(secret), "{secret} in {text}");
        }
        assert!(text.contains("#1 > content-type: application/json"), "{text}");
        assert!(text.contains("#1 <| data: {\"type\":\"ping\"}"), "{text}");
        assert!(text.contains("#1 end"), "{text}");
        let big = vec![b'x'; 700 << 10];
        trace.body(id, &big);
        trace.body(id, &big);
        let (now, old) = (dir.join("t.log"), dir.join("t.log.1"));
        assert!(std::fs::metadata(&now).unwrap().len() <= 1 << 20);
        assert!(std::fs::metadata(&old).unwrap().len() <= 1 << 20, "rotated once");
        let _ = std::fs::remove_dir_all(&dir);
    }
}
