//! Helpers shared by the end-to-end tests: a scripted OpenAI upstream, an
//! in-process hub, and a small HTTP client.

pub mod binary;
pub mod client;
pub mod hub;
pub mod upstream;
