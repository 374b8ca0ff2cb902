//! Routing, base URLs, kinds and API keys of the configured providers.

use super::*;
use crate::config::ProviderKind;

fn provider(name: &str, models: &[&str]) -> ProviderConfig {
    let text = format!(
        "name = {name:?}\nbase_url = \"http://127.0.0.1:9/v1/\"\nmodels = {models:?}\napi_key_env = \"WASMHUB_TEST_KEY_{name}\"\n"
    );
    crate::toml::from_str(&text).unwrap()
}

#[test]
fn globs() {
    assert!(glob_match("gpt-*", "gpt-4o"));
    assert!(glob_match("*", ""));
    assert!(glob_match("*mini", "gpt-4o-mini"));
    assert!(glob_match("g?t-*-mini", "gpt-4o-mini"));
    assert!(glob_match("a*b*c", "aXbYbZc"));
    assert!(!glob_match("gpt-*", "o3"));
    assert!(!glob_match("a*b", "aXbY"));
    assert!(is_literal("gpt-4o") && !is_literal("gpt-*"));
}

#[test]
fn routing_prefers_an_explicit_provider_then_the_first_matching_pattern() {
    let ps = Providers::new(&[
        provider("groq", &["llama-*", "qwen/*"]),
        provider("openai", &["*"]),
    ])
    .unwrap();
    let r = ps.route("openai/gpt-4o").unwrap();
    assert_eq!(
        (r.provider.config.name.as_str(), r.model.as_str()),
        ("openai", "gpt-4o")
    );
    let r = ps.route("qwen/qwen3-32b").unwrap();
    assert_eq!(
        (r.provider.config.name.as_str(), r.model.as_str()),
        ("groq", "qwen/qwen3-32b")
    );
    let r = ps.route("groq/qwen/qwen3-32b").unwrap();
    assert_eq!(r.model, "qwen/qwen3-32b");
    assert_eq!(ps.route("o3").unwrap().provider.config.name, "openai");
    assert_eq!(
        ps.all()[0].base.endpoint("/chat/completions"),
        "/v1/chat/completions"
    );

    let only = Providers::new(&[provider("local", &["llama*"])]).unwrap();
    let err = only.route("gpt-4o").unwrap_err();
    assert_eq!(
        err,
        RouteError::UnknownModel {
            model: "gpt-4o".into(),
            providers: vec!["local".into()]
        }
    );
    assert!(err.to_string().contains("local"));
    assert_eq!(
        Providers::new(&[]).unwrap().route("x").unwrap_err(),
        RouteError::NoProviders
    );
    assert!(RouteError::NoProviders.to_string().contains("OPENAI_API_KEY"));
}

#[test]
fn base_urls() {
    let b = BaseUrl::parse("https://api.openai.com/v1").unwrap();
    assert_eq!(
        (b.https, b.host.as_str(), b.port, b.path.as_str()),
        (true, "api.openai.com", 443, "/v1")
    );
    let b = BaseUrl::parse("http://[::1]:11434/").unwrap();
    assert_eq!(
        (b.host.as_str(), b.port, b.authority.as_str(), b.path.as_str()),
        ("::1", 11434, "[::1]:11434", "")
    );
    assert!(BaseUrl::parse("ftp://x").is_err());
}

#[test]
fn an_ollama_base_url_is_the_server_root_and_a_kind_is_checked() {
    for url in [
        "http://127.0.0.1:11434",
        "http://127.0.0.1:11434/",
        "http://127.0.0.1:11434/v1",
        "http://127.0.0.1:11434/v1/",
        "http://127.0.0.1:11434/api",
    ] {
        let text = format!("name = \"o\"\nkind = \"ollama\"\nbase_url = {url:?}\n");
        let ps = Providers::new(&[crate::toml::from_str(&text).unwrap()]).unwrap();
        let p = &ps.all()[0];
        assert_eq!(
            (p.kind, p.base.endpoint("/api/chat")),
            (ProviderKind::Ollama, "/api/chat".into()),
            "{url}"
        );
    }
    let text = "name = \"o\"\nbase_url = \"http://127.0.0.1:11434/v1\"\n";
    let ps = Providers::new(&[crate::toml::from_str(text).unwrap()]).unwrap();
    assert_eq!(ps.all()[0].base.path, "/v1", "an openai kind keeps its path");
    let text = "name = \"g\"\nkind = \"palm\"\nbase_url = \"http://x\"\n";
    let err = Providers::new(&[crate::toml::from_str(text).unwrap()]).unwrap_err();
    assert!(
        err.to_string()
            .starts_with("providers.g.kind: \"palm\" is not a provider kind"),
        "{err}"
    );
}

#[test]
fn api_keys_come_from_the_environment() {
    let ps = Providers::new(&[provider("keyed", &["*"])]).unwrap();
    let p = &ps.all()[0];
    // SAFETY: this test is the only user of this variable name.
    unsafe { std::env::remove_var("WASMHUB_TEST_KEY_keyed") };
    assert!(
        p.auth_header()
            .unwrap_err()
            .to_string()
            .contains("WASMHUB_TEST_KEY_keyed")
    );
    unsafe { std::env::set_var("WASMHUB_TEST_KEY_keyed", "sk-1\n") };
    let (name, value) = p.auth_header().unwrap().unwrap();
    assert_eq!(
        (name.as_str(), value.to_str().unwrap()),
        ("authorization", "Bearer sk-1")
    );
}
