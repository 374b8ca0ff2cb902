//! What the hub knows of one OAuth client, whether it registered (`clients`) or
//! is named by its metadata document (`cimd`): its id, the name it claims and its
//! redirect URIs, and the bounds on what a client may claim.

use serde::{Deserialize, Serialize};

/// A client: stored and answered as registered, or read from its metadata document.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub(crate) struct ClientInfo {
    pub client_id: String,
    /// What the consent page calls it (the client's own claim).
    #[serde(default)]
    pub client_name: String,
    pub redirect_uris: Vec<String>,
    pub client_id_issued_at: u64,
}

/// What one client may register (`oauth.max_redirect_uris`,
/// `oauth.max_redirect_uri_bytes`, `oauth.max_client_name_chars`).
#[derive(Debug, Clone, Copy)]
pub(crate) struct Bounds {
    pub redirect_uris: usize,
    pub uri_bytes: usize,
    pub name_chars: usize,
}

impl Bounds {
    pub(crate) fn from_config(c: &crate::config::OAuthConfig) -> Bounds {
        Bounds {
            redirect_uris: c.max_redirect_uris,
            uri_bytes: c.max_redirect_uri_bytes,
            name_chars: c.max_client_name_chars,
        }
    }
}
