//! Maps each request to its surface by method and path. The route table of the
//! whole HTTP API is this one `match`.

use super::App;
use super::auth;
use super::chat;
use super::guard;
use super::mcp;
use super::metrics;
use super::openai_proxy;
use super::respond::{self, Resp};
use super::rest;
use crate::hub::MetaToolKind;
use http::{Method, Request};
use hyper::body::Incoming;
use std::net::SocketAddr;
use std::sync::Arc;

pub async fn route(app: Arc<App>, req: Request<Incoming>, peer: SocketAddr) -> Resp {
    if let Err(resp) = guard::check_host_and_origin(&app, &req) {
        return resp;
    }
    let path = req.uri().path().to_string();
    let segments: Vec<&str> = path.trim_start_matches('/').split('/').collect();
    match (req.method().clone(), segments.as_slice()) {
        (Method::GET, ["health"]) => metrics::health(&app),
        (Method::GET, ["metrics"]) => metrics::metrics(&app),
        (_, ["mcp"]) => {
            let max_body = app.config.server.max_body_kb as usize * 1024;
            mcp::http::handle(&app.mcp, req, peer, max_body).await
        }
        (_, ["metrics"]) => respond::method_not_allowed("GET"),
        (Method::POST, ["api", "hub", route]) if let Some(kind) = MetaToolKind::from_route(route) => {
            rest::meta_tool(&app, req, peer, kind).await
        }
        (_, ["api", "hub", "list" | "search" | "schema" | "call"]) => respond::method_not_allowed("POST"),
        (Method::GET, ["api", "plugins"]) => rest::plugins(&app, &req, peer),
        (_, ["api", "plugins"]) => respond::method_not_allowed("GET"),
        (Method::GET, ["api", "calls"]) => rest::calls(&app, &req, peer).await,
        (_, ["api", "calls"]) => respond::method_not_allowed("GET"),
        (Method::POST, ["v1", "chat", "completions"]) => match auth::authorize(&app, &req, peer) {
            Ok(_) => openai_proxy::chat_completions(&app, req).await,
            Err(resp) => resp,
        },
        (_, ["v1", "chat", "completions"]) => respond::method_not_allowed("POST"),
        (Method::GET, ["v1", "models"]) => match auth::authorize(&app, &req, peer) {
            Ok(_) => openai_proxy::models(&app).await,
            Err(resp) => resp,
        },
        (_, ["v1", "models"]) => respond::method_not_allowed("GET"),
        (Method::POST, ["api", "ui", "chat", "completions"]) => match auth::authorize(&app, &req, peer) {
            Ok(_) => openai_proxy::ui_chat_completions(&app, req).await,
            Err(resp) => resp,
        },
        (_, ["api", "ui", "chat", "completions"]) => respond::method_not_allowed("POST"),
        (Method::GET, [""]) => chat::page::page(),
        (Method::POST, ["api", "chat"]) => chat::post_chat(&app, req, peer).await,
        (_, ["api", "chat"]) => respond::method_not_allowed("POST"),
        (Method::GET, ["api", "chat", id, "stream"]) => chat::resume(&app, &req, peer, id),
        (_, ["api", "chat", _, "stream"]) => respond::method_not_allowed("GET"),
        (Method::GET, ["api", "sessions"]) => chat::list_sessions(&app, &req, peer),
        (_, ["api", "sessions"]) => respond::method_not_allowed("GET"),
        (Method::GET, ["api", "sessions", id]) => chat::get_session(&app, &req, peer, id),
        (Method::DELETE, ["api", "sessions", id]) => chat::delete_session(&app, &req, peer, id),
        (_, ["api", "sessions", _]) => respond::method_not_allowed("GET, DELETE"),
        _ => {
            let _ = peer;
            respond::not_found(&path)
        }
    }
}
