//! The conformance suite every [`GrantStore`] passes, run on sled and (with the
//! `postgres` feature) on PostgreSQL. `a` and `b` are two stores on one database:
//! two replicas (the same store twice for sled).

use super::{GrantStore, Kind, Record, Spend};
use serde_json::json;
use std::sync::Arc;

type Store = Arc<dyn GrantStore>;

fn rec(n: u64, expires_ms: u64) -> Record {
    Record {
        value: json!({ "n": n }),
        expires_ms,
        spent: false,
    }
}

/// Runs every check on `a` and `b`.
pub(crate) async fn run(a: Store, b: Store) {
    records_are_shared_and_kinds_are_separate(&a, &b).await;
    a_record_is_spent_exactly_once(&a, &b).await;
    live_records_are_counted_and_expired_ones_purged(&a, &b).await;
}

async fn records_are_shared_and_kinds_are_separate(a: &Store, b: &Store) {
    a.put(Kind::Access, "k1", &rec(1, 10_000)).await.unwrap();
    assert_eq!(b.get(Kind::Access, "k1").await.unwrap(), Some(rec(1, 10_000)));
    assert_eq!(b.get(Kind::Refresh, "k1").await.unwrap(), None);
    // Putting again replaces.
    b.put(Kind::Access, "k1", &rec(2, 20_000)).await.unwrap();
    assert_eq!(a.get(Kind::Access, "k1").await.unwrap(), Some(rec(2, 20_000)));
    assert!(a.remove(Kind::Access, "k1").await.unwrap());
    assert!(!b.remove(Kind::Access, "k1").await.unwrap());
    assert_eq!(b.get(Kind::Access, "k1").await.unwrap(), None);
}

async fn a_record_is_spent_exactly_once(a: &Store, b: &Store) {
    a.put(Kind::Code, "c1", &rec(7, 10_000)).await.unwrap();
    assert_eq!(
        a.spend(Kind::Code, "c1").await.unwrap(),
        Spend::Fresh(rec(7, 10_000))
    );
    let replay = b.spend(Kind::Code, "c1").await.unwrap();
    assert_eq!(
        replay,
        Spend::Replayed(Record {
            spent: true,
            ..rec(7, 10_000)
        })
    );
    assert_eq!(a.spend(Kind::Code, "absent").await.unwrap(), Spend::Missing);
    assert_eq!(a.spend(Kind::Refresh, "c1").await.unwrap(), Spend::Missing);
    // Two replicas racing for one record: one wins.
    b.put(Kind::Refresh, "r1", &rec(8, 10_000)).await.unwrap();
    let (x, y) = tokio::join!(a.spend(Kind::Refresh, "r1"), b.spend(Kind::Refresh, "r1"));
    let fresh = [x.unwrap(), y.unwrap()]
        .into_iter()
        .filter(|s| matches!(s, Spend::Fresh(_)))
        .count();
    assert_eq!(fresh, 1);
}

async fn live_records_are_counted_and_expired_ones_purged(a: &Store, b: &Store) {
    for (i, expires) in [(1, 100), (2, 200), (3, 300)] {
        a.put(Kind::UnusedClient, &format!("u{i}"), &rec(i, expires))
            .await
            .unwrap();
    }
    b.put(Kind::Client, "other-kind", &rec(9, 50)).await.unwrap();
    assert_eq!(b.count_live(Kind::UnusedClient, 150).await.unwrap(), 2);
    assert_eq!(b.count_live(Kind::UnusedClient, 300).await.unwrap(), 0);
    assert_eq!(a.purge(201).await.unwrap(), 3, "u1, u2 and other-kind");
    assert_eq!(b.get(Kind::UnusedClient, "u2").await.unwrap(), None);
    assert!(b.get(Kind::UnusedClient, "u3").await.unwrap().is_some());
}
