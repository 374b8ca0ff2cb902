//! What a long turn costs in memory when a client resumes it: a 10 MB answer
//! (1 KiB deltas) with a reload half way, once with `agent.resume_buffer_kb` at its
//! default (1024: the turn keeps a tail and a joiner gets a replay of the message)
//! and once at 1 GiB (every chunk kept, as before the budget). Each run is a
//! child process of this bench; the two alternate, three times each. Reported:
//! the resident memory the live turn added by the time the model pauses half way
//! (VmRSS then, less VmRSS once the scripted model's 11 MB of frames were made and
//! before the turn began), and the peak (VmHWM) growth over the whole run, with
//! medians and ratios.

use super::support::client;
use super::support::upstream::{Frame, Reply, Upstream};
use super::{chunk, median, status_kb};
use serde_json::json;
use std::sync::Arc;
use std::time::Duration;

const CHILD: &str = "WASMHUB_BENCH_RESUME_KB";
const HALF: usize = 5 << 20;
const ROUNDS: usize = 3;

/// In a child run: runs the scenario with the budget it was given and exits.
pub fn child_run() {
    let Some(kb) = std::env::var(CHILD).ok().and_then(|v| v.parse::<usize>().ok()) else {
        return;
    };
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .unwrap();
    let (half_way, peak) = runtime.block_on(scenario(kb));
    println!("GREW_KB={half_way} {peak}");
    std::process::exit(0);
}

/// Runs both budgets side by side in child processes; the medians (KiB of RSS
/// growth half way, bounded and unbounded).
pub fn compare() -> (u64, u64) {
    let mut runs: [Vec<(f64, f64)>; 2] = [Vec::new(), Vec::new()];
    for _ in 0..ROUNDS {
        runs[0].push(child(1024));
        runs[1].push(child(1 << 20));
    }
    let medians = |r: &[(f64, f64)]| {
        (
            median(r.iter().map(|x| x.0).collect()) as u64,
            median(r.iter().map(|x| x.1).collect()) as u64,
        )
    };
    let ((b, b_peak), (u, u_peak)) = (medians(&runs[0]), medians(&runs[1]));
    println!(
        "10 MB turn paused half way, RSS the turn added (median of {ROUNDS}): {} KiB with \
         resume_buffer_kb = 1024, {} KiB keeping every chunk ({:.2}x); peak growth over the \
         whole run {} vs {} MiB",
        b,
        u,
        u as f64 / b.max(1) as f64,
        b_peak / 1024,
        u_peak / 1024
    );
    (b, u)
}

fn child(kb: usize) -> (f64, f64) {
    let out = std::process::Command::new(std::env::current_exe().unwrap())
        .env(CHILD, kb.to_string())
        .output()
        .expect("the bench runs itself");
    let text = String::from_utf8_lossy(&out.stdout);
    text.lines()
        .find_map(|l| l.strip_prefix("GREW_KB="))
        .and_then(|n| n.split_once(' '))
        .and_then(|(a, b)| Some((a.parse().ok()?, b.parse().ok()?)))
        .unwrap_or_else(|| {
            panic!(
                "the child run failed: {text}{}",
                String::from_utf8_lossy(&out.stderr)
            )
        })
}

/// The 10 MB turn with a reload half way; the RSS growth half way and the peak
/// growth, in KiB.
async fn scenario(kb: usize) -> (u64, u64) {
    let scratch = std::env::temp_dir().join(wasmhub::ids::new_id("wasmhub-resume-bench"));
    let upstream = Upstream::start().await;
    let gate = Arc::new(tokio::sync::Notify::new());
    let piece = "x".repeat(1023) + " ";
    let mut frames = vec![chunk(json!({"role": "assistant", "content": ""}), None)];
    let half: Vec<Frame> = (0..HALF / 1024)
        .map(|_| chunk(json!({"content": piece}), None))
        .collect();
    frames.extend(half.iter().cloned());
    frames.push(Frame::Until(gate.clone()));
    frames.extend(half);
    frames.push(chunk(json!({}), Some("stop")));
    frames.push(Frame::Data("[DONE]".into()));
    upstream.push(Reply::sse(frames));
    let hub = super::hub(&upstream, &scratch, |config| {
        config.agent.resume_buffer_kb = kb;
        config.agent.lagging_watcher_kb = config.agent.lagging_watcher_kb.max(kb);
    })
    .await;
    let before = status_kb("VmRSS:");
    let peak_before = status_kb("VmHWM:");
    let body = json!({"id": "long", "trigger": "submit-message",
        "messages": [{"id": "u1", "role": "user", "parts": [{"type": "text", "text": "go"}]}]});
    let mut first = client::post(hub.addr, "/api/chat", &body).await;
    let mut got = 0;
    while got < HALF {
        let Some(event) = first.next_event().await else {
            panic!("the first half")
        };
        got += event.len().saturating_sub(40);
    }
    drop(first);
    let half_way = status_kb("VmRSS:").saturating_sub(before);
    let again = client::send(hub.addr, http::Method::GET, "/api/chat/long/stream", None, &[]).await;
    gate.notify_one();
    let (events, _) = again.events(Duration::from_secs(120)).await;
    assert_eq!(events.last().map(String::as_str), Some("[DONE]"));
    drop(events);
    let peak = status_kb("VmHWM:").saturating_sub(peak_before);
    let _ = std::fs::remove_dir_all(&scratch);
    (half_way, peak)
}
