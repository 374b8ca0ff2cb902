//! The key cache against a scripted fetcher and a hand-moved clock: hits, the
//! rate-limited refetch on an unknown `kid`, rotation, discovery and back-off.

use super::*;
use http::StatusCode;
use serde_json::json;
use std::collections::HashMap;
use std::sync::Mutex as StdMutex;
use std::sync::atomic::{AtomicU64, Ordering};

const ISS: &str = "https://id.example.com/tenant";

#[derive(Default)]
struct Script {
    docs: StdMutex<HashMap<String, serde_json::Value>>,
    gets: StdMutex<Vec<String>>,
}

impl Script {
    fn serve(&self, url: &str, doc: serde_json::Value) {
        self.docs.lock().unwrap().insert(url.into(), doc);
    }

    fn take_gets(&self) -> Vec<String> {
        std::mem::take(&mut self.gets.lock().unwrap())
    }
}

#[async_trait::async_trait]
impl Fetch for Script {
    async fn get(&self, url: &str) -> Result<Bytes, FetchError> {
        self.gets.lock().unwrap().push(url.into());
        match self.docs.lock().unwrap().get(url) {
            Some(doc) => Ok(Bytes::from(doc.to_string())),
            None => Err(FetchError::Status(StatusCode::NOT_FOUND)),
        }
    }
}

fn ed_key(kid: &str, byte: u8) -> serde_json::Value {
    json!({"kty": "OKP", "crv": "Ed25519", "kid": kid, "x": crate::base64::encode_url(&[byte; 32])})
}

fn keys(jwks_uri: Option<&str>) -> (Arc<Script>, Arc<AtomicU64>, IssuerKeys) {
    let script = Arc::new(Script::default());
    let now = Arc::new(AtomicU64::new(1_000_000));
    let clock = now.clone();
    let keys = IssuerKeys::new(
        KeyPolicy {
            issuer: ISS.into(),
            jwks_uri: jwks_uri.map(String::from),
            refetch_ms: 60_000,
            max_age_ms: 3_600_000,
        },
        script.clone(),
        Arc::new(move || clock.load(Ordering::SeqCst)),
    );
    (script, now, keys)
}

async fn found(keys: &IssuerKeys, kid: &str) -> bool {
    matches!(keys.key(Some(kid), Alg::EdDsa).await.unwrap(), Lookup::Found(_))
}

#[tokio::test]
async fn an_unknown_kid_refetches_at_most_once_per_interval() {
    let (script, now, keys) = keys(Some("https://id.example.com/jwks"));
    script.serve("https://id.example.com/jwks", json!({"keys": [ed_key("a", 1)]}));
    assert!(found(&keys, "a").await);
    assert!(found(&keys, "a").await);
    assert_eq!(script.take_gets().len(), 1, "the second look-up is a hit");

    // The issuer rotates to key b: a token under b right away is not yet due a
    // refetch (the last fetch was just now).
    script.serve("https://id.example.com/jwks", json!({"keys": [ed_key("b", 2)]}));
    assert!(!found(&keys, "b").await);
    assert!(script.take_gets().is_empty());
    now.fetch_add(60_000, Ordering::SeqCst);
    assert!(found(&keys, "b").await, "due: refetched, rotation seen");
    assert_eq!(script.take_gets().len(), 1);
    // Made-up kids cannot make it fetch again within the interval.
    for kid in ["x", "y", "z"] {
        assert!(!found(&keys, kid).await);
    }
    assert!(script.take_gets().is_empty());
    // The old key is gone from the set.
    now.fetch_add(60_000, Ordering::SeqCst);
    assert!(!found(&keys, "a").await);
}

#[tokio::test]
async fn an_old_set_is_fetched_again_before_use() {
    let (script, now, keys) = keys(Some("https://id.example.com/jwks"));
    script.serve("https://id.example.com/jwks", json!({"keys": [ed_key("a", 1)]}));
    assert!(found(&keys, "a").await);
    script.serve("https://id.example.com/jwks", json!({"keys": []}));
    now.fetch_add(3_600_000, Ordering::SeqCst);
    assert!(!found(&keys, "a").await, "a withdrawn key stops verifying");
    assert_eq!(script.take_gets().len(), 2);
}

