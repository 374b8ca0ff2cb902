//! What one principal may keep stored: its chat sessions and their bytes, so one
//! tenant cannot fill the store for all. The limits come from the token
//! (`[[tokens]] max_sessions`, `max_stored_mb`) or the defaults of `[storage]`; each
//! remembers the key it came from, so a refusal names the key to raise.

use crate::config::{StorageConfig, TokenConfig};
use std::sync::Arc;

const MB: u64 = 1024 * 1024;

/// One limit and the configuration key that set it; 0 means no limit.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct QuotaLimit {
    /// The limit (sessions, or bytes).
    pub limit: u64,
    /// The key that set it, as the operator writes it: `tokens[bob].max_sessions`.
    pub key: Arc<str>,
}

impl QuotaLimit {
    /// Whether `used` leaves no room for more.
    pub fn reached(&self, used: u64) -> bool {
        self.limit != 0 && used >= self.limit
    }
}

/// A principal's storage limits.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct StorageQuota {
    /// Most stored chat sessions.
    pub sessions: QuotaLimit,
    /// Most bytes of stored messages over all its sessions.
    pub stored_bytes: QuotaLimit,
}

impl StorageQuota {
    /// The defaults of `[storage]`, for principals without a token of their own
    /// (the local operator).
    pub fn defaults(storage: &StorageConfig) -> StorageQuota {
        StorageQuota {
            sessions: QuotaLimit {
                limit: storage.max_sessions,
                key: "storage.max_sessions".into(),
            },
            stored_bytes: QuotaLimit {
                limit: storage.max_stored_mb.saturating_mul(MB),
                key: "storage.max_stored_mb".into(),
            },
        }
    }

    /// The limits of `token`: its own keys where set, else the defaults.
    pub fn of_token(token: &TokenConfig, storage: &StorageConfig) -> StorageQuota {
        let mut quota = StorageQuota::defaults(storage);
        if let Some(max) = token.max_sessions {
            quota.sessions = QuotaLimit {
                limit: max,
                key: format!("tokens[{}].max_sessions", token.name).into(),
            };
        }
        if let Some(mb) = token.max_stored_mb {
            quota.stored_bytes = QuotaLimit {
                limit: mb.saturating_mul(MB),
                key: format!("tokens[{}].max_stored_mb", token.name).into(),
            };
        }
        quota
    }

    /// No limits (test callers).
    pub fn unlimited() -> StorageQuota {
        let none = QuotaLimit {
            limit: 0,
            key: "none".into(),
        };
        StorageQuota {
            sessions: none.clone(),
            stored_bytes: none,
        }
    }
}

/// What a principal has stored.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct StoredUsage {
    /// Its chat sessions.
    pub sessions: u64,
    /// The bytes of their stored messages.
    pub bytes: u64,
}

/// A turn refused because its principal is at a limit.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct QuotaExceeded {
    /// Whose limit.
    pub principal: String,
    /// Which limit: sessions, or stored bytes.
    pub what: QuotaKind,
    /// The limit and its key.
    pub limit: QuotaLimit,
    /// What is stored now.
    pub used: u64,
}

/// Which storage limit a principal reached.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum QuotaKind {
    /// `max_sessions`: a new session would be one too many.
    Sessions,
    /// `max_stored_mb`: its sessions already hold that much.
    StoredBytes,
}

impl std::fmt::Display for QuotaExceeded {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let (principal, key) = (&self.principal, &self.limit.key);
        match self.what {
            QuotaKind::Sessions => write!(
                f,
                "{principal:?} has {} stored chat sessions, the limit of {key} ({}): delete one \
                 (DELETE /api/sessions/{{id}}) before starting another, or ask the operator to raise {key}",
                self.used, self.limit.limit
            ),
            QuotaKind::StoredBytes => write!(
                f,
                "{principal:?} has {:.1} MB of stored chat messages, the limit of {key} ({} MB): delete \
                 sessions (DELETE /api/sessions/{{id}}) or ask the operator to raise {key}",
                self.used as f64 / MB as f64,
                self.limit.limit / MB
            ),
        }
    }
}

impl std::error::Error for QuotaExceeded {}

impl StorageQuota {
    /// Whether `principal`, with `usage` stored, may run a turn; `new_session`
    /// when the turn would create one.
    pub fn admit(&self, principal: &str, usage: StoredUsage, new_session: bool) -> Result<(), QuotaExceeded> {
        let refuse = |what, limit: &QuotaLimit, used| QuotaExceeded {
            principal: principal.to_string(),
            what,
            limit: limit.clone(),
            used,
        };
        if new_session && self.sessions.reached(usage.sessions) {
            return Err(refuse(QuotaKind::Sessions, &self.sessions, usage.sessions));
        }
        if self.stored_bytes.reached(usage.bytes) {
            return Err(refuse(QuotaKind::StoredBytes, &self.stored_bytes, usage.bytes));
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_token_overrides_the_defaults_and_refusals_name_the_key() {
        let storage = StorageConfig {
            max_sessions: 5,
            max_stored_mb: 1,
            ..StorageConfig::default()
        };
        let token = TokenConfig {
            name: "bob".into(),
            max_sessions: Some(2),
            ..TokenConfig::default()
        };
        let quota = StorageQuota::of_token(&token, &storage);
        let two = StoredUsage {
            sessions: 2,
            bytes: 10,
        };
        // Continuing an existing session is not a new one.
        assert!(quota.admit("bob", two, false).is_ok());
        let refused = quota.admit("bob", two, true).unwrap_err();
        assert_eq!(refused.what, QuotaKind::Sessions);
        assert!(
            refused.to_string().contains("tokens[bob].max_sessions (2)"),
            "{refused}"
        );
        let full = StoredUsage {
            sessions: 1,
            bytes: MB,
        };
        let refused = quota.admit("bob", full, false).unwrap_err();
        assert_eq!(refused.what, QuotaKind::StoredBytes);
        assert!(
            refused.to_string().contains("storage.max_stored_mb (1 MB)"),
            "{refused}"
        );
        // 0 is no limit.
        let open = StorageQuota::defaults(&StorageConfig {
            max_sessions: 0,
            max_stored_mb: 0,
            ..StorageConfig::default()
        });
        let huge = StoredUsage {
            sessions: u64::MAX,
            bytes: u64::MAX,
        };
        assert!(open.admit("local", huge, true).is_ok());
    }
}
