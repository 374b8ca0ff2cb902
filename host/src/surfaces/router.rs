//! Maps each request to its surface by method and path, and decides which routes
//! need a caller: the route table of the whole HTTP API is [`classify`], and every
//! route it marks [`Guarded`] is authenticated here, once, before its handler runs
//! (`/mcp` authenticates itself, to answer in JSON-RPC; so does the Anthropic
//! surface, to read `x-api-key` and answer in Anthropic's error shape).

use super::App;
use super::agents;
use super::anthropic;
use super::approvals;
use super::auth;
use super::chat;
use super::console;
use super::cors;
use super::guard;
use super::mcp;
use super::metrics;
use super::oauth;
use super::openai_proxy;
use super::respond::{self, Resp};
use super::rest;
use super::secrets;
use crate::hub::{Caller, MetaToolKind, Scope};
use crate::timing::{self, Stage};
use http::{Method, Request};
use hyper::body::Incoming;
use std::net::SocketAddr;
use std::sync::Arc;

/// Where a request goes.
enum Route<'p> {
    Health,
    Metrics,
    Mcp,
    /// `OPTIONS /mcp`: anyone the guard lets in (CORS preflight).
    McpPreflight,
    /// `POST /v1/messages`: the Anthropic surface (authenticates itself).
    AnthropicMessages,
    ChatPage,
    /// `/.well-known/*` and `/oauth/*`: discovery and the authorization server.
    OAuth,
    /// A route that serves only authenticated callers.
    Guarded(Guarded<'p>),
    /// A known path with another method: 405 naming the allowed ones.
    MethodNotAllowed(&'static str),
    NotFound,
}

/// The routes behind the bearer-token check.
enum Guarded<'p> {
    MetaTool(MetaToolKind),
    Plugins,
    McpServers,
    SetSecret(&'p str, &'p str),
    RemoveSecret(&'p str, &'p str),
    Calls,
    Accounting,
    Approvals,
    DecideApproval(&'p str),
    Console,
    ChatCompletions,
    Models,
    /// `POST /v1/agents/{name}`.
    Agent(&'p str),
    /// `GET /api/agents`.
    Agents,
    UiChatCompletions,
    Chat,
    ResumeChat(&'p str),
    StopChat(&'p str),
    Sessions,
    Session(&'p str),
    DeleteSession(&'p str),
    HandOver(&'p str),
    SignInCode,
}

impl Guarded<'_> {
    /// The OAuth scope a grant needs for the route (configured tokens have every
    /// scope): the meta-tools and what they record, or the chat and model routes.
    fn scope(&self) -> Scope {
        use Guarded as G;
        match self {
            G::MetaTool(_)
            | G::Plugins
            | G::McpServers
            | G::Calls
            | G::Accounting
            | G::Approvals
            | G::DecideApproval(_) => Scope::HubTools,
            G::Console => Scope::HubTools,
            G::SignInCode | G::SetSecret(..) | G::RemoveSecret(..) => Scope::Operator,
            G::ChatCompletions
            | G::Models
            | G::Agent(_)
            | G::Agents
            | G::UiChatCompletions
            | G::Chat
            | G::ResumeChat(_)
            | G::StopChat(_)
            | G::Sessions
            | G::Session(_)
            | G::DeleteSession(_)
            | G::HandOver(_) => Scope::Chat,
        }
    }
}

impl Route<'_> {
    /// The matched route as a path template (`http.route`, and the name of the
    /// request's span: `POST /api/chat/{id}/stop`); `None` when nothing matched.
    fn template(&self) -> Option<&'static str> {
        use Guarded as G;
        let guarded = match self {
            Route::Health => return Some("/health"),
            Route::Metrics => return Some("/metrics"),
            Route::Mcp | Route::McpPreflight => return Some("/mcp"),
            Route::AnthropicMessages => return Some("/v1/messages"),
            Route::ChatPage => return Some("/"),
            Route::OAuth | Route::MethodNotAllowed(_) | Route::NotFound => return None,
            Route::Guarded(g) => g,
        };
        Some(match guarded {
            G::MetaTool(_) => "/api/hub/{meta_tool}",
            G::Plugins => "/api/plugins",
            G::McpServers => "/api/mcp-servers",
            G::SetSecret(..) | G::RemoveSecret(..) => "/api/plugins/{plugin}/secrets/{name}",
            G::Calls => "/api/calls",
            G::Accounting => "/api/accounting",
            G::Approvals => "/api/approvals",
            G::DecideApproval(_) => "/api/approvals/{id}",
            G::Console => "/console",
            G::ChatCompletions => "/v1/chat/completions",
            G::Models => "/v1/models",
            G::Agent(_) => "/v1/agents/{name}",
            G::Agents => "/api/agents",
            G::UiChatCompletions => "/api/ui/chat/completions",
            G::Chat => "/api/chat",
            G::ResumeChat(_) => "/api/chat/{id}/stream",
            G::StopChat(_) => "/api/chat/{id}/stop",
            G::Sessions => "/api/sessions",
            G::Session(_) | G::DeleteSession(_) => "/api/sessions/{id}",
            G::HandOver(_) => "/api/sessions/{id}/handover",
            G::SignInCode => "/api/oauth/signin-codes",
        })
    }
}

/// The route table.
fn classify<'p>(method: &Method, segments: &[&'p str]) -> Route<'p> {
    use Guarded as G;
    let guarded = Route::Guarded;
    match (method.clone(), segments) {
        (Method::GET, ["health"]) => Route::Health,
        (_, [".well-known" | "oauth", ..]) => Route::OAuth,
        (Method::POST, ["api", "oauth", "signin-codes"]) => guarded(G::SignInCode),
        (_, ["api", "oauth", "signin-codes"]) => Route::MethodNotAllowed("POST"),
        (Method::GET, ["metrics"]) => Route::Metrics,
        // Browser clients (the Inspector's direct mode) preflight their JSON posts.
        (Method::OPTIONS, ["mcp"]) => Route::McpPreflight,
        (_, ["mcp"]) => Route::Mcp,
        (_, ["metrics"]) => Route::MethodNotAllowed("GET"),
        (Method::POST, ["api", "hub", route]) if let Some(kind) = MetaToolKind::from_route(route) => {
            guarded(G::MetaTool(kind))
        }
        (_, ["api", "hub", "list" | "search" | "schema" | "call"]) => Route::MethodNotAllowed("POST"),
        (Method::GET, ["api", "plugins"]) => guarded(G::Plugins),
        (Method::GET, ["api", "mcp-servers"]) => guarded(G::McpServers),
        (_, ["api", "plugins" | "mcp-servers"]) => Route::MethodNotAllowed("GET"),
        (Method::PUT, ["api", "plugins", plugin, "secrets", name]) => guarded(G::SetSecret(plugin, name)),
        (Method::DELETE, ["api", "plugins", plugin, "secrets", name]) => {
            guarded(G::RemoveSecret(plugin, name))
        }
        (_, ["api", "plugins", _, "secrets", _]) => Route::MethodNotAllowed("PUT, DELETE"),
        (Method::GET, ["api", "calls"]) => guarded(G::Calls),
        (_, ["api", "calls"]) => Route::MethodNotAllowed("GET"),
        (Method::GET, ["api", "accounting"]) => guarded(G::Accounting),
        (_, ["api", "accounting"]) => Route::MethodNotAllowed("GET"),
        (Method::GET, ["api", "approvals"]) => guarded(G::Approvals),
        (_, ["api", "approvals"]) => Route::MethodNotAllowed("GET"),
        (Method::POST, ["api", "approvals", id]) => guarded(G::DecideApproval(id)),
        (_, ["api", "approvals", _]) => Route::MethodNotAllowed("POST"),
        (Method::POST, ["v1", "chat", "completions"]) => guarded(G::ChatCompletions),
        (_, ["v1", "chat", "completions"]) => Route::MethodNotAllowed("POST"),
        (Method::POST, ["v1", "messages"]) => Route::AnthropicMessages,
        (_, ["v1", "messages"]) => Route::MethodNotAllowed("POST"),
        (Method::GET, ["v1", "models"]) => guarded(G::Models),
        (_, ["v1", "models"]) => Route::MethodNotAllowed("GET"),
        (Method::POST, ["v1", "agents", name]) => guarded(G::Agent(name)),
        (_, ["v1", "agents", _]) => Route::MethodNotAllowed("POST"),
        (Method::GET, ["api", "agents"]) => guarded(G::Agents),
        (_, ["api", "agents"]) => Route::MethodNotAllowed("GET"),
        (Method::POST, ["api", "ui", "chat", "completions"]) => guarded(G::UiChatCompletions),
        (_, ["api", "ui", "chat", "completions"]) => Route::MethodNotAllowed("POST"),
        (Method::GET, [""]) => Route::ChatPage,
        (Method::GET, ["console"]) => guarded(G::Console),
        (_, ["console"]) => Route::MethodNotAllowed("GET"),
        (Method::POST, ["api", "chat"]) => guarded(G::Chat),
        (_, ["api", "chat"]) => Route::MethodNotAllowed("POST"),
        (Method::GET, ["api", "chat", id, "stream"]) => guarded(G::ResumeChat(id)),
        (_, ["api", "chat", _, "stream"]) => Route::MethodNotAllowed("GET"),
        (Method::POST, ["api", "chat", id, "stop"]) => guarded(G::StopChat(id)),
        (_, ["api", "chat", _, "stop"]) => Route::MethodNotAllowed("POST"),
        (Method::GET, ["api", "sessions"]) => guarded(G::Sessions),
        (_, ["api", "sessions"]) => Route::MethodNotAllowed("GET"),
        (Method::GET, ["api", "sessions", id]) => guarded(G::Session(id)),
        (Method::DELETE, ["api", "sessions", id]) => guarded(G::DeleteSession(id)),
        (_, ["api", "sessions", _]) => Route::MethodNotAllowed("GET, DELETE"),
        (Method::POST, ["api", "sessions", id, "handover"]) => guarded(G::HandOver(id)),
        (_, ["api", "sessions", _, "handover"]) => Route::MethodNotAllowed("POST"),
        _ => Route::NotFound,
    }
}

pub(crate) async fn route(app: Arc<App>, req: Request<Incoming>, peer: SocketAddr) -> Resp {
    let started = std::time::Instant::now();
    // Probes and scrapes are not traced; every other request is a SERVER span
    // (to its response head), the current span of the work it starts.
    let path = req.uri().path().to_string();
    let segments: Vec<&str> = path.trim_start_matches('/').split('/').collect();
    let to = classify(req.method(), &segments);
    let mut span = match path.as_str() {
        "/health" | "/metrics" => crate::telemetry::Span::none(),
        path => crate::telemetry::server_span(req.method(), path, to.template(), req.headers()),
    };
    let answer = dispatch(app, req, peer, to, &path, &segments);
    let resp = crate::telemetry::within(span.context().cloned(), answer).await;
    span.set("http.response.status_code", i64::from(resp.status().as_u16()));
    timing::record(Stage::Request, started);
    resp
}

/// The answer of `to`, the route `req` (to `path`, split into `segments`) matches.
async fn dispatch(
    app: Arc<App>,
    req: Request<Incoming>,
    peer: SocketAddr,
    to: Route<'_>,
    path: &str,
    segments: &[&str],
) -> Resp {
    if let Err(resp) = guard::check_host_and_origin(&app, &req) {
        return resp;
    }
    match to {
        Route::Health => metrics::health(&app, req.uri().query()),
        Route::Metrics => metrics::metrics(&app),
        Route::Mcp => {
            let resp = mcp::http::handle(&app.mcp, &app.limits, &app.body_parser(), req, peer).await;
            cors::any_origin(resp)
        }
        Route::McpPreflight => cors::preflight("GET, POST, DELETE"),
        Route::AnthropicMessages => anthropic::messages(&app, req, peer).await,
        Route::ChatPage => chat::page::page(),
        Route::OAuth => oauth::handle(&app, req, segments).await,
        Route::Guarded(Guarded::Models) if anthropic::is_anthropic_client(req.headers()) => {
            anthropic::models(&app, &req, peer).await
        }
        Route::Guarded(to) => match auth::authorize(&app, &req, peer, to.scope()).await {
            Ok(caller) => guarded(&app, req, caller, to).await,
            Err(refused) => refused,
        },
        Route::MethodNotAllowed(allowed) => respond::method_not_allowed(allowed),
        Route::NotFound => respond::not_found(path),
    }
}

/// Runs the handler of a guarded route for an authenticated `caller`.
async fn guarded(app: &Arc<App>, req: Request<Incoming>, caller: Caller, to: Guarded<'_>) -> Resp {
    match to {
        Guarded::MetaTool(kind) => rest::meta_tool(app, req, caller, kind).await,
        Guarded::Plugins => rest::plugins(app).await,
        Guarded::McpServers => rest::mcp_servers(app),
        Guarded::SetSecret(plugin, name) => secrets::set(app, req, &caller, plugin, name).await,
        Guarded::RemoveSecret(plugin, name) => secrets::remove(app, &caller, plugin, name).await,
        Guarded::Calls => rest::calls(app, &req, &caller).await,
        Guarded::Accounting => rest::accounting(app, &req, &caller).await,
        Guarded::Approvals => approvals::list(app, &caller),
        Guarded::DecideApproval(id) => approvals::decide(app, req, &caller, id).await,
        Guarded::Console => console::page(),
        Guarded::ChatCompletions => openai_proxy::chat_completions(app, req, &caller).await,
        Guarded::Models => openai_proxy::models(app).await,
        Guarded::Agent(name) => agents::rest::run(app, req, caller, name).await,
        Guarded::Agents => agents::list(app, &caller),
        Guarded::UiChatCompletions => openai_proxy::ui_chat_completions(app, req, &caller).await,
        Guarded::Chat => chat::post_chat(app, req, caller).await,
        Guarded::ResumeChat(id) => chat::resume(app, &caller, id).await,
        Guarded::StopChat(id) => chat::stop(app, &caller, id).await,
        Guarded::Sessions => chat::list_sessions(app, &caller, req.uri().query()).await,
        Guarded::Session(id) => chat::get_session(app, &caller, id).await,
        Guarded::DeleteSession(id) => chat::delete_session(app, &caller, id).await,
        Guarded::HandOver(id) => chat::hand_over(app, req, &caller, id).await,
        Guarded::SignInCode => oauth::signin_code(app, req, &caller).await,
    }
}
