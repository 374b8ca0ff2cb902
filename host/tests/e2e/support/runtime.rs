//! Shared helpers of the runtime tests: building the test guests once per process,
//! scratch folders, invocations, nested-call recorders and RSS readings.

use std::path::{Path, PathBuf};
use std::pin::Pin;
use std::sync::{Arc, Mutex, OnceLock};
use std::time::Duration;
use wasmhub::config::Limits;
use wasmhub::runtime::{ErrorCode, Invocation, NestedCallError, NestedCalls, NoNestedCalls, Runtime};

/// The repository root.
pub fn repo_root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .parent()
        .expect("host/ has a parent")
        .to_path_buf()
}

/// Path of a built test guest (`tests/guests/<name>`), building them all on first
/// use in this process (cargo makes it a no-op when they are up to date).
pub fn guest(name: &str) -> PathBuf {
    static BUILT: OnceLock<PathBuf> = OnceLock::new();
    let out = BUILT.get_or_init(|| {
        let script = repo_root().join("tests/guests/build.sh");
        let status = std::process::Command::new("bash")
            .arg(&script)
            .stdout(std::process::Stdio::null())
            .status()
            .expect("run tests/guests/build.sh");
        assert!(status.success(), "tests/guests/build.sh failed");
        repo_root().join("target/test-guests")
    });
    let path = out.join(format!("{name}.wasm"));
    assert!(path.exists(), "{} was not built", path.display());
    path
}

/// A fresh scratch folder under the target dir, removed at drop.
pub struct Scratch(pub PathBuf);

impl Scratch {
    pub fn new(tag: &str) -> Scratch {
        let dir = repo_root()
            .join("target/test-scratch")
            .join(wasmhub::ids::new_id(tag));
        std::fs::create_dir_all(&dir).unwrap();
        Scratch(dir)
    }

    pub fn path(&self, name: &str) -> PathBuf {
        self.0.join(name)
    }

    /// Copies test guest `guest` to `<name>.wasm` here, with an optional manifest.
    pub fn plugin(&self, guest_name: &str, name: &str, manifest: Option<&str>) -> PathBuf {
        let wasm = self.path(&format!("{name}.wasm"));
        std::fs::copy(guest(guest_name), &wasm).unwrap();
        if let Some(text) = manifest {
            std::fs::write(self.path(&format!("{name}.toml")), text).unwrap();
        }
        wasm
    }
}

impl Drop for Scratch {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

/// A scratch folder for what lives as long as the test process (statics are never
/// dropped): removed when the process exits.
pub fn process_scratch(tag: &str) -> PathBuf {
    static DIRS: Mutex<Vec<PathBuf>> = Mutex::new(Vec::new());
    extern "C" fn remove_all() {
        let dirs = DIRS.lock().map(|d| d.clone()).unwrap_or_default();
        for dir in dirs {
            let _ = std::fs::remove_dir_all(dir);
        }
    }
    let scratch = Scratch::new(tag);
    let path = scratch.0.clone();
    // Removed at exit instead of at drop.
    std::mem::forget(scratch);
    let mut dirs = DIRS.lock().unwrap();
    if dirs.is_empty() {
        // SAFETY: registers a plain function with no arguments, run once at exit.
        unsafe { libc::atexit(remove_all) };
    }
    dirs.push(path.clone());
    path
}

/// Caps used by most tests: the defaults with a short time limit.
pub fn limits() -> Limits {
    {
        let mut l = Limits::default();
        l.call.timeout_ms = 5_000;
        l
    }
}

pub fn runtime() -> Runtime {
    Runtime::new(&limits(), None).expect("runtime")
}

/// An invocation with a generous deadline and no nested calls.
pub fn inv() -> Invocation {
    inv_with(Arc::new(NoNestedCalls), Duration::from_secs(30))
}

pub fn inv_with(nested: Arc<dyn NestedCalls>, within: Duration) -> Invocation {
    Invocation {
        tenant: "test".into(),
        call_id: wasmhub::ids::new_id("call"),
        deadline: (tokio::time::Instant::now() + within).into(),
        trace: None,
        nested,
    }
}

/// Records nested calls and answers each with `{"echo": <input>}`, or fails for
/// tool `missing.op`.
#[derive(Default)]
pub struct Recorder {
    pub calls: Mutex<Vec<(String, String)>>,
}

impl NestedCalls for Recorder {
    fn call(
        &self,
        tool: String,
        input_json: String,
    ) -> Pin<Box<dyn Future<Output = Result<String, NestedCallError>> + Send>> {
        self.calls
            .lock()
            .unwrap()
            .push((tool.clone(), input_json.clone()));
        Box::pin(async move {
            if tool == "missing.op" {
                return Err(NestedCallError {
                    code: ErrorCode::NotFound,
                    message: format!("no tool {tool}"),
                });
            }
            Ok(format!("{{\"echo\":{input_json}}}"))
        })
    }
}

/// Resident set size of this process, in bytes.
pub fn rss_bytes() -> u64 {
    let statm = std::fs::read_to_string("/proc/self/statm").unwrap();
    let pages: u64 = statm.split_whitespace().nth(1).unwrap().parse().unwrap();
    pages * 4096
}

/// Reads an HTTP/1.1 request head from `sock` (up to the blank line), or `None`
/// when the client closes first: the loopback servers of the network tests.
pub async fn read_request_head(sock: &mut tokio::net::TcpStream) -> Option<Vec<u8>> {
    use tokio::io::AsyncReadExt;
    let mut buf = Vec::new();
    let mut chunk = [0u8; 1024];
    while !buf.windows(4).any(|w| w == b"\r\n\r\n") {
        match sock.read(&mut chunk).await {
            Ok(0) | Err(_) => return None,
            Ok(n) => buf.extend_from_slice(&chunk[..n]),
        }
    }
    Some(buf)
}
