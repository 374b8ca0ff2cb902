//! Helpers shared by the end-to-end tests, one module per thing they build: the
//! test guests and scratch folders (`runtime`), the hub in-process and over HTTP
//! (`hub`), the real binary (`binary`), a scripted OpenAI upstream (`upstream`) and
//! the provider kinds' dialects over it (`dialect`),
//! the proxy and chat set-ups on top of it (`llm`, `chat`), a small HTTP client
//! (`client`), an OAuth client and person (`oauth`), a loopback server that holds requests until opened (`gate`), and
//! waits on observable events (`wait`).

pub mod binary;
pub mod chat;
pub mod client;
pub mod dialect;
pub mod gate;
pub mod hub;
pub mod llm;
pub mod oauth;
pub mod runtime;
pub mod upstream;
pub mod wait;
