//! Runtime benchmarks (`cargo bench -p wasmhub --bench runtime`), with a plain timing
//! loop instead of a bench framework:
//! - a fresh-instance call of a trivial operation, end to end in the runtime;
//! - throughput with 2 workers and with 64 concurrent callers;
//! - restart with 10 unchanged plugins loaded from the compiled cache;
//! - resident memory per live instance.
//!
//! Uses the test guests (`tests/guests/build.sh`, run here if they are missing).

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::time::{Duration, Instant};
use wasmhub::config::Limits;
use wasmhub::runtime::{Invocation, NoNestedCalls, PluginDir, Runtime};

fn root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .parent()
        .unwrap()
        .to_path_buf()
}

fn guest(name: &str) -> PathBuf {
    let path = root().join("target/test-guests").join(format!("{name}.wasm"));
    if !path.exists() {
        let ok = std::process::Command::new("bash")
            .arg(root().join("tests/guests/build.sh"))
            .status()
            .unwrap();
        assert!(ok.success());
    }
    path
}

fn inv() -> Invocation {
    Invocation {
        tenant: "test".into(),
        call_id: "bench".into(),
        deadline: (tokio::time::Instant::now() + Duration::from_secs(60)).into(),
        trace: None,
        nested: Arc::new(NoNestedCalls),
    }
}

fn rss() -> u64 {
    let statm = std::fs::read_to_string("/proc/self/statm").unwrap();
    statm.split_whitespace().nth(1).unwrap().parse::<u64>().unwrap() * 4096
}

fn report(label: &str, mut samples: Vec<Duration>) {
    samples.sort();
    let pick = |q: f64| samples[((samples.len() as f64 - 1.0) * q) as usize];
    println!(
        "{label:<44} n={:<6} median {:>8.1} µs   p99 {:>8.1} µs   min {:>6.1} µs",
        samples.len(),
        pick(0.5).as_secs_f64() * 1e6,
        pick(0.99).as_secs_f64() * 1e6,
        samples[0].as_secs_f64() * 1e6
    );
}

/// CPU time (user + system) this process has used so far.
fn cpu_time() -> Duration {
    let stat = std::fs::read_to_string("/proc/self/stat").unwrap();
    let fields: Vec<&str> = stat.rsplit_once(')').unwrap().1.split_whitespace().collect();
    let ticks: u64 = fields[11].parse::<u64>().unwrap() + fields[12].parse::<u64>().unwrap();
    Duration::from_millis(ticks * 10)
}

/// (calls/s, CPU µs per call) of `callers` tasks each calling `noop` in a loop
/// for `secs`. CPU per call is the fairer number on a shared machine.
async fn throughput(plugin: &Arc<wasmhub::runtime::Plugin>, callers: usize, secs: f64) -> (f64, f64) {
    let stop = Arc::new(AtomicBool::new(false));
    let done = Arc::new(AtomicU64::new(0));
    let tasks: Vec<_> = (0..callers)
        .map(|_| {
            let (p, stop, done) = (plugin.clone(), stop.clone(), done.clone());
            tokio::spawn(async move {
                while !stop.load(Ordering::Relaxed) {
                    p.call("noop", "{}", inv()).await.unwrap();
                    done.fetch_add(1, Ordering::Relaxed);
                }
            })
        })
        .collect();
    let (started, cpu) = (Instant::now(), cpu_time());
    tokio::time::sleep(Duration::from_secs_f64(secs)).await;
    stop.store(true, Ordering::Relaxed);
    for t in tasks {
        t.await.unwrap();
    }
    let n = done.load(Ordering::Relaxed) as f64;
    (
        n / started.elapsed().as_secs_f64(),
        (cpu_time() - cpu).as_secs_f64() * 1e6 / n,
    )
}

fn distinct_copies(dir: &Path, n: usize) {
    let bytes = std::fs::read(guest("adversary")).unwrap();
    for i in 0..n {
        let mut b = bytes.clone();
        let tag = format!("{i}");
        b.extend_from_slice(&[0, (1 + 5 + tag.len()) as u8, 5]);
        b.extend_from_slice(b"bench");
        b.extend_from_slice(tag.as_bytes());
        std::fs::write(dir.join(format!("p{i}.wasm")), b).unwrap();
    }
}

