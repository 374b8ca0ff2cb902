//! The MCP wire format both sides of the hub speak: its own MCP server
//! (`surfaces::mcp`) and its client of external MCP servers (`mcp_client`), so
//! neither imports the other. [`method`] (the method names), [`jsonrpc`]
//! (JSON-RPC 2.0 framing and error codes), [`lines`] (newline-delimited messages
//! for stdio) and [`versions`] (the protocol revisions).

pub(crate) mod jsonrpc;
pub(crate) mod lines;
pub(crate) mod method;
pub(crate) mod versions;
