//! The watched plugins folder: loads every `NAME.wasm` (with its `NAME.toml`) at
//! start, in parallel, then polls for changes and reloads what changed, so adding,
//! replacing or removing a plugin or its manifest takes effect without a restart.
//!
//! Polling instead of inotify (the `notify` crate): a plugins folder holds tens of
//! files, stat-ing them every 250 ms is negligible, it works the same on every
//! filesystem (including network and container mounts where inotify is silent), and
//! it gives the debounce for free: a file is (re)loaded only once its size, mtime and
//! inode were the same at two consecutive ticks, so a multi-step writer is not
//! loaded half-written, and an atomic rename is picked up at the next tick. If a
//! slow writer pauses longer than a tick, the half file is rejected and reloaded
//! when it changes again.
//!
//! Each load runs as a task of its own and lands when it is done: a plugin whose
//! load is slow (a compile, a `list()` that spins until `limits.load_timeout_ms`)
//! delays no other plugin's load or reload, and the folder keeps being watched
//! meanwhile. A plugin that changes while it loads is loaded again once that load
//! has landed.
//!
//! In-flight calls hold their `Arc<Plugin>` and finish on the version they started
//! with. Dotfiles (editors' and atomic writers' temporaries) are ignored.

use super::lock::{LOCK_FILE, LockFile};
use super::{LoadError, Plugin, Runtime, RuntimeError};
use crate::race::{Race, race};
use std::collections::{BTreeMap, BTreeSet};
use std::os::unix::fs::MetadataExt;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

/// How often the folder is scanned (and the agents folder, `agent::profiles`).
pub const POLL_INTERVAL: Duration = Duration::from_millis(250);

/// One plugin of the folder and its state.
#[derive(Clone, Debug)]
pub struct PluginEntry {
    /// The file stem (also the namespace when active).
    pub name: String,
    /// The `NAME.wasm` file.
    pub path: PathBuf,
    /// Whether it is loaded, and if not, why.
    pub state: PluginState,
}

/// What became of a plugin file at its last (re)load.
#[derive(Clone, Debug)]
pub enum PluginState {
    /// Loaded and listed.
    Active(Arc<Plugin>),
    /// Loaded and callable, hidden from search (`deprecated = true`).
    Deprecated(Arc<Plugin>),
    /// Not loaded; `reason` has one line per problem.
    Rejected {
        /// Every problem found, one per line.
        reason: String,
        /// sha256 of the file; `None` when it could not be read.
        digest: Option<String>,
    },
    /// Found at start and still compiling; published only by
    /// [`PluginDir::start_in_background`], until its first load finishes.
    Loading,
}

impl PluginState {
    /// The loaded plugin; `None` when rejected or still loading.
    pub fn plugin(&self) -> Option<&Arc<Plugin>> {
        match self {
            PluginState::Active(p) | PluginState::Deprecated(p) => Some(p),
            PluginState::Rejected { .. } | PluginState::Loading => None,
        }
    }

    fn from_load(result: Result<Arc<Plugin>, LoadError>) -> PluginState {
        match result {
            Ok(p) if p.deprecated() => PluginState::Deprecated(p),
            Ok(p) => PluginState::Active(p),
            Err(e) => PluginState::Rejected {
                reason: e.to_string(),
                digest: e.digest,
            },
        }
    }

    fn describe(&self) -> String {
        match self {
            PluginState::Active(p) => format!("active ({} operations)", p.operations().len()),
            PluginState::Deprecated(p) => format!(
                "deprecated ({} operations, hidden from search)",
                p.operations().len()
            ),
            PluginState::Rejected { reason, .. } => format!("rejected: {}", reason.replace('\n', "; ")),
            PluginState::Loading => "loading".to_string(),
        }
    }
}

/// What a [`PluginDir`] calls with the full set of plugins, sorted by name, after
/// each change.
pub type OnChange = Arc<dyn Fn(Vec<PluginEntry>) + Send + Sync>;

/// What identifies one version of a file: (size, mtime ns, inode).
pub type Stamp = (u64, i128, u64);

/// What identifies one version of a plugin: its `.wasm`, its manifest and its
/// signature file.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
struct Fingerprint {
    wasm: Stamp,
    manifest: Option<Stamp>,
    signature: Option<Stamp>,
}

