//! The end-to-end test binary: one module per area, all linked into one executable
//! so the host crate is linked once.

mod accounting;
mod agent_calls;
mod agent_output;
mod agent_profiles;
mod agent_surfaces;
mod anthropic_messages;
mod chat_approvals;
mod chat_crash;
mod chat_detached;
mod chat_leases;
mod chat_loop_end;
mod chat_queue;
#[cfg(feature = "postgres")]
mod chat_replicas;
mod chat_stream;
mod chat_turns;
mod console_page;
mod hub_approvals;
mod hub_binary;
mod hub_budgets;
mod hub_listings;
mod hub_loading;
mod hub_protocol;
mod hub_rest;
mod llm_failures;
mod llm_fallback;
mod llm_proxy;
mod llm_unfinished;
mod mcp_approvals;
mod mcp_binary;
mod oauth_clients;
mod oauth_flow;
mod oauth_issuers;
mod plugin_contract;
mod plugin_trust;
mod runtime_adversarial;
mod runtime_budgets;
mod runtime_cli;
mod runtime_loader;
mod runtime_network;
mod runtime_reload;
mod support;
mod surface_limits;
mod surface_requests;
mod tenants;
