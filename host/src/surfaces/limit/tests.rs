use super::*;
use std::sync::Mutex as StdMutex;

fn limits(chat: usize, queue: usize, wait_ms: u64) -> Arc<SurfaceLimits> {
    Arc::new(SurfaceLimits::new(&ConcurrencyConfig {
        chat,
        queue,
        queue_wait_ms: wait_ms,
        ..ConcurrencyConfig::default()
    }))
}

fn gauge(l: &SurfaceLimits, name: &str) -> String {
    let line = format!("{name}{{surface=\"chat\"}} ");
    let text = l.metrics_text();
    text.lines()
        .find_map(|l| l.strip_prefix(&line))
        .unwrap_or_else(|| panic!("{name} in {text}"))
        .to_string()
}

/// Lets every spawned task run until it waits (paused time: sleeping advances
/// only once all tasks are idle).
async fn settle() {
    tokio::time::sleep(Duration::from_millis(1)).await;
}

#[tokio::test(start_paused = true)]
async fn waiters_get_their_turn_in_arrival_order() {
    let l = limits(1, 10, 60_000);
    let first = l.enter(Surface::Chat).await.unwrap();
    let order = Arc::new(StdMutex::new(Vec::new()));
    let mut tasks = Vec::new();
    for n in 0..4 {
        let (l, order) = (l.clone(), order.clone());
        tasks.push(tokio::spawn(async move {
            let permit = l.enter(Surface::Chat).await.unwrap();
            order.lock().unwrap().push(n);
            settle().await;
            drop(permit);
        }));
        settle().await;
    }
    assert_eq!(gauge(&l, "wasmhub_surface_queued"), "4");
    // Another surface is not affected.
    drop(l.enter(Surface::Rest).await.unwrap());
    drop(first);
    for t in tasks {
        t.await.unwrap();
    }
    assert_eq!(*order.lock().unwrap(), [0, 1, 2, 3]);
    assert_eq!(gauge(&l, "wasmhub_surface_in_flight"), "0");
    assert_eq!(gauge(&l, "wasmhub_surface_queue_wait_seconds_count"), "4");
}

#[tokio::test(start_paused = true)]
async fn a_full_line_refuses_at_once_and_a_long_wait_times_out() {
    let l = limits(1, 1, 500);
    let _held = l.enter(Surface::Chat).await.unwrap();
    let waiter = tokio::spawn({
        let l = l.clone();
        async move { l.enter(Surface::Chat).await.err() }
    });
    settle().await;
    let full = l.enter(Surface::Chat).await.err().unwrap();
    assert_eq!(full.reason, RefusalReason::QueueFull { queue: 1 });
    assert_eq!((full.key(), full.code()), ("concurrency.queue", "queue_full"));
    assert!(full.to_string().contains("concurrency.chat = 1"), "{full}");
    let timed_out = waiter.await.unwrap().unwrap();
    assert_eq!(timed_out.reason, RefusalReason::Waited { wait_ms: 500 });
    assert_eq!(timed_out.key(), "concurrency.queue_wait_ms");
    assert_eq!(gauge(&l, "wasmhub_surface_queued"), "0");
    let text = l.metrics_text();
    assert!(
        text.contains("wasmhub_surface_rejected_total{surface=\"chat\",reason=\"queue_full\"} 1"),
        "{text}"
    );
    assert!(text.contains("wasmhub_surface_rejected_total{surface=\"chat\",reason=\"queue_timeout\"} 1"));
    let resp = full.into_response();
    assert_eq!(resp.status(), StatusCode::TOO_MANY_REQUESTS);
    assert_eq!(resp.headers()[header::RETRY_AFTER], "1");
}

#[tokio::test(start_paused = true)]
async fn a_waiter_that_leaves_never_gets_a_turn_and_passes_nothing_on() {
    let l = limits(1, 10, 60_000);
    let held = l.enter(Surface::Chat).await.unwrap();
    let gone = tokio::spawn({
        let l = l.clone();
        async move { l.enter(Surface::Chat).await.map(drop) }
    });
    settle().await;
    let next = tokio::spawn({
        let l = l.clone();
        async move { l.enter(Surface::Chat).await }
    });
    settle().await;
    gone.abort();
    settle().await;
    assert_eq!(gauge(&l, "wasmhub_surface_queued"), "1");
    assert_eq!(gauge(&l, "wasmhub_surface_queue_left_total"), "1");
    drop(held);
    let permit = next.await.unwrap().unwrap();
    assert_eq!(gauge(&l, "wasmhub_surface_in_flight"), "1");
    drop(permit);
    assert_eq!(gauge(&l, "wasmhub_surface_in_flight"), "0");
}

#[tokio::test(start_paused = true)]
async fn a_held_body_keeps_the_turn_until_it_is_dropped() {
    let l = limits(1, 0, 1);
    let resp = l
        .serve(Surface::Chat, async {
            respond::json(StatusCode::OK, &serde_json::json!({}))
        })
        .await;
    assert_eq!(gauge(&l, "wasmhub_surface_in_flight"), "1");
    let refused = l.serve(Surface::Chat, async { unreachable!("no room") }).await;
    assert_eq!(refused.status(), StatusCode::TOO_MANY_REQUESTS);
    drop(resp);
    assert_eq!(gauge(&l, "wasmhub_surface_in_flight"), "0");
}