/// The stamp of the file at `path`; `None` for a folder or a missing file.
pub fn stamp(path: &Path) -> Option<Stamp> {
    let m = std::fs::metadata(path).ok()?;
    // FIFOs, devices and sockets are kept, so the loader rejects them by name and
    // type (it never reads them); folders named `x.wasm` are not plugins.
    if m.is_dir() {
        return None;
    }
    Some((
        m.len(),
        m.mtime() as i128 * 1_000_000_000 + m.mtime_nsec() as i128,
        m.ino(),
    ))
}

/// The plugins currently in `dir`, by name.
fn scan(dir: &Path) -> std::io::Result<Found> {
    let mut found = BTreeMap::new();
    for entry in std::fs::read_dir(dir)? {
        let path = entry?.path();
        let Some(file) = path.file_name().and_then(|f| f.to_str()) else {
            continue;
        };
        if file.starts_with('.') || !file.ends_with(".wasm") {
            continue;
        }
        let Some(wasm) = stamp(&path) else { continue };
        let manifest = stamp(&super::manifest_path(&path));
        let signature = stamp(&super::signature_path(&path));
        let fingerprint = Fingerprint {
            wasm,
            manifest,
            signature,
        };
        found.insert(super::plugin_name(&path), (path, fingerprint));
    }
    Ok(found)
}

/// The plugins of a folder by name, with their file and its fingerprint.
type Found = BTreeMap<String, (PathBuf, Fingerprint)>;

struct Loaded {
    entry: PluginEntry,
    fingerprint: Fingerprint,
}

/// One finished load.
struct Landed {
    name: String,
    path: PathBuf,
    fingerprint: Fingerprint,
    state: PluginState,
}

struct Watcher {
    runtime: Runtime,
    dir: PathBuf,
    /// `Some` with `serve --locked`; re-read when `plugins.lock` changes.
    lock: Option<LockFile>,
    lock_stamp: Option<Stamp>,
    loaded: BTreeMap<String, Loaded>,
    /// Fingerprints seen at the previous tick for names that differ from `loaded`.
    pending: BTreeMap<String, Option<Fingerprint>>,
    /// Plugins of the first load not loaded yet, published as `Loading` (empty
    /// once the first load is done, and always with [`PluginDir::start`]).
    first_load: BTreeMap<String, PathBuf>,
    /// The loads in flight, one task each (dropping the watcher aborts them).
    loads: tokio::task::JoinSet<Landed>,
    /// The plugins being loaded: their changes wait until the load lands.
    loading: BTreeSet<String>,
    /// Plugins whose load in flight began before `plugins.lock` changed: loaded
    /// again when it lands.
    recheck: BTreeSet<String>,
    entries: Arc<Mutex<Vec<PluginEntry>>>,
    on_change: OnChange,
}

/// A watched plugins folder; stops watching when dropped.
pub struct PluginDir {
    entries: Arc<Mutex<Vec<PluginEntry>>>,
    task: tokio::task::JoinHandle<()>,
}

impl PluginDir {
    /// Loads every plugin in `dir` (in parallel, progress in the log), calls
    /// `on_change` with the full set, then watches the folder and calls it again
    /// with the full set after each change. With `lock`, files must be pinned.
    pub async fn start(
        runtime: Runtime,
        dir: PathBuf,
        lock: Option<LockFile>,
        on_change: OnChange,
    ) -> Result<PluginDir, RuntimeError> {
        let (mut watcher, found) = Watcher::new(runtime, dir, lock, on_change)?;
        let entries = watcher.entries.clone();
        watcher.first_load(found).await;
        let task = tokio::spawn(watcher.watch());
        Ok(PluginDir { entries, task })
    }

    /// Like [`PluginDir::start`], but returns once the folder is read: `on_change`
    /// first gets every plugin as [`PluginState::Loading`], then the set again as
    /// each one finishes loading (so a fast plugin is callable before a slow one
    /// has compiled), then after each change of the folder.
    pub fn start_in_background(
        runtime: Runtime,
        dir: PathBuf,
        lock: Option<LockFile>,
        on_change: OnChange,
    ) -> Result<PluginDir, RuntimeError> {
        let (mut watcher, found) = Watcher::new(runtime, dir, lock, on_change)?;
        let entries = watcher.entries.clone();
        watcher.first_load = found
            .iter()
            .map(|(name, (path, _))| (name.clone(), path.clone()))
            .collect();
        watcher.publish();
        let task = tokio::spawn(async move {
            watcher.first_load(found).await;
            watcher.watch().await;
        });
        Ok(PluginDir { entries, task })
    }

