//! The REST API of the hub over HTTP on loopback with the real example plugins
//! (`dist/plugins/`): the four meta-tools, status codes, validation errors a model
//! can act on, bearer tokens and allowlists, plugins, the audit log (redacted),
//! metrics, health, and a client that leaves mid-call.

use crate::support::hub::{Server, plugins, serve};
use http::Method;
use serde_json::{Value, json};
use std::time::{Duration, Instant};
use wasmhub::config::TokenConfig;

fn tools(list: &Value, key: &str) -> Vec<String> {
    list[key]
        .as_array()
        .unwrap()
        .iter()
        .map(|o| o["tool"].as_str().unwrap().to_string())
        .collect()
}

async fn example_hub() -> (crate::support::runtime::Scratch, Server) {
    let dir = plugins(
        &[("adversary", "a"), ("badschema", "broken")],
        &["text", "calc", "json"],
    );
    let server = serve(&dir, |_| {}).await;
    (dir, server)
}

#[tokio::test]
async fn list_search_and_schema_over_rest() {
    let (_dir, s) = example_hub().await;
    let (status, all) = s.post("/api/hub/list", &json!({})).await;
    assert_eq!(status, 200, "{all}");
    let names = tools(&all, "operations");
    for t in ["text.slugify", "calc.eval", "a.echo"] {
        assert!(names.contains(&t.to_string()), "{t} not in {names:?}");
    }
    let slugify = all["operations"]
        .as_array()
        .unwrap()
        .iter()
        .find(|o| o["tool"] == "text.slugify")
        .unwrap();
    assert!(slugify["description"].as_str().unwrap().len() > 10);
    let (_, text_only) = s.post("/api/hub/list", &json!({"namespace": "text"})).await;
    assert!(
        tools(&text_only, "operations")
            .iter()
            .all(|t| t.starts_with("text."))
    );

    let (status, found) = s
        .post(
            "/api/hub/search",
            &json!({"q": "make a url slug from a title", "limit": 3}),
        )
        .await;
    assert_eq!(status, 200, "{found}");
    assert_eq!(found["results"][0]["tool"], "text.slugify", "{found}");
    assert!(found["results"].as_array().unwrap().len() <= 3);
    assert!(found["results"][0]["score"].as_f64().unwrap() > 0.0);
    let (_, math) = s
        .post(
            "/api/hub/search",
            &json!({"q": "evaluate an arithmetic expression"}),
        )
        .await;
    assert_eq!(math["results"][0]["tool"], "calc.eval", "{math}");

    let (status, schema) = s.post("/api/hub/schema", &json!({"tool": "text.slugify"})).await;
    assert_eq!(status, 200, "{schema}");
    assert_eq!(schema["tool"], "text.slugify");
    assert!(
        schema["inputSchema"]["properties"]["text"].is_object(),
        "{schema}"
    );
    assert!(schema["outputSchema"].is_object(), "{schema}");
    // The dotted alias is accepted on input.
    let resp = s
        .request(
            Method::POST,
            "/api/hub/schema",
            Some(&json!({"tool": "calc.eval"})),
            None,
        )
        .await;
    assert_eq!(resp.status, 200);

    let (status, missing) = s.post("/api/hub/schema", &json!({"tool": "text.slugfy"})).await;
    assert_eq!(status, 404, "{missing}");
    assert_eq!(missing["error"]["code"], "not_found");
    assert_eq!(missing["error"]["suggestions"][0], "text.slugify", "{missing}");
}

