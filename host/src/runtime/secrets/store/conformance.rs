//! The conformance suite every [`SecretStore`] passes, run on sled and (with the
//! `postgres` feature) on PostgreSQL. `a` and `b` are two stores on one database:
//! two replicas (the same store twice for sled).

use super::{Sealed, SecretStore, StoredName};
use std::sync::Arc;

type Store = Arc<dyn SecretStore>;

fn sealed(byte: u8, updated_ms: u64) -> Sealed {
    Sealed {
        bytes: vec![1, byte, byte, 0, 255],
        updated_ms,
    }
}

/// Runs every check on `a` and `b`.
pub(crate) async fn run(a: Store, b: Store) {
    values_are_shared_and_per_plugin(&a, &b).await;
    names_are_listed_without_values(&a, &b).await;
}

async fn values_are_shared_and_per_plugin(a: &Store, b: &Store) {
    a.put("one", "API_KEY", &sealed(1, 10)).await.unwrap();
    b.put("two", "API_KEY", &sealed(2, 20)).await.unwrap();
    assert_eq!(b.get("one", "API_KEY").await.unwrap(), Some(sealed(1, 10)));
    assert_eq!(a.get("two", "API_KEY").await.unwrap(), Some(sealed(2, 20)));
    assert_eq!(a.get("one", "OTHER").await.unwrap(), None);
    assert_eq!(a.get("three", "API_KEY").await.unwrap(), None);
    // Setting again replaces (rotation), seen by the other replica at once.
    b.put("one", "API_KEY", &sealed(3, 30)).await.unwrap();
    assert_eq!(a.get("one", "API_KEY").await.unwrap(), Some(sealed(3, 30)));
    assert!(a.remove("one", "API_KEY").await.unwrap());
    assert!(!b.remove("one", "API_KEY").await.unwrap());
    assert_eq!(b.get("one", "API_KEY").await.unwrap(), None);
    assert!(b.remove("two", "API_KEY").await.unwrap());
}

async fn names_are_listed_without_values(a: &Store, b: &Store) {
    a.put("p-b", "Z", &sealed(1, 5)).await.unwrap();
    a.put("p-a", "Y", &sealed(2, 6)).await.unwrap();
    b.put("p-a", "X", &sealed(3, 7)).await.unwrap();
    let name = |plugin: &str, name: &str, updated_ms| StoredName {
        plugin: plugin.into(),
        name: name.into(),
        updated_ms,
    };
    assert_eq!(
        b.list(None).await.unwrap(),
        [name("p-a", "X", 7), name("p-a", "Y", 6), name("p-b", "Z", 5)]
    );
    assert_eq!(
        a.list(Some("p-a")).await.unwrap(),
        [name("p-a", "X", 7), name("p-a", "Y", 6)]
    );
    assert_eq!(a.list(Some("p")).await.unwrap(), []);
    for (p, n) in [("p-b", "Z"), ("p-a", "Y"), ("p-a", "X")] {
        assert!(a.remove(p, n).await.unwrap());
    }
}
