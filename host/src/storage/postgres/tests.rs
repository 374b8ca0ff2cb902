use super::*;

fn config(pool_size: usize) -> StorageConfig {
    StorageConfig {
        pool_size,
        connect_timeout_ms: 200,
        ..StorageConfig::default()
    }
}

#[tokio::test]
async fn migrations_apply_once_even_when_replicas_start_together() {
    let pg = test_database().await;
    const STEPS: &[&str] = &[
        "CREATE TABLE wasmhub_t (n integer)",
        "INSERT INTO wasmhub_t VALUES (1); ALTER TABLE wasmhub_t ADD COLUMN m integer",
    ];
    let runs: Vec<_> = (0..4)
        .map(|_| {
            let pg = pg.clone();
            tokio::spawn(async move { pg.migrate("t", STEPS).await })
        })
        .collect();
    for run in runs {
        run.await.unwrap().unwrap();
    }
    let client = pg.client().await.unwrap();
    let rows = client.query("SELECT n, m FROM wasmhub_t", &[]).await.unwrap();
    assert_eq!(rows.len(), 1, "the second step ran exactly once");
    // A binary that knows fewer steps refuses the newer schema.
    let err = pg.migrate("t", &STEPS[..1]).await.unwrap_err();
    assert!(
        matches!(
            err,
            StorageError::SchemaTooNew {
                found: 2,
                known: 1,
                ..
            }
        ),
        "{err}"
    );
    assert!(err.to_string().contains("version 2 of the t schema"), "{err}");
}

#[tokio::test]
async fn the_pool_is_bounded_and_says_which_limit_was_hit() {
    let pg = test_database().await;
    let pg = Postgres::with_config(pg.pool.config.clone(), 2, Duration::from_millis(200));
    let a = pg.client().await.unwrap();
    let _b = pg.client().await.unwrap();
    let err = pg
        .client()
        .await
        .err()
        .expect("a third connection waits, then fails");
    assert!(err.to_string().contains("storage.pool_size"), "{err}");
    drop(a);
    // The returned connection is reused.
    let c = pg.client().await.unwrap();
    assert_eq!(
        c.query_one("SELECT 1::integer", &[])
            .await
            .unwrap()
            .get::<_, i32>(0),
        1
    );
}

#[tokio::test]
async fn notifications_reach_a_listener_in_order() {
    let pg = test_database().await;
    let mut listener = pg.listen("wasmhub_test_channel").await.unwrap();
    let client = pg.client().await.unwrap();
    for payload in ["one", "two"] {
        client
            .execute("SELECT pg_notify('wasmhub_test_channel', $1)", &[&payload])
            .await
            .unwrap();
    }
    assert_eq!(listener.recv().await.as_deref(), Some("one"));
    assert_eq!(listener.recv().await.as_deref(), Some("two"));
}

#[tokio::test]
async fn a_missing_url_variable_is_named() {
    let mut config = config(1);
    config.url_env = "WASMHUB_TEST_NO_SUCH_VARIABLE".into();
    let err = Postgres::connect(&config).await.err().unwrap();
    assert!(err.to_string().contains("WASMHUB_TEST_NO_SUCH_VARIABLE"), "{err}");
}