#[tokio::test]
async fn a_batch_answers_in_order_with_actionable_errors() {
    let (_dir, s) = example_hub().await;
    let batch = json!({"calls": [
        {"tool": "text.slugify", "input": {"text": "Hello, World!"}},
        {"tool": "calc.eval", "input": {"expression": "2*(3+4)"}},
        {"tool": "text.slugify", "input": {}},
        {"tool": "text.slugify", "input": {"text": 5, "colour": "red"}},
        {"tool": "text.slugifyy", "input": {"text": "x"}},
        {"tool": "a.panic"},
        {"tool": "calc.eval", "input": {"expression": "2*("}}
    ]});
    let (status, out) = s.post("/api/hub/call", &batch).await;
    assert_eq!(status, 200, "{out}");
    let r = out["results"].as_array().unwrap();
    assert_eq!(r.len(), 7);
    assert_eq!(
        (r[0]["ok"].clone(), r[0]["result"]["slug"].clone()),
        (json!(true), json!("hello-world")),
        "{}",
        r[0]
    );
    assert_eq!(r[1]["ok"], true, "{}", r[1]);
    assert_eq!(r[1]["result"]["decimal"], "14", "{}", r[1]);
    // Missing property: a violation with its pointer, in a form a model can fix.
    assert_eq!(r[2]["error"]["code"], "invalid_input");
    assert_eq!(
        r[2]["error"]["violations"],
        json!([{"path": "/text", "message": "missing required property"}]),
        "{}",
        r[2]
    );
    // Every violation at once: a wrong type and an unknown property.
    let violations = r[3]["error"]["violations"].as_array().unwrap();
    assert!(
        violations
            .iter()
            .any(|v| v["path"] == "/text" && v["message"] == "expected string, got integer 5"),
        "{}",
        r[3]
    );
    let stray = violations.iter().find(|v| v["path"] == "/colour");
    assert!(
        r[3]["error"]["message"]
            .as_str()
            .unwrap()
            .contains("/text: expected string"),
        "{}",
        r[3]
    );
    if let Some(stray) = stray {
        assert!(
            stray["message"].as_str().unwrap().contains("allowed properties"),
            "{stray}"
        );
    }
    assert_eq!(r[4]["error"]["code"], "not_found");
    assert!(
        r[4]["error"]["message"]
            .as_str()
            .unwrap()
            .contains("did you mean text.slugify"),
        "{}",
        r[4]
    );
    assert_eq!(r[5]["error"]["code"], "trap");
    // The plugin's own error for input that passed the schema.
    assert_eq!(r[6]["error"]["code"], "invalid_input", "{}", r[6]);
    assert!(
        r[6]["error"]["message"]
            .as_str()
            .unwrap()
            .starts_with("calc.eval: "),
        "{}",
        r[6]
    );
}

#[tokio::test]
async fn meta_tool_errors_are_4xx_json() {
    let (_dir, s) = example_hub().await;
    let (status, bad) = s.post("/api/hub/search", &json!({"query": "slug"})).await;
    assert_eq!(status, 400, "{bad}");
    assert_eq!(bad["error"]["code"], "invalid_input");
    assert_eq!(bad["error"]["violations"][0]["path"], "/query", "{bad}");
    assert!(
        bad["error"]["violations"][0]["message"]
            .as_str()
            .unwrap()
            .contains("allowed properties: limit, namespace, q")
    );
    let (status, bad) = s.post("/api/hub/call", &json!({"calls": []})).await;
    assert_eq!(status, 400, "{bad}");
    let many: Vec<Value> = (0..40).map(|_| json!({"tool": "a.noop"})).collect();
    let (status, bad) = s.post("/api/hub/call", &json!({ "calls": many })).await;
    assert_eq!(status, 400, "{bad}");
    assert_eq!(bad["error"]["code"], "call_limit");
    let resp =
        crate::support::client::send(s.addr, Method::POST, "/api/hub/call", Some("{nope".into()), &[]).await;
    assert_eq!(resp.status, 400);
    assert_eq!(resp.json().await["error"]["code"], "invalid_json");
    let resp = s.request(Method::GET, "/api/hub/call", None, None).await;
    assert_eq!(resp.status, 405);
    // An empty body is a meta-tool without arguments.
    let resp = crate::support::client::send(s.addr, Method::POST, "/api/hub/list", None, &[]).await;
    assert_eq!(resp.status, 200);
}

