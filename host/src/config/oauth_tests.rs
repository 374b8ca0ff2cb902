//! Unit tests of `[oauth]` and `[[oauth.issuers]]`: off by default, each mistake
//! naming its key, an external issuer's claim mapping.

use super::*;

#[test]
fn oauth_is_off_by_default_and_its_mistakes_name_the_key() {
    let c = Config::parse("", Path::new("w.toml")).unwrap();
    assert!(!c.oauth.enabled() && !c.oauth.builtin);
    let token = "[[tokens]]\nname = \"alice\"\nsecret_env = \"X\"\n";
    let ok = Config::parse(
        &format!("{token}[oauth]\npublic_url = \"https://hub.example/\"\nbuiltin = true\n"),
        Path::new("w.toml"),
    )
    .unwrap();
    assert_eq!(ok.oauth.base(), "https://hub.example");
    for (text, needle) in [
        (
            "[oauth]\nbuiltin = true\n",
            "oauth.builtin needs oauth.public_url",
        ),
        ("[oauth]\npublic_url = \"hub.example\"\n", "oauth.public_url"),
        ("[oauth]\npublic_url = \"https://h/?x\"\n", "oauth.public_url"),
        (
            "[oauth]\npublic_url = \"https://h\"\nbuiltin = true\n",
            "configure at least one token",
        ),
        (
            &format!("{token}[oauth]\npublic_url = \"https://h\"\ncode_secs = 61\n"),
            "oauth.code_secs",
        ),
        (
            &format!("{token}[oauth]\npublic_url = \"https://h\"\nmax_redirect_uris = 0\n"),
            "oauth.max_redirect_uris must be greater than 0",
        ),
        (
            &format!("{token}[oauth]\npublic_url = \"https://h\"\nclient_metadata_max_cached = 0\n"),
            "oauth.client_metadata_max_cached must be greater than 0",
        ),
        (
            &format!("{token}[oauth]\npublic_url = \"https://h\"\naccess_token_secs = 0\n"),
            "oauth.access_token_secs",
        ),
        (
            "[[oauth.issuers]]\nissuer = \"https://id\"\n",
            "oauth.issuers needs oauth.public_url",
        ),
        (
            &format!(
                "{token}[oauth]\npublic_url = \"https://h\"\n[[oauth.issuers]]\nissuer = \"http://id\"\n"
            ),
            "oauth.issuers[0].issuer",
        ),
        (
            &format!(
                "{token}[oauth]\npublic_url = \"https://h\"\n[[oauth.issuers]]\nissuer = \"https://id\"\n"
            ),
            "oauth.issuers[0].principals maps no sub value",
        ),
        (
            &format!(
                "{token}[oauth]\npublic_url = \"https://h\"\n[[oauth.issuers]]\nissuer = \"https://id\"\nprincipal_claim = \"email\"\n[oauth.issuers.principals]\n\"bob@x\" = \"bob\"\n"
            ),
            "oauth.issuers[0].principals: \"bob@x\" maps to \"bob\", which is not a [[tokens]] name",
        ),
        (
            &format!(
                "{token}[oauth]\npublic_url = \"https://h\"\n[[oauth.issuers]]\nissuer = \"https://id\"\njwks_uri = \"ftp://k\"\n[oauth.issuers.principals]\nu1 = \"alice\"\n"
            ),
            "oauth.issuers[0].jwks_uri",
        ),
        (
            &format!(
                "{token}[oauth]\npublic_url = \"https://h\"\n[[oauth.issuers]]\nissuer = \"https://id\"\nrefetch_secs = 0\n[oauth.issuers.principals]\nu1 = \"alice\"\n"
            ),
            "oauth.issuers[0].refetch_secs must be greater than 0",
        ),
        (
            &format!(
                "{token}[oauth]\npublic_url = \"https://h\"\n[[oauth.issuers]]\nissuer = \"https://id\"\nscope = \"x\"\n"
            ),
            "scope",
        ),
        (
            &format!(
                "{token}[oauth]\npublic_url = \"https://h\"\n[[oauth.issuers]]\nissuer = \"https://id\"\n[oauth.issuers.principals]\nu1 = \"alice\"\n[[oauth.issuers]]\nissuer = \"https://id\"\n[oauth.issuers.principals]\nu1 = \"alice\"\n"
            ),
            "oauth.issuers[1].issuer names the same issuer",
        ),
        (
            &format!(
                "{token}[oauth]\npublic_url = \"https://h\"\n[[oauth.issuers]]\nissuer = \"http://127.0.0.1:9\"\nallow_http = true\n[oauth.issuers.principals]\nu1 = \"alice\"\n"
            ),
            "oauth.issuers[0].allow_http needs oauth.issuers[0].allow_private",
        ),
        (
            &format!(
                "{token}[oauth]\npublic_url = \"https://h\"\n[[oauth.issuers]]\nissuer = \"https://id\"\ndefault_scopes = [\"hub:tools\", \"admin\"]\n[oauth.issuers.principals]\nu1 = \"alice\"\n"
            ),
            "oauth.issuers[0].default_scopes: unknown scope \"admin\"",
        ),
        (
            &format!("{token}[oauth]\npublic_url = \"https://h\"\nclient_metadata_http = true\n"),
            "oauth.client_metadata_http needs oauth.client_metadata_private",
        ),
    ] {
        let err = Config::parse(text, Path::new("w.toml")).unwrap_err().to_string();
        assert!(err.contains(needle), "{text}: {err}");
    }
}

#[test]
fn an_external_issuer_maps_a_claim_to_token_names() {
    let text = "[[tokens]]\nname = \"alice\"\nsecret_env = \"X\"\n[oauth]\npublic_url = \"https://h\"\n\
        [[oauth.issuers]]\nissuer = \"http://127.0.0.1:9\"\nallow_private = true\nallow_http = true\nprincipal_claim = \"email\"\n\
        [oauth.issuers.principals]\n\"alice@example.com\" = \"alice\"\n";
    let c = Config::parse(text, Path::new("w.toml")).unwrap();
    let i = &c.oauth.issuers[0];
    assert_eq!(i.principals["alice@example.com"], "alice");
    assert_eq!((i.skew_secs, i.refetch_secs, i.jwks_cache_secs), (60, 60, 3600));
    assert!(i.jwks_uri.is_empty() && i.audience.is_empty());
    assert!(i.allow_private && i.allow_http);
    assert_eq!(i.default_scopes, ["hub:tools", "chat"]);
}
