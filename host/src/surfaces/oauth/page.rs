//! The sign-in and consent page of the built-in authorization server, rendered on
//! the server as one self-contained HTML document (no script, no CDN): which client
//! asks, where it will send the person back, which scopes, and a form to sign in
//! with a one-time sign-in code or a hub token and approve or deny. Every value
//! from the request or the client's registration is HTML-escaped. The headers
//! forbid framing (`frame-ancestors 'none'`, clickjacking) and let the form post
//! only here and redirect only to the client's registered redirect URI.

use super::form::Params;
use crate::hub::{Scope, Scopes};
use crate::surfaces::body::Body;
use crate::surfaces::respond::Resp;
use http::{HeaderValue, Response, StatusCode, header};

/// The cookie holding the CSRF token the form must repeat (double submit).
pub(crate) const CSRF_COOKIE: &str = "wasmhub_oauth_csrf";

const STYLE: &str = "body{font:16px/1.5 system-ui,sans-serif;max-width:34rem;margin:3rem auto;padding:0 1rem;color:#1b1b1b}\
h1{font-size:1.4rem}code{background:#f2f2f2;padding:0 .25rem}.err{color:#a30000;font-weight:600}\
input[type=password]{width:100%;padding:.5rem;font:inherit;box-sizing:border-box}\
button{font:inherit;padding:.5rem 1.2rem;margin:1rem .5rem 0 0}li{margin:.25rem 0}";

/// What the consent page shows.
pub(crate) struct Consent<'a> {
    /// The client's name (its own claim) and id.
    pub client_name: &'a str,
    pub client_id: &'a str,
    /// The host the person is sent back to.
    pub redirect_host: &'a str,
    /// The scopes asked for.
    pub scopes: Scopes,
    /// The authorization request's parameters, repeated by the form.
    pub params: &'a Params,
    /// The CSRF token.
    pub csrf: &'a str,
    /// What went wrong with the last attempt (a wrong sign-in code).
    pub error: Option<&'a str>,
    /// The `form-action` sources: this hub and the redirect URI's origin.
    pub form_action: &'a str,
    /// Whether the cookie must be `Secure` (the hub is served over https).
    pub secure: bool,
}

/// `text` escaped for HTML text and attribute values.
pub(crate) fn escape(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    for c in text.chars() {
        match c {
            '&' => out.push_str("&amp;"),
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '"' => out.push_str("&quot;"),
            '\'' => out.push_str("&#39;"),
            c => out.push(c),
        }
    }
    out
}

fn describe(scope: Scope) -> &'static str {
    match scope {
        Scope::HubTools => "list, search and call this hub's tools",
        Scope::Chat => "use the hub's chat and model routes",
        Scope::Operator => "operator rights (only if your principal has them)",
    }
}

/// The consent page.
pub(crate) fn consent(c: &Consent<'_>) -> Resp {
    let mut hidden = String::new();
    for (k, v) in c.params.iter() {
        if matches!(k, "csrf" | "credential" | "decision") {
            continue;
        }
        hidden.push_str(&format!(
            "<input type=\"hidden\" name=\"{}\" value=\"{}\">",
            escape(k),
            escape(v)
        ));
    }
    let scopes: String = Scope::ALL
        .into_iter()
        .filter(|s| c.scopes.has(*s))
        .map(|s| format!("<li><code>{}</code>: {}</li>", s.as_str(), describe(s)))
        .collect();
    let name = if c.client_name.is_empty() {
        "An unnamed client".to_string()
    } else {
        escape(c.client_name)
    };
    let error = c
        .error
        .map(|e| format!("<p class=\"err\" role=\"alert\">{}</p>", escape(e)))
        .unwrap_or_default();
    let body = format!(
        "<h1>Sign in to wasmhub</h1>\
<p><strong id=\"client\">{name}</strong> (client <code>{id}</code>) asks to act as you on this hub.</p>\
<p>When you approve, you are sent back to <strong id=\"redirect-host\">{host}</strong>.</p>\
<p>It asks to:</p><ul id=\"scopes\">{scopes}</ul>{error}\
<form method=\"post\" action=\"/oauth/authorize\">{hidden}\
<input type=\"hidden\" name=\"csrf\" value=\"{csrf}\">\
<label for=\"credential\">Your one-time sign-in code (from the hub's operator) or hub token</label>\
<input type=\"password\" id=\"credential\" name=\"credential\" autocomplete=\"off\" autofocus>\
<button type=\"submit\" name=\"decision\" value=\"approve\" id=\"approve\">Approve</button>\
<button type=\"submit\" name=\"decision\" value=\"deny\" id=\"deny\">Deny</button></form>",
        id = escape(c.client_id),
        host = escape(c.redirect_host),
        csrf = escape(c.csrf),
    );
    let status = if c.error.is_some() {
        StatusCode::UNAUTHORIZED
    } else {
        StatusCode::OK
    };
    let mut resp = document(status, "Sign in", &body, c.form_action);
    let cookie = format!(
        "{CSRF_COOKIE}={}; Path=/oauth; HttpOnly; SameSite=Strict{}",
        c.csrf,
        if c.secure { "; Secure" } else { "" }
    );
    if let Ok(v) = HeaderValue::try_from(cookie) {
        resp.headers_mut().insert(header::SET_COOKIE, v);
    }
    resp
}

