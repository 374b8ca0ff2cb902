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
    let spinners: Vec<_> = (0..SPINNERS)
        .map(|_| {
            let hub = h.hub.clone();
            tokio::spawn(async move {
                let args = json!({"calls": [{"tool": "a.spin", "input": {}}]});
                let request = wasmhub::hub::MetaToolRequest::parse("hub_call", args).unwrap();
                let context = wasmhub::hub::CallContext::new(hub.local_operator());
                hub.invoke(request, context).await
            })
        })
        .collect();
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
