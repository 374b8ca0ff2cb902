//! The MCP wire format, below the hub's own MCP server (`surfaces::mcp`) so that
//! anything else speaking MCP uses the same framing without importing a surface. [`method`] (the method names), [`jsonrpc`]
//! (JSON-RPC 2.0 framing and error codes), [`lines`] (newline-delimited messages
//! for stdio) and [`versions`] (the protocol revisions).

pub(crate) mod jsonrpc;
pub(crate) mod lines;
pub(crate) mod method;
pub(crate) mod versions;
