//! The plugins folder: hot reload (add, replace, remove, manifest change) without
//! failing in-flight calls, `plugins.lock` in locked mode, and the compiled cache
//! across restarts.

use crate::support::runtime::*;
use std::path::Path;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};
use wasmhub::runtime::{LockFile, PluginDir, PluginEntry, PluginState, Runtime};

/// Collects every set `on_change` publishes.
#[derive(Clone, Default)]
struct Published(Arc<Mutex<Vec<Vec<PluginEntry>>>>);

impl Published {
    fn callback(&self) -> Arc<dyn Fn(Vec<PluginEntry>) + Send + Sync> {
        let all = self.0.clone();
        Arc::new(move |set| all.lock().unwrap().push(set))
    }

    fn count(&self) -> usize {
        self.0.lock().unwrap().len()
    }

    fn last(&self) -> Vec<(String, String)> {
        let all = self.0.lock().unwrap();
        all.last()
            .map(|set| set.iter().map(|e| (e.name.clone(), state(&e.state))).collect())
            .unwrap_or_default()
    }

    /// Waits until the latest published set satisfies `ok`.
    async fn wait_for(&self, what: &str, ok: impl Fn(&[(String, String)]) -> bool) -> Vec<(String, String)> {
        let ok = &ok;
        crate::support::wait::until_seen(what, || async move {
            let last = self.last();
            if ok(&last) { Ok(last) } else { Err(last) }
        })
        .await
    }
}

fn state(s: &PluginState) -> String {
    match s {
        PluginState::Active(_) => "active".into(),
        PluginState::Deprecated(_) => "deprecated".into(),
        PluginState::Rejected { reason, .. } => format!("rejected: {reason}"),
        PluginState::Loading => "loading".into(),
    }
}

fn has(set: &[(String, String)], name: &str, prefix: &str) -> bool {
    set.iter().any(|(n, s)| n == name && s.starts_with(prefix))
}