/// A page saying why the request cannot go on; never a redirect (a request whose
/// client or redirect URI is not verified must not send the person anywhere).
pub(crate) fn error(status: StatusCode, message: &str) -> Resp {
    let body = format!(
        "<h1>This sign-in cannot continue</h1><p class=\"err\" id=\"error\">{}</p>\
<p>Go back to the application and try again, or ask the hub's operator.</p>",
        escape(message)
    );
    document(status, "Sign-in error", &body, "'none'")
}

fn document(status: StatusCode, title: &str, body: &str, form_action: &str) -> Resp {
    let html = format!(
        "<!doctype html><html lang=\"en\"><head><meta charset=\"utf-8\">\
<meta name=\"viewport\" content=\"width=device-width\"><title>{title} · wasmhub</title>\
<style>{STYLE}</style></head><body>{body}</body></html>"
    );
    let mut resp = Response::new(Body::full(html));
    *resp.status_mut() = status;
    let h = resp.headers_mut();
    h.insert(
        header::CONTENT_TYPE,
        HeaderValue::from_static("text/html; charset=utf-8"),
    );
    h.insert(header::CACHE_CONTROL, HeaderValue::from_static("no-store"));
    h.insert("x-content-type-options", HeaderValue::from_static("nosniff"));
    h.insert("x-frame-options", HeaderValue::from_static("DENY"));
    // Not `no-referrer`: with it Chromium sends `Origin: null` on the form's POST,
    // which the DNS-rebinding guard refuses. `same-origin` still sends nothing to
    // the client the person is redirected to.
    h.insert(header::REFERRER_POLICY, HeaderValue::from_static("same-origin"));
    let csp = format!(
        "default-src 'none'; style-src 'unsafe-inline'; base-uri 'none'; frame-ancestors 'none'; form-action {form_action}"
    );
    if let Ok(v) = HeaderValue::try_from(csp) {
        h.insert(header::CONTENT_SECURITY_POLICY, v);
    }
    resp
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn client_text_is_escaped_and_framing_forbidden() {
        let params = Params::parse("client_id=c1&state=%22%3E%3Cscript%3E").unwrap();
        let page = consent(&Consent {
            client_name: "<img src=x onerror=alert(1)>",
            client_id: "c1",
            redirect_host: "127.0.0.1",
            scopes: Scopes::parse("hub:tools").unwrap(),
            params: &params,
            csrf: "tok",
            error: None,
            form_action: "'self' http://127.0.0.1:9",
            secure: true,
        });
        let csp = page.headers()[header::CONTENT_SECURITY_POLICY].to_str().unwrap();
        assert!(
            csp.contains("frame-ancestors 'none'") && csp.contains("form-action 'self' http://127.0.0.1:9")
        );
        let cookie = page.headers()[header::SET_COOKIE].to_str().unwrap();
        assert!(
            cookie.contains("HttpOnly") && cookie.contains("SameSite=Strict") && cookie.ends_with("Secure")
        );
        assert_eq!(
            escape("<a href=\"x\">'&"),
            "&lt;a href=&quot;x&quot;&gt;&#39;&amp;"
        );
        let e = error(StatusCode::BAD_REQUEST, "<b>");
        assert!(e.headers().get(header::LOCATION).is_none());
    }
}
