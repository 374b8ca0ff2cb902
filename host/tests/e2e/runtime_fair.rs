//! Fair CPU within one principal (issue 39): a call of one plugin runs its ticks
//! beside another plugin's spinning calls of the same token (running permits and
//! CPU tickets both go to the plugins' lines in turn), instead of queueing behind
//! all of them.

use crate::support::hub::{TestHub, hub, plugins};
use crate::support::wait::in_flight;
use serde_json::json;

/// Calls of the spinning plugin kept running through the test.
const SPINNERS: i64 = 32;

/// `wasmhub_cpu_ticks_total` of the local operator's calls of `plugin`: the ticks
/// they ran past their free first tick, each on a CPU ticket.
fn ticks(h: &TestHub, plugin: &str) -> u64 {
    let text = h.hub.metrics_text();
    let series = format!("wasmhub_cpu_ticks_total{{token=\"local\",plugin=\"{plugin}\"}} ");
    text.lines()
        .find_map(|l| l.strip_prefix(series.as_str()))
        .map_or(0, |n| n.parse().unwrap())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_long_call_of_one_plugin_gets_cpu_tickets_beside_another_plugins_spinners() {
    let dir = plugins(&[("adversary", "a"), ("adversary", "b")], &[]);
    // b's call spins until its 1 s limit; a's spinners outlast the test.
    std::fs::write(dir.path("b.toml"), "[limits]\ntimeout_ms = 1000\n").unwrap();
    let h = hub(&dir, |c| c.limits.call.timeout_ms = 600_000).await;
    let spinners = spinners(&h, "a.spin", SPINNERS as usize);
    in_flight(&h.hub, SPINNERS).await;
    let before = ticks(&h, "a");
    let r = h.call("b.spin", json!({})).await;
    assert_eq!(r["error"]["code"], "timeout", "{r}");
    let (a, b) = (ticks(&h, "a") - before, ticks(&h, "b"));
    assert!(
        a >= 20,
        "a's spinners ran {a} ticks past their first during b's call"
    );
    // The permits and tickets went to the two plugins' lines in turn, not one to b
    // for every 32 to a's spinners queued before it.
    assert!(
        b * 3 >= a,
        "b's call ran {b} ticks while a's spinners ran {a}: it queued behind them"
    );
    assert!(
        spinners.iter().all(|s| !s.is_finished()),
        "a's spinners ended early"
    );
    for spinner in spinners {
        spinner.abort();
    }
}

/// Keeps `n` calls of `tool` running (as the local operator) until aborted.
fn spinners(h: &TestHub, tool: &str, n: usize) -> Vec<tokio::task::JoinHandle<()>> {
    (0..n)
        .map(|_| {
            let (hub, tool) = (h.hub.clone(), tool.to_string());
            tokio::spawn(async move {
                let args = json!({"calls": [{"tool": tool, "input": {}}]});
                let request = wasmhub::hub::MetaToolRequest::parse("hub_call", args).unwrap();
                let context = wasmhub::hub::CallContext::new(hub.local_operator());
                let _ = hub.invoke(request, context).await;
            })
        })
        .collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn two_plugins_spinning_on_one_token_share_its_cpu_by_their_weights() {
    // Four workers: the token has two running permits and two tickets a tick; the
    // spinners wait for both. b weighs three times a.
    let dir = plugins(&[("adversary", "a"), ("adversary", "b")], &[]);
    let h = hub(&dir, |c| {
        c.limits.call.timeout_ms = 600_000;
        c.limits.cpu.plugin_weights.insert("b".into(), 3);
    })
    .await;
    let mut all = spinners(&h, "a.spin", 16);
    all.extend(spinners(&h, "b.spin", 16));
    in_flight(&h.hub, 32).await;
    let (a0, b0) = (ticks(&h, "a"), ticks(&h, "b"));
    let (a, b) = crate::support::wait::until("400 ticks spent past the first", || async {
        let (a, b) = (ticks(&h, "a") - a0, ticks(&h, "b") - b0);
        (a + b >= 400).then_some((a, b))
    })
    .await;
    // Stride scheduling gives b three ticks for each of a's; permits taken in
    // plain turns, or one first-come ticket queue, gave them one each. (Since the
    // spinners move to the low-priority threads, a turn's length varies with the
    // kernel's time for them: alone 3:1 to 2:1, under the whole e2e suite 1.9:1;
    // 1.5 still fails plain turns, 202:199.)
    assert!(2 * b >= 3 * a, "b (weight 3) ran {b} ticks and a (weight 1) {a}");
    for spinner in all {
        spinner.abort();
    }
}