/// Replaces `to` with a copy of `from` the way a careful deploy does: write a
/// dotfile, then rename over the target.
fn atomic_copy(from: &Path, to: &Path) {
    let tmp = to.with_file_name(format!(".{}.tmp", to.file_name().unwrap().to_string_lossy()));
    std::fs::copy(from, &tmp).unwrap();
    std::fs::rename(&tmp, to).unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn adding_replacing_and_removing_plugins_takes_effect_without_restart() {
    let s = Scratch::new("reload");
    s.plugin("adversary", "alpha", None);
    std::fs::write(s.path("broken.wasm"), b"not wasm").unwrap();
    std::fs::write(s.path("notes.txt"), b"ignored").unwrap();
    let published = Published::default();
    let dir = PluginDir::start(runtime(), s.0.clone(), None, published.callback())
        .await
        .unwrap();
    assert_eq!(published.count(), 1, "the initial set is published once");
    let first = published.last();
    assert_eq!(first.len(), 2, "{first:?}");
    assert!(has(&first, "alpha", "active"));
    assert!(
        has(&first, "broken", "rejected: not a WebAssembly file"),
        "{first:?}"
    );
    assert_eq!(dir.entries().len(), 2);

    // A slow call on the current alpha survives alpha being replaced under it.
    let old_alpha = dir
        .entries()
        .into_iter()
        .find(|e| e.name == "alpha")
        .unwrap()
        .state
        .plugin()
        .unwrap()
        .clone();
    let in_flight = tokio::spawn(async move { old_alpha.call("slow", r#"{"ms": 1500}"#, inv()).await });

    // Add a plugin.
    s.plugin("adversary", "beta", None);
    published
        .wait_for("beta active", |set| has(set, "beta", "active"))
        .await;

    // Replace alpha with a component of another world: rejected, beta unaffected.
    atomic_copy(&guest("otherworld"), &s.path("alpha.wasm"));
    let set = published
        .wait_for("alpha rejected", |set| has(set, "alpha", "rejected"))
        .await;
    assert!(
        has(
            &set,
            "alpha",
            "rejected: exports none of wasmhub:plugin/operations@0.3.0, wasmhub:plugin/operations@0.2.0, \
             wasmhub:plugin/operations@0.1.0"
        ),
        "{set:?}"
    );
    assert!(has(&set, "beta", "active"));
    assert_eq!(in_flight.await.unwrap().unwrap().json, r#"{"slept_ms":1500}"#);

    // Adding a manifest beside beta applies it.
    std::fs::write(s.path("beta.toml"), "deprecated = true\n").unwrap();
    published
        .wait_for("beta deprecated", |set| has(set, "beta", "deprecated"))
        .await;

    // An invalid manifest edit rejects it with the line and key.
    std::fs::write(s.path("beta.toml"), "deprecated = true\nnetwork = 3\n").unwrap();
    let set = published
        .wait_for("beta rejected", |set| has(set, "beta", "rejected"))
        .await;
    assert!(
        set.iter().any(|(n, r)| n == "beta" && r.contains("line 2")),
        "{set:?}"
    );

    // Fix alpha, remove beta.
    atomic_copy(&guest("adversary"), &s.path("alpha.wasm"));
    std::fs::remove_file(s.path("beta.wasm")).unwrap();
    let set = published
        .wait_for("alpha back, beta gone", |set| {
            has(set, "alpha", "active") && !set.iter().any(|(n, _)| n == "beta")
        })
        .await;
    assert_eq!(set.len(), 2, "{set:?}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_multi_step_writer_is_loaded_once_it_is_complete() {
    let s = Scratch::new("writer");
    let published = Published::default();
    let _dir = PluginDir::start(runtime(), s.0.clone(), None, published.callback())
        .await
        .unwrap();
    assert!(published.last().is_empty());
    let bytes = std::fs::read(guest("adversary")).unwrap();
    let target = s.path("gamma.wasm");
    {
        use std::io::Write;
        let mut f = std::fs::File::create(&target).unwrap();
        for chunk in bytes.chunks(bytes.len() / 4 + 1) {
            f.write_all(chunk).unwrap();
            f.flush().unwrap();
            std::thread::sleep(Duration::from_millis(60));
        }
    }
    published
        .wait_for("gamma active", |set| has(set, "gamma", "active"))
        .await;
    let history = published.0.lock().unwrap().clone();
    let rejected = history
        .iter()
        .flatten()
        .filter(|e| matches!(e.state, PluginState::Rejected { .. }))
        .count();
    assert_eq!(
        rejected, 0,
        "a file written in steps within a tick must not be loaded half-written"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn locked_mode_rejects_unpinned_and_changed_files_with_both_digests() {
    let s = Scratch::new("lock");
    s.plugin("adversary", "pinned", None);
    s.plugin("adversary", "changed", None);
    let lock = LockFile::from_dir(&s.0).unwrap();
    lock.write(&s.0).unwrap();
    assert_eq!(LockFile::read(&s.0).unwrap(), lock);
    let pinned_digest = lock.digest("changed.wasm").unwrap().to_string();
    // After locking: one file changes, one appears.
    s.plugin("badschema", "changed", None);
    s.plugin("adversary", "newcomer", None);
    let actual = wasmhub::runtime::LockFile::from_dir(&s.0)
        .unwrap()
        .digest("changed.wasm")
        .unwrap()
        .to_string();

    let published = Published::default();
    let _dir = PluginDir::start(runtime(), s.0.clone(), Some(lock), published.callback())
        .await
        .unwrap();
    let set = published.last();
    assert!(has(&set, "pinned", "active"), "{set:?}");
    let changed = set.iter().find(|(n, _)| n == "changed").unwrap();
    assert!(
        changed.1.contains(&pinned_digest) && changed.1.contains(&actual),
        "{changed:?}"
    );
    assert!(
        has(&set, "newcomer", "rejected: not pinned in plugins.lock"),
        "{set:?}"
    );

    // Re-locking picks the new files up without a restart.
    LockFile::from_dir(&s.0).unwrap().write(&s.0).unwrap();
    published
        .wait_for("newcomer active after re-lock", |set| {
            has(set, "newcomer", "active") && has(set, "changed", "rejected: operation")
        })
        .await;
}

/// Copies of one guest made distinct by an appended custom section, so each has
/// its own digest and cache entry.
fn distinct_copies(s: &Scratch, n: usize) {
    let bytes = std::fs::read(guest("adversary")).unwrap();
    for i in 0..n {
        let mut b = bytes.clone();
        let name = format!("copy{i}");
        // Component custom section: id 0, size, name length, name, payload.
        let payload = format!("{i}");
        b.push(0);
        b.push((1 + name.len() + payload.len()) as u8);
        b.push(name.len() as u8);
        b.extend_from_slice(name.as_bytes());
        b.extend_from_slice(payload.as_bytes());
        std::fs::write(s.path(&format!("p{i}.wasm")), b).unwrap();
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn unchanged_plugins_load_from_the_compiled_cache_after_a_restart() {
    let s = Scratch::new("cache");
    let plugins = Scratch::new("cache-plugins");
    distinct_copies(&plugins, 3);
    let cache = s.path("compiled");
    // The artifact files of this engine: `<engine hash>/<wasm sha256>.<artifact sha256>.cwasm`.
    let artifacts = |rt: &Runtime| -> Vec<std::path::PathBuf> {
        let mut files: Vec<_> = std::fs::read_dir(cache.join(rt.engine_hash()))
            .unwrap()
            .map(|e| e.unwrap().path())
            .collect();
        files.sort();
        files
    };

    let cold = {
        let rt = Runtime::new(&limits(), Some(&cache)).unwrap();
        let started = Instant::now();
        for i in 0..3 {
            rt.load(&plugins.path(&format!("p{i}.wasm"))).await.unwrap();
        }
        assert_eq!(artifacts(&rt).len(), 3);
        started.elapsed()
    };
    // "Restart": a new runtime over the same folder.
    let rt = Runtime::new(&limits(), Some(&cache)).unwrap();
    let started = Instant::now();
    for i in 0..3 {
        let p = rt.load(&plugins.path(&format!("p{i}.wasm"))).await.unwrap();
        assert_eq!(
            p.call("echo", r#"{"a":1}"#, inv()).await.unwrap().json,
            r#"{"a":1}"#
        );
    }
    let warm = started.elapsed();
    assert!(
        warm * 4 < cold,
        "cache hits ({warm:?}) must be much faster than compiling ({cold:?})"
    );
    let stored = artifacts(&rt);
    assert_eq!(stored.len(), 3, "hits add no entries");

    // Corrupt p0's artifact: the load still succeeds (recompiled), never crashes.
    let p0 = wasmhub::runtime::sha256_file(&plugins.path("p0.wasm")).unwrap();
    let name_of = |path: &std::path::PathBuf| path.file_name().unwrap().to_str().unwrap().to_string();
    let entry = stored
        .iter()
        .find(|path| name_of(path).starts_with(&format!("{p0}.")))
        .expect("an entry named after the plugin's digest")
        .clone();
    let mut value = std::fs::read(&entry).unwrap();
    let mid = value.len() / 2;
    value[mid] ^= 0xff;
    std::fs::write(&entry, &value).unwrap();
    let p = rt.load(&plugins.path("p0.wasm")).await.unwrap();
    assert_eq!(p.call("noop", "{}", inv()).await.unwrap().json, "{}");
    let repaired = std::fs::read(&entry).unwrap();
    assert_ne!(repaired, value, "the corrupt entry was replaced");
    assert_eq!(artifacts(&rt).len(), 3);

    // Pruning to the folder as it is now: p0 is gone, and so is its artifact.
    std::fs::remove_file(plugins.path("p0.wasm")).unwrap();
    let keep: Vec<String> = (1..3)
        .map(|i| wasmhub::runtime::sha256_file(&plugins.path(&format!("p{i}.wasm"))).unwrap())
        .collect();
    rt.prune_compiled_cache(keep.iter().map(String::as_str));
    let left = artifacts(&rt);
    assert_eq!(left.len(), 2);
    assert!(
        !left
            .iter()
            .any(|path| name_of(path).starts_with(&format!("{p0}.")))
    );
}

/// Resident kilobytes of this process's read-only mappings of files under `dir`:
/// the compiled code mapped from the cache (the instance slots' copy-on-write
/// memory images of the same files are writable, and left out).
fn resident_code_kb(dir: &Path) -> u64 {
    let smaps = std::fs::read_to_string("/proc/self/smaps").unwrap();
    // smaps names files by their real path (the target dir may be a symlink).
    let dir = std::fs::canonicalize(dir).unwrap();
    let dir = dir.to_str().unwrap();
    let mut counting = false;
    let mut kb = 0;
    for line in smaps.lines() {
        let fields: Vec<&str> = line.split_whitespace().collect();
        if fields
            .first()
            .is_some_and(|f| f.contains('-') && f.chars().all(|c| c.is_ascii_hexdigit() || c == '-'))
        {
            counting = fields.get(5).is_some_and(|path| path.starts_with(dir)) && !fields[1].contains('w');
        } else if counting && fields.first() == Some(&"Rss:") {
            kb += fields[1].parse::<u64>().unwrap();
        }
    }
    kb
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn code_mapped_from_the_cache_is_given_back_after_the_load_and_mapped_again_by_a_call() {
    let s = Scratch::new("code-pages");
    let cache = s.path("compiled");
    let path = s.plugin("adversary", "adversary", None);
    // Compiled and stored by the first runtime; mapped from the stored file by the second.
    for round in ["compiled", "from the cache"] {
        let rt = Runtime::new(&limits(), Some(&cache)).unwrap();
        let plugin = rt.load(&path).await.unwrap();
        // The listing ran the plugin's code; none of it stays mapped.
        assert_eq!(
            resident_code_kb(&cache),
            0,
            "{round}: code left resident after the load"
        );
        let out = plugin.call("echo", r#"{"text":"hi"}"#, inv()).await.unwrap();
        assert_eq!(out.json, r#"{"text":"hi"}"#, "{round}");
        assert!(
            resident_code_kb(&cache) > 0,
            "{round}: the call ran code mapped from the cache"
        );
    }
}

/// A load that never ends (a `list()` that spins, under a load time limit longer
/// than the tests' patience) holds up no other plugin: one dropped into the folder
/// beside it becomes active, and is reloaded when it changes, while the spinner is
/// still loading (absent from every set published meanwhile).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_load_that_never_ends_delays_no_other_plugin() {
    let s = Scratch::new("isolated-loads");
    let mut caps = limits();
    // A load's limit is the lower of these two.
    caps.load.timeout_ms = 600_000;
    caps.call.timeout_ms = 600_000;
    let rt = Runtime::new(&caps, None).unwrap();
    let published = Published::default();
    let _dir = PluginDir::start(rt, s.0.clone(), None, published.callback())
        .await
        .unwrap();
    assert_eq!(published.last(), []);
    // Both files appear at the same tick, so their loads start together.
    s.plugin("spinlist", "spinner", None);
    s.plugin("adversary", "alpha", None);
    let seen = published
        .wait_for("alpha active beside the spinner's endless load", |set| {
            has(set, "alpha", "active")
        })
        .await;
    assert_eq!(
        seen,
        [("alpha".to_string(), "active".to_string())],
        "the spinner is still loading"
    );

    // A change to alpha is picked up while the spinner's load goes on.
    let before = published.count();
    std::fs::write(s.path("alpha.toml"), "deprecated = true\n").unwrap();
    let seen = published
        .wait_for("alpha reloaded as deprecated", |set| {
            has(set, "alpha", "deprecated")
        })
        .await;
    assert_eq!(seen, [("alpha".to_string(), "deprecated".to_string())]);
    assert!(published.count() > before);
}