    /// The current set of plugins, sorted by name.
    pub fn entries(&self) -> Vec<PluginEntry> {
        self.entries.lock().unwrap_or_else(|p| p.into_inner()).clone()
    }
}

impl Drop for PluginDir {
    fn drop(&mut self) {
        self.task.abort();
    }
}

impl Watcher {
    /// A watcher of `dir` that has loaded nothing yet, and the plugins found in it.
    fn new(
        runtime: Runtime,
        dir: PathBuf,
        lock: Option<LockFile>,
        on_change: OnChange,
    ) -> Result<(Watcher, Found), RuntimeError> {
        let found = scan(&dir).map_err(|source| RuntimeError::PluginDir {
            path: dir.clone(),
            source,
        })?;
        let lock_stamp = lock.as_ref().and_then(|_| stamp(&dir.join(LOCK_FILE)));
        let watcher = Watcher {
            runtime,
            dir,
            lock,
            lock_stamp,
            loaded: BTreeMap::new(),
            pending: BTreeMap::new(),
            first_load: BTreeMap::new(),
            loads: tokio::task::JoinSet::new(),
            loading: BTreeSet::new(),
            recheck: BTreeSet::new(),
            entries: Arc::new(Mutex::new(Vec::new())),
            on_change,
        };
        Ok((watcher, found))
    }

    /// Loads every plugin `found` at start, publishes the set, then logs how long it
    /// took (in that order: the log line tells tests and operators the hub has it).
    async fn first_load(&mut self, found: Found) {
        let started = Instant::now();
        crate::info!("plugins: loading {} from {}", found.len(), self.dir.display());
        for (name, (path, fingerprint)) in found {
            self.start_load(name, path, fingerprint);
        }
        while let Some(landed) = self.next_landed().await {
            let first = self.first_load.contains_key(&landed.name);
            self.land(landed);
            // During a background first load each plugin is callable once it is
            // ready; the last one is published with the whole set below.
            if first && !self.first_load.is_empty() {
                self.publish();
            }
        }
        self.publish();
        let active = self
            .loaded
            .values()
            .filter(|l| l.entry.state.plugin().is_some())
            .count();
        crate::info!(
            "plugins: {active} of {} loaded in {} ms",
            self.loaded.len(),
            started.elapsed().as_millis()
        );
    }

    /// Polls the folder every [`POLL_INTERVAL`], forever (until the task is aborted).
    async fn watch(mut self) {
        let mut tick = tokio::time::interval(POLL_INTERVAL);
        tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
        tick.tick().await;
        loop {
            let landing = async {
                match self.next_landed().await {
                    Some(landed) => landed,
                    None => std::future::pending().await,
                }
            };
            match race(landing, tick.tick()).await {
                Race::First(landed) => {
                    self.land(landed);
                    self.publish();
                }
                Race::Second(_) => {
                    if self.poll() {
                        self.publish();
                    }
                }
            }
        }
    }

    /// Starts loading `name` in a task of its own.
    fn start_load(&mut self, name: String, path: PathBuf, fingerprint: Fingerprint) {
        let (runtime, lock) = (self.runtime.clone(), self.lock.clone());
        self.loading.insert(name.clone());
        self.loads.spawn(async move {
            let result = match &lock {
                Some(lock) => runtime.load_locked(&path, lock).await,
                None => runtime.load(&path).await,
            };
            let state = PluginState::from_load(result);
            Landed {
                name,
                path,
                fingerprint,
                state,
            }
        });
    }

    /// The next load to finish; `None` when none is in flight. A load task that
    /// panicked is logged and skipped (its plugin is loaded again at its next change).
    async fn next_landed(&mut self) -> Option<Landed> {
        loop {
            match self.loads.join_next().await? {
                Ok(landed) => return Some(landed),
                Err(e) => crate::warn!("plugins: a load task failed: {e}"),
            }
        }
    }