#[tokio::test]
async fn jwks_uri_is_discovered_once_from_metadata() {
    let (script, now, keys) = keys(None);
    // No OpenID configuration: RFC 8414's well-known URL, path after the prefix.
    script.serve(
        "https://id.example.com/.well-known/oauth-authorization-server/tenant",
        json!({"issuer": ISS, "jwks_uri": "https://id.example.com/tenant/keys"}),
    );
    script.serve(
        "https://id.example.com/tenant/keys",
        json!({"keys": [ed_key("a", 1)]}),
    );
    assert!(found(&keys, "a").await);
    assert_eq!(
        script.take_gets(),
        [
            "https://id.example.com/tenant/.well-known/openid-configuration",
            "https://id.example.com/.well-known/oauth-authorization-server/tenant",
            "https://id.example.com/tenant/keys",
        ]
    );
    now.fetch_add(60_000, Ordering::SeqCst);
    assert!(!found(&keys, "b").await);
    assert_eq!(script.take_gets(), ["https://id.example.com/tenant/keys"]);
}

#[tokio::test]
async fn metadata_of_another_issuer_is_refused() {
    let (script, _now, keys) = keys(None);
    script.serve(
        "https://id.example.com/tenant/.well-known/openid-configuration",
        json!({"issuer": "https://evil.example.com", "jwks_uri": "https://evil.example.com/keys"}),
    );
    let err = keys.key(Some("a"), Alg::EdDsa).await.unwrap_err();
    assert!(matches!(err, KeysError::OtherIssuer { .. }), "{err}");
}

#[tokio::test]
async fn a_failed_fetch_backs_off_then_retries() {
    let (script, now, keys) = keys(Some("https://id.example.com/jwks"));
    let err = keys.key(Some("a"), Alg::EdDsa).await.unwrap_err();
    assert!(
        matches!(&err, KeysError::Fetch { source: FetchError::Status(s), .. } if *s == StatusCode::NOT_FOUND),
        "{err}"
    );
    assert!(matches!(
        keys.key(Some("a"), Alg::EdDsa).await,
        Err(KeysError::Backoff)
    ));
    assert_eq!(script.take_gets().len(), 1);
    script.serve("https://id.example.com/jwks", json!({"keys": [ed_key("a", 1)]}));
    now.fetch_add(60_000, Ordering::SeqCst);
    assert!(found(&keys, "a").await);
    // A broken set is an error naming the member.
    script.serve(
        "https://id.example.com/jwks",
        json!({"keys": [{"kty": "OKP", "crv": "Ed25519", "kid": "c"}]}),
    );
    now.fetch_add(60_000, Ordering::SeqCst);
    let err = keys.key(Some("c"), Alg::EdDsa).await.unwrap_err();
    assert!(matches!(err, KeysError::Jwks { .. }), "{err}");
    // ... and the set fetched before still answers until the next attempt is due.
    assert!(found(&keys, "a").await);
}

#[test]
fn rfc8414_urls_insert_the_well_known_prefix() {
    assert_eq!(
        rfc8414_url("https://id.example.com").unwrap(),
        "https://id.example.com/.well-known/oauth-authorization-server"
    );
    assert_eq!(
        rfc8414_url("https://id.example.com/a/b").unwrap(),
        "https://id.example.com/.well-known/oauth-authorization-server/a/b"
    );
}

/// Answers at once the first time, then only when released.
struct Gate {
    calls: AtomicU64,
    release: tokio::sync::Notify,
}

#[async_trait::async_trait]
impl Fetch for Gate {
    async fn get(&self, _url: &str) -> Result<Bytes, FetchError> {
        if self.calls.fetch_add(1, Ordering::SeqCst) > 0 {
            self.release.notified().await;
        }
        Ok(Bytes::from(json!({"keys": [ed_key("a", 1)]}).to_string()))
    }
}

#[tokio::test]
async fn a_cached_key_does_not_wait_for_a_fetch_in_progress() {
    let gate = Arc::new(Gate {
        calls: AtomicU64::new(0),
        release: tokio::sync::Notify::new(),
    });
    let now = Arc::new(AtomicU64::new(0));
    let clock = now.clone();
    let keys = Arc::new(IssuerKeys::new(
        KeyPolicy {
            issuer: ISS.into(),
            jwks_uri: Some("https://id.example.com/jwks".into()),
            refetch_ms: 1,
            max_age_ms: 3_600_000,
        },
        gate.clone(),
        Arc::new(move || clock.load(Ordering::SeqCst)),
    ));
    assert!(found(&keys, "a").await);
    now.store(10, Ordering::SeqCst);
    let waiting = {
        let keys = keys.clone();
        tokio::spawn(async move {
            keys.key(Some("b"), Alg::EdDsa)
                .await
                .map(|l| matches!(l, Lookup::Found(_)))
        })
    };
    while gate.calls.load(Ordering::SeqCst) < 2 {
        tokio::task::yield_now().await;
    }
    // The fetch for "b" is stuck; "a" is answered from the cache meanwhile.
    assert!(found(&keys, "a").await);
    gate.release.notify_one();
    assert!(!waiting.await.unwrap().unwrap());
}