#[tokio::test]
async fn tokens_and_allowlists_decide_what_each_caller_sees_and_calls() {
    let dir = plugins(&[], &["text", "calc"]);
    std::fs::write(dir.path("ci.secret"), "ci-secret-123\n").unwrap();
    std::fs::write(dir.path("ops.secret"), "ops-secret-456").unwrap();
    let token = |name: &str, allow: &[&str]| TokenConfig {
        name: name.into(),
        secret_env: None,
        secret_file: Some(dir.path(&format!("{name}.secret"))),
        allow: allow.iter().map(|a| a.to_string()).collect(),
        ..TokenConfig::default()
    };
    let (ci, mut ops) = (token("ci", &["text.*"]), token("ops", &["*"]));
    ops.operator = true;
    let s = serve(&dir, |c| c.tokens = vec![ci, ops]).await;
    let list = json!({});
    let resp = s.request(Method::POST, "/api/hub/list", Some(&list), None).await;
    assert_eq!(resp.status, 401);
    assert_eq!(resp.header("www-authenticate"), Some("Bearer realm=\"wasmhub\""));
    let resp = s
        .request(Method::POST, "/api/hub/list", Some(&list), Some("wrong"))
        .await;
    assert_eq!(resp.status, 401);
    assert_eq!(
        s.request(Method::GET, "/api/plugins", None, None).await.status,
        401
    );
    // The model surfaces are behind the same tokens (no provider is configured here,
    // so an authorized request gets past auth to a 503 naming the missing provider).
    let chat = json!({"model": "m", "messages": [{"role": "user", "content": "hi"}]});
    for path in ["/v1/chat/completions", "/api/ui/chat/completions"] {
        assert_eq!(
            s.request(Method::POST, path, Some(&chat), None).await.status,
            401,
            "{path}"
        );
        assert_eq!(
            s.request(Method::POST, path, Some(&chat), Some("wrong"))
                .await
                .status,
            401,
            "{path}"
        );
        assert_eq!(
            s.request(Method::POST, path, Some(&chat), Some("ci-secret-123"))
                .await
                .status,
            503,
            "{path}"
        );
    }
    assert_eq!(s.request(Method::GET, "/v1/models", None, None).await.status, 401);
    assert_eq!(
        s.request(Method::GET, "/v1/models", None, Some("ops-secret-456"))
            .await
            .status,
        503
    );

    let listed = s
        .request(Method::POST, "/api/hub/list", Some(&list), Some("ci-secret-123"))
        .await
        .json()
        .await;
    let names = tools(&listed, "operations");
    assert!(
        !names.is_empty() && names.iter().all(|t| t.starts_with("text.")),
        "{names:?}"
    );
    let found = s
        .request(
            Method::POST,
            "/api/hub/search",
            Some(&json!({"q": "evaluate expression"})),
            Some("ci-secret-123"),
        )
        .await;
    assert!(
        tools(&found.json().await, "results")
            .iter()
            .all(|t| t.starts_with("text."))
    );
    let resp = s
        .request(
            Method::POST,
            "/api/hub/schema",
            Some(&json!({"tool": "calc.eval"})),
            Some("ci-secret-123"),
        )
        .await;
    assert_eq!(resp.status, 403);
    let call = json!({"calls": [{"tool": "calc.eval", "input": {"expression": "1+1"}}, {"tool": "text.slugify", "input": {"text": "A B"}}]});
    let out = s
        .request(Method::POST, "/api/hub/call", Some(&call), Some("ci-secret-123"))
        .await
        .json()
        .await;
    assert_eq!(out["results"][0]["error"]["code"], "forbidden", "{out}");
    assert_eq!(out["results"][1]["result"]["slug"], "a-b", "{out}");
    let out = s
        .request(Method::POST, "/api/hub/call", Some(&call), Some("ops-secret-456"))
        .await
        .json()
        .await;
    assert_eq!(out["results"][0]["ok"], true, "{out}");

    let calls = s
        .request(Method::GET, "/api/calls?limit=10", None, Some("ops-secret-456"))
        .await
        .json()
        .await;
    let callers: Vec<&str> = calls["calls"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| c["caller"].as_str().unwrap())
        .collect();
    assert!(callers.contains(&"ci") && callers.contains(&"ops"), "{callers:?}");
    // A token that is not an operator reads only its own records.
    let own = s
        .request(Method::GET, "/api/calls?limit=10", None, Some("ci-secret-123"))
        .await
        .json()
        .await;
    let own: Vec<&str> = own["calls"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| c["caller"].as_str().unwrap())
        .collect();
    assert!(!own.is_empty() && own.iter().all(|c| *c == "ci"), "{own:?}");
}

