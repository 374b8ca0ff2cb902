//! Outbound HTTP for plugins: the only network a plugin gets is wasi:http, and every
//! request passes [`NetHooks::send_request`], which
//!
//! 1. denies any host (and port) the plugin's manifest does not grant, before any
//!    DNS or socket work (`HTTP request denied`);
//! 2. resolves the host itself and drops private, loopback, link-local,
//!    unique-local, ... addresses unless the grant is that IP literal
//!    (`destination IP prohibited`);
//! 3. adds the headers of the plugin's `[secrets.NAME]` whose `inject` host is
//!    the request's host and port (`inject`), replacing any the guest set;
//! 4. connects to an address it checked, so a second DNS answer cannot rebind the
//!    request to an internal address (wasi-http's `default_send_request` would
//!    resolve again), and clamps every timeout to the call's deadline.
//!
//! A plugin that imports wasi:http without a grant is linked and loads; each of its
//! requests is denied with `HTTP request denied` and a log line naming the host.
//! Raw sockets are never granted (see `sandbox.rs`).
//!
//! - `policy`: the decisions (grants, public addresses), no I/O;
//! - `inject`: the secrets' headers for one request;
//! - `hooks`: the wasi:http send hook that applies them and makes the request
//!   through [`crate::http_client`].

mod hooks;
mod inject;
mod policy;

pub(super) use hooks::NetHooks;
pub(super) use policy::NetPolicy;
