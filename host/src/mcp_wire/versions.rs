//! The MCP protocol revisions the hub speaks, as a server and as a client.

/// The stateless revision.
pub(crate) const STATELESS_VERSION: &str = "2026-07-28";
/// The newest handshake-era revision, offered when a client asks for one we do
/// not know, and the one the hub's client asks servers for.
pub(crate) const LATEST_HANDSHAKE_VERSION: &str = "2025-11-25";
/// Handshake-era revisions served, newest first.
pub(crate) const HANDSHAKE_VERSIONS: [&str; 4] = ["2025-11-25", "2025-06-18", "2025-03-26", "2024-11-05"];
/// Every revision served, newest first (`server/discover`'s `supportedVersions`).
pub(crate) const SUPPORTED_VERSIONS: [&str; 5] = [
    "2026-07-28",
    "2025-11-25",
    "2025-06-18",
    "2025-03-26",
    "2024-11-05",
];

/// `_meta` keys of the stateless revision.
pub(crate) const META_PROTOCOL_VERSION: &str = "io.modelcontextprotocol/protocolVersion";
pub(crate) const META_CLIENT_CAPABILITIES: &str = "io.modelcontextprotocol/clientCapabilities";
pub(crate) const META_SERVER_INFO: &str = "io.modelcontextprotocol/serverInfo";
pub(crate) const META_CLIENT_INFO: &str = "io.modelcontextprotocol/clientInfo";