#[tokio::test]
async fn plugins_calls_metrics_and_health() {
    let (_dir, s) = example_hub().await;
    let echo = json!({"calls": [{"tool": "a.echo", "input": {"user": "ann", "password": "hunter2", "nested": {"api_key": "k-999"}}}]});
    let (status, _) = s.post("/api/hub/call", &echo).await;
    assert_eq!(status, 200);

    let resp = s.request(Method::GET, "/api/plugins", None, None).await;
    assert_eq!(resp.status, 200);
    let plugins = resp.json().await;
    let by_name = |n: &str| {
        plugins["plugins"]
            .as_array()
            .unwrap()
            .iter()
            .find(|p| p["name"] == n)
            .cloned()
            .unwrap()
    };
    let text = by_name("text");
    assert_eq!(text["state"], "active");
    assert_eq!(text["digest"].as_str().unwrap().len(), 64);
    assert!(
        text["operations"]
            .as_array()
            .unwrap()
            .iter()
            .any(|o| o == "text.slugify")
    );
    assert!(text["capabilities"].is_array());
    let broken = by_name("broken");
    assert_eq!(broken["state"], "rejected");
    assert!(
        broken["reason"].as_str().unwrap().contains("Bad-Name"),
        "{broken}"
    );

    let resp = s.request(Method::GET, "/api/calls?limit=1", None, None).await;
    assert_eq!(resp.status, 200);
    let raw = String::from_utf8(resp.bytes().await.to_vec()).unwrap();
    let calls: Value = serde_json::from_str(&raw).unwrap();
    let record = &calls["calls"][0];
    assert_eq!(record["tool"], "a.echo", "{raw}");
    assert_eq!(record["outcome"], "ok");
    assert_eq!(record["input"]["password"], "[redacted]", "{raw}");
    assert_eq!(record["input"]["nested"]["api_key"], "[redacted]", "{raw}");
    assert_eq!(record["input"]["user"], "ann");
    assert!(!raw.contains("hunter2") && !raw.contains("k-999"), "{raw}");
    assert_eq!(
        s.request(Method::GET, "/api/calls?limit=0", None, None)
            .await
            .status,
        400
    );

    let resp = s.request(Method::GET, "/metrics", None, None).await;
    assert_eq!(resp.status, 200);
    assert!(resp.header("content-type").unwrap().starts_with("text/plain"));
    let text = String::from_utf8(resp.bytes().await.to_vec()).unwrap();
    assert!(
        text.contains("wasmhub_calls_total{tool=\"a.echo\",outcome=\"ok\"} 1"),
        "{text}"
    );
    assert!(text.contains("wasmhub_call_duration_seconds_count{tool=\"a.echo\",outcome=\"ok\"} 1"));
    assert!(text.contains("wasmhub_plugins{state=\"rejected\"} 1"));
    assert!(text.contains("wasmhub_calls_in_flight 0"));

    let health = s.request(Method::GET, "/health", None, None).await.json().await;
    assert_eq!(health["status"], "ok");
    assert_eq!(health["plugins"]["active"], 4, "{health}");
    assert_eq!(health["plugins"]["rejected"], 1);
}

#[tokio::test]
async fn a_client_that_leaves_cancels_its_calls() {
    let dir = plugins(&[("adversary", "a"), ("adversary", "b")], &[]);
    let s = serve(&dir, |_| {}).await;
    let call = json!({"calls": [{"tool": "a.nested", "input": {"tool": "b.slow", "input": {"ms": 8_000}}}]});
    let started = Instant::now();
    let resp = s.request(Method::POST, "/api/hub/call", Some(&call), None).await;
    assert_eq!(resp.status, 200, "a slow answer commits its headers early");
    // Give up on the answer once the parent and its child both run: dropping the
    // response closes the connection.
    crate::support::wait::in_flight(&s.hub.app.hub, 2).await;
    drop(resp);
    let hub = &s.hub.app.hub;
    // Both end well before the child's 8 s, and as cancelled (had they run on, they
    // would be recorded `ok`).
    let (parent, child) = crate::support::wait::until("both calls recorded", || async move {
        let calls = hub.calls(10, &wasmhub::hub::Visible::All).unwrap();
        let outcome = |t: &str| calls.iter().find(|c| c.tool == t).map(|c| c.outcome.clone());
        outcome("a.nested").zip(outcome("b.slow"))
    })
    .await;
    assert_eq!((parent.as_str(), child.as_str()), ("cancelled", "cancelled"));
    assert!(
        started.elapsed() < Duration::from_secs(7),
        "took {:?}",
        started.elapsed()
    );
}