    /// Records a finished load (and starts it again if `plugins.lock` changed
    /// while it ran).
    fn land(&mut self, landed: Landed) {
        let Landed {
            name,
            path,
            fingerprint,
            state,
        } = landed;
        self.loading.remove(&name);
        let verb = if self.loaded.contains_key(&name) {
            "reloaded, "
        } else {
            ""
        };
        match &state {
            PluginState::Rejected { .. } => crate::warn!("plugin {name}: {verb}{}", state.describe()),
            _ => crate::info!("plugin {name}: {verb}{}", state.describe()),
        }
        self.first_load.remove(&name);
        if self.recheck.remove(&name) {
            self.start_load(name.clone(), path.clone(), fingerprint);
        }
        self.loaded.insert(
            name.clone(),
            Loaded {
                entry: PluginEntry { name, path, state },
                fingerprint,
            },
        );
    }

    /// One tick: starts loading what changed and stayed stable since the previous
    /// tick (a plugin being loaded waits for its load to land); true when a
    /// plugin was removed (the set must be published).
    fn poll(&mut self) -> bool {
        let found = match scan(&self.dir) {
            Ok(found) => found,
            Err(e) => {
                crate::warn!("plugins: cannot read {}: {e}", self.dir.display());
                return false;
            }
        };
        let lock_changed = self.refresh_lock();
        if lock_changed {
            self.recheck.extend(self.loading.iter().cloned());
        }
        self.changes(&found, lock_changed)
    }

    /// Acts on the difference between `found` and what is loaded.
    fn changes(&mut self, found: &Found, lock_changed: bool) -> bool {
        let names: BTreeSet<String> = found.keys().chain(self.loaded.keys()).cloned().collect();
        let mut to_load = Vec::new();
        let mut removed = Vec::new();
        for name in names.into_iter().filter(|n| !self.loading.contains(n)) {
            let now = found.get(&name).map(|(_, f)| *f);
            let current = self.loaded.get(&name).map(|l| l.fingerprint);
            if now == current {
                self.pending.remove(&name);
                if lock_changed && let Some((path, fingerprint)) = found.get(&name) {
                    to_load.push((name, (path.clone(), *fingerprint)));
                }
                continue;
            }
            // Changed: act only when it looks the same as at the previous tick.
            if self.pending.get(&name) != Some(&now) {
                self.pending.insert(name, now);
                continue;
            }
            self.pending.remove(&name);
            match found.get(&name) {
                Some((path, fingerprint)) => to_load.push((name, (path.clone(), *fingerprint))),
                None => removed.push(name),
            }
        }
        for (name, (path, fingerprint)) in to_load {
            self.start_load(name, path, fingerprint);
        }
        for name in &removed {
            self.loaded.remove(name);
            crate::info!("plugin {name}: removed");
        }
        !removed.is_empty()
    }

    /// In locked mode, re-reads `plugins.lock` when it changed; returns whether it did
    /// (every plugin is then re-checked against it).
    fn refresh_lock(&mut self) -> bool {
        if self.lock.is_none() {
            return false;
        }
        let now = stamp(&self.dir.join(LOCK_FILE));
        if now == self.lock_stamp {
            return false;
        }
        self.lock_stamp = now;
        match LockFile::read(&self.dir) {
            Ok(lock) => {
                crate::info!(
                    "plugins: {LOCK_FILE} changed; re-checking every plugin ({} pinned)",
                    lock.len()
                );
                self.lock = Some(lock);
                true
            }
            Err(e) => {
                crate::warn!("plugins: keeping the previous pins: {e}");
                false
            }
        }
    }

    /// Hands the full set, sorted by name, to `on_change`: what is loaded, and as
    /// `Loading` what the first load has not reached yet.
    fn publish(&self) {
        let mut all: Vec<PluginEntry> = self.loaded.values().map(|l| l.entry.clone()).collect();
        all.extend(self.first_load.iter().map(|(name, path)| PluginEntry {
            name: name.clone(),
            path: path.clone(),
            state: PluginState::Loading,
        }));
        all.sort_by(|a, b| a.name.cmp(&b.name));
        *self.entries.lock().unwrap_or_else(|p| p.into_inner()) = all.clone();
        (self.on_change)(all);
    }
}