fn main() {
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .unwrap();
    rt.block_on(async {
        let limits = Limits::default();
        let runtime = Runtime::new(&limits, None).unwrap();
        println!("allocator: {:?}, epoch tick {:?}", runtime.allocator(), wasmhub::runtime::epoch_tick(&limits.cpu));
        let plugin = runtime.load(&guest("adversary")).await.unwrap();

        for _ in 0..2_000 {
            plugin.call("noop", "{}", inv()).await.unwrap();
        }
        let mut samples = Vec::with_capacity(20_000);
        for _ in 0..20_000 {
            let t = Instant::now();
            plugin.call("noop", "{}", inv()).await.unwrap();
            samples.push(t.elapsed());
        }
        report("fresh instance + trivial call (noop)", samples);
        let mut samples = Vec::with_capacity(10_000);
        let input = r#"{"text":"hello world","n":42}"#;
        for _ in 0..10_000 {
            let t = Instant::now();
            plugin.call("echo", input, inv()).await.unwrap();
            samples.push(t.elapsed());
        }
        report("fresh instance + echo (30 B JSON)", samples);
        if std::env::var_os("RUNTIME_BENCH_LATENCY_ONLY").is_some() {
            return;
        }

        let load = std::fs::read_to_string("/proc/loadavg").unwrap_or_default();
        println!("load average before throughput: {}", load.split_whitespace().take(3).collect::<Vec<_>>().join(" "));
        let (one, one_cpu) = throughput(&plugin, 1, 3.0).await;
        for callers in [2, 64] {
            let (n, cpu) = throughput(&plugin, callers, 3.0).await;
            println!(
                "throughput, {callers:>2} callers: {n:>7.0} calls/s ({:.2}x of 1 caller's {one:.0}/s), CPU {cpu:.1} µs/call (1 caller: {one_cpu:.1})",
                n / one
            );
        }

        // Resident memory per live instance: hold 200 instances in `slow`.
        let before = rss();
        let held: Vec<_> = (0..200)
            .map(|_| {
                let p = plugin.clone();
                tokio::spawn(async move { p.call("slow", r#"{"ms": 1500}"#, inv()).await })
            })
            .collect();
        tokio::time::sleep(Duration::from_millis(700)).await;
        let during = rss();
        for h in held {
            h.await.unwrap().unwrap();
        }
        println!("memory: {:.1} KiB RSS per live instance (200 held)", (during.saturating_sub(before)) as f64 / 200.0 / 1024.0);

        // Restart with 10 unchanged plugins from the compiled cache.
        let scratch = root().join("target/bench-scratch");
        let _ = std::fs::remove_dir_all(&scratch);
        let plugins = scratch.join("plugins");
        std::fs::create_dir_all(&plugins).unwrap();
        distinct_copies(&plugins, 10);
        let compiled = scratch.join("compiled");
        let noop: Arc<dyn Fn(Vec<wasmhub::runtime::PluginEntry>) + Send + Sync> = Arc::new(|_| {});
        {
            let t = Instant::now();
            let rt = Runtime::new(&limits, Some(&compiled)).unwrap();
            let dir = PluginDir::start(rt, plugins.clone(), None, noop.clone()).await.unwrap();
            assert_eq!(dir.entries().iter().filter(|e| e.state.plugin().is_some()).count(), 10);
            println!("cold start, 10 plugins compiled:            {:>8.1} ms", t.elapsed().as_secs_f64() * 1e3);
        }
        let mut samples = Vec::new();
        for _ in 0..5 {
            let t = Instant::now();
            let rt = Runtime::new(&limits, Some(&compiled)).unwrap();
            let dir = PluginDir::start(rt, plugins.clone(), None, noop.clone()).await.unwrap();
            samples.push(t.elapsed());
            assert_eq!(dir.entries().iter().filter(|e| e.state.plugin().is_some()).count(), 10);
        }
        samples.sort();
        println!(
            "restart, 10 unchanged plugins from cache:    median {:>6.1} ms   max {:>6.1} ms",
            samples[2].as_secs_f64() * 1e3,
            samples[4].as_secs_f64() * 1e3
        );
        let _ = std::fs::remove_dir_all(&scratch);
    });
}
