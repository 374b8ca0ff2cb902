//! One-time sign-in codes: an operator creates one for a principal (`wasmhub
//! oauth code NAME`, or the console), hands it to the person, and the person types
//! it on the consent page. Single use, short-lived, stored as a digest.

use super::secret::{self, Kind as SecretKind};
use super::store::{GrantStore, Kind, Record, Spend};
use super::{Clock, Settings};
use crate::storage::StorageError;
use std::sync::Arc;

/// The sign-in codes.
pub(crate) struct SignInCodes {
    store: Arc<dyn GrantStore>,
    settings: Arc<Settings>,
    clock: Clock,
}

impl SignInCodes {
    pub(crate) fn new(store: Arc<dyn GrantStore>, settings: Arc<Settings>, clock: Clock) -> SignInCodes {
        SignInCodes {
            store,
            settings,
            clock,
        }
    }

    /// A new code for `principal` (the caller checked it is a configured token's
    /// name) and how long it lives, in seconds.
    pub(crate) async fn create(&self, principal: &str) -> Result<(String, u64), StorageError> {
        let code = secret::new(SecretKind::SignIn);
        let record = Record {
            value: serde_json::json!({ "principal": principal }),
            expires_ms: (self.clock)() + self.settings.signin_ms,
            spent: false,
        };
        self.store
            .put(Kind::SignIn, &secret::digest(&code), &record)
            .await?;
        Ok((code, self.settings.signin_ms / 1000))
    }

    /// The principal of `code`, spending it; `None` when it is unknown, used or
    /// expired.
    pub(crate) async fn redeem(&self, code: &str) -> Result<Option<String>, StorageError> {
        if !SecretKind::SignIn.marks(code.trim()) {
            return Ok(None);
        }
        match self
            .store
            .spend(Kind::SignIn, &secret::digest(code.trim()))
            .await?
        {
            Spend::Fresh(r) if r.expires_ms > (self.clock)() => {
                Ok(r.value["principal"].as_str().map(String::from))
            }
            Spend::Fresh(_) | Spend::Replayed(_) | Spend::Missing => Ok(None),
        }
    }
}
