//! What the hub knows of one OAuth client, whether it registered (`clients`) or
//! is named by its metadata document (`cimd`): its id, the name it claims and its
//! redirect URIs.

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
