//! An authorization server on a temporary sled store with a clock the test moves.

use super::store::GrantStore;
use super::{AuthServer, Settings};
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};

/// The server and its clock (Unix milliseconds).
pub(crate) struct TestServer {
    pub server: AuthServer,
    pub now: Arc<AtomicU64>,
}

impl TestServer {
    pub(crate) fn new() -> TestServer {
        TestServer::tuned(|_| {})
    }

    /// The server with `tune` applied to its `[oauth]` section.
    pub(crate) fn tuned(tune: impl FnOnce(&mut crate::config::OAuthConfig)) -> TestServer {
        let storage = crate::storage::Storage::temporary().unwrap();
        let store: Arc<dyn GrantStore> = Arc::new(super::store::sled_store(&storage));
        let now = Arc::new(AtomicU64::new(1_000_000_000));
        let clock = now.clone();
        let mut config = crate::config::OAuthConfig {
            public_url: "https://hub.example".into(),
            builtin: true,
            registrations_per_minute: 3,
            max_unused_clients: 5,
            ..Default::default()
        };
        tune(&mut config);
        let settings = Settings::from_config(&config);
        TestServer {
            server: AuthServer::with(store, settings, Arc::new(move || clock.load(Ordering::SeqCst))),
            now,
        }
    }

    /// Moves the clock `ms` forward.
    pub(crate) fn advance(&self, ms: u64) {
        self.now.fetch_add(ms, Ordering::SeqCst);
    }
}
