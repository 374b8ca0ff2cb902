//! The authenticator's checks: tokens, allowlists, loopback, grants.

use super::*;
use crate::test_dir::TempDir;

/// The credentials of a request for `/mcp` needing `hub:tools`.
fn creds(bearer: Option<&str>, peer: SocketAddr) -> Credentials<'_> {
    Credentials {
        bearer,
        peer,
        resource: Resource::Mcp,
        needs: Scope::HubTools,
    }
}

fn token(name: &str, file: &std::path::Path, allow: &[&str]) -> TokenConfig {
    TokenConfig {
        name: name.into(),
        secret_env: None,
        secret_file: Some(file.to_owned()),
        allow: allow.iter().map(|s| s.to_string()).collect(),
        ..TokenConfig::default()
    }
}

fn secret_file(dir: &std::path::Path, name: &str, secret: &str) -> std::path::PathBuf {
    let path = dir.join(name);
    std::fs::write(&path, secret).unwrap();
    path
}

#[test]
fn patterns_match_namespaces_exact_names_and_everything() {
    let a = Allowlist::new(&["weather.*".into(), "text.slugify".into()]);
    assert!(a.allows("weather.forecast"));
    assert!(a.allows("text.slugify"));
    assert!(!a.allows("text.upper"));
    assert!(!a.allows("weatherx.forecast"));
    assert!(Allowlist::all().allows("anything.at_all"));
    assert!(!Allowlist::new(&[]).allows("text.slugify"));
    assert!(Allowlist::new(&["*.get_*".into()]).allows("kv.get_value"));
    assert!(!Allowlist::new(&["*.get_*".into()]).allows("kv.set_value"));
}

#[tokio::test]
async fn tokens_authenticate_with_their_allowlist() {
    let dir = TempDir::new("auth");
    let auth = Authenticator::from_config(
        &[
            token("ci", &secret_file(&dir, "ci", "s3cret-ci\n"), &["text.*"]),
            token("ops", &secret_file(&dir, "ops", "s3cret-ops"), &["*"]),
        ],
        &StorageConfig::default(),
    )
    .unwrap();
    let remote: SocketAddr = "10.1.2.3:5000".parse().unwrap();
    let caller = auth.authenticate(creds(Some("s3cret-ci"), remote)).await.unwrap();
    assert_eq!(caller.name(), "ci");
    assert!(caller.may_call("text.upper") && !caller.may_call("calc.eval"));
    assert_eq!(
        auth.authenticate(creds(Some("s3cret-ops"), remote))
            .await
            .unwrap()
            .name(),
        "ops"
    );
    assert_eq!(
        auth.authenticate(creds(Some("wrong"), remote)).await.unwrap_err(),
        AuthError::InvalidToken
    );
    // Loopback gets no free pass once tokens exist.
    let local: SocketAddr = "127.0.0.1:5000".parse().unwrap();
    assert_eq!(
        auth.authenticate(creds(None, local)).await.unwrap_err(),
        AuthError::MissingToken
    );
}

#[tokio::test]
async fn without_tokens_only_loopback_is_served() {
    let auth = Authenticator::from_config(&[], &StorageConfig::default()).unwrap();
    assert_eq!(
        auth.authenticate(creds(None, "127.0.0.1:1".parse().unwrap()))
            .await
            .unwrap()
            .name(),
        "local"
    );
    assert_eq!(
        auth.authenticate(creds(None, "[::1]:1".parse().unwrap()))
            .await
            .unwrap()
            .name(),
        "local"
    );
    let err = auth
        .authenticate(creds(None, "192.168.1.9:1".parse().unwrap()))
        .await
        .unwrap_err();
    assert!(err.to_string().contains("192.168.1.9"), "{err}");
    assert_eq!(err.code(), "forbidden");
}

#[test]
fn missing_secrets_are_startup_errors_naming_the_token() {
    let missing_env = TokenConfig {
        name: "bot".into(),
        secret_env: Some("WASMHUB_TEST_SURELY_UNSET_VAR".into()),
        secret_file: None,
        allow: vec![],
        ..TokenConfig::default()
    };
    let err = Authenticator::from_config(&[missing_env], &StorageConfig::default())
        .err()
        .unwrap()
        .to_string();
    assert!(
        err.contains("tokens.bot") && err.contains("WASMHUB_TEST_SURELY_UNSET_VAR"),
        "{err}"
    );
    let dir = TempDir::new("auth");
    let err = Authenticator::from_config(&[token("f", &dir.join("absent"), &[])], &StorageConfig::default())
        .err()
        .unwrap()
        .to_string();
    assert!(err.contains("tokens.f") && err.contains("absent"), "{err}");
    let err = Authenticator::from_config(
        &[token("e", &secret_file(&dir, "e", "\n"), &[])],
        &StorageConfig::default(),
    )
    .err()
    .unwrap()
    .to_string();
    assert!(err.contains("empty"), "{err}");
}

#[test]
fn principals_see_their_own_items_and_operators_everyones() {
    let bob = Caller::unchecked("bob", Allowlist::all());
    assert!(bob.may_access("bob") && !bob.may_access("alice") && !bob.may_access("local"));
    assert_eq!(bob.visible(None), Visible::Only("bob".into()));
    assert_eq!(bob.visible(Some("bob")), Visible::Only("bob".into()));
    assert_eq!(bob.visible(Some("alice")), Visible::Nothing);
    assert!(!Visible::Nothing.admits("bob"));
    let ops = Caller::local(Arc::new(StorageQuota::unlimited()));
    assert!(ops.may_access("alice") && ops.may_access("local"));
    assert_eq!(ops.visible(None), Visible::All);
    assert_eq!(ops.visible(Some("alice")), Visible::Only("alice".into()));
    assert_eq!(Visible::All.principal(), None);
}

#[tokio::test]
async fn a_tokens_storage_limits_travel_with_its_caller() {
    let dir = TempDir::new("auth");
    let mut capped = token("bob", &secret_file(&dir, "bob", "s3cret-bob"), &["*"]);
    capped.max_sessions = Some(3);
    let storage = StorageConfig::default();
    let auth = Authenticator::from_config(&[capped], &storage).unwrap();
    let bob = auth
        .authenticate(creds(Some("s3cret-bob"), "10.0.0.1:1".parse().unwrap()))
        .await
        .unwrap();
    assert_eq!(bob.quota().sessions.limit, 3);
    assert_eq!(&*bob.quota().sessions.key, "tokens[bob].max_sessions");
    assert_eq!(&*bob.quota().stored_bytes.key, "storage.max_stored_mb");
    assert_eq!(auth.local().quota().sessions.limit, storage.max_sessions);
}

#[test]
fn constant_time_eq_compares_all_bytes() {
    let a = sha256(b"a");
    let mut b = a;
    assert!(constant_time_eq(&a, &b));
    b[31] ^= 1;
    assert!(!constant_time_eq(&a, &b));
}

/// A verifier that vouches for `grant-*` tokens with the scopes after the dash.
struct Scripted;

#[async_trait::async_trait]
impl TokenVerifier for Scripted {
    async fn verify(&self, token: &str, resource: Resource) -> Option<Result<Grant, Rejection>> {
        let rest = token.strip_prefix("grant-")?;
        if rest == "expired" {
            return Some(Err(Rejection::Expired));
        }
        if resource == Resource::Api {
            return Some(Err(Rejection::WrongAudience));
        }
        let (principal, scopes) = rest.split_once(':').unwrap();
        Some(Ok(Grant {
            principal: principal.into(),
            client_id: "client-1".into(),
            scopes: Scopes::parse(&scopes.replace(',', " ")).unwrap(),
        }))
    }
}

#[tokio::test]
async fn grants_run_under_their_principals_policy_narrowed_to_their_scopes() {
    let dir = TempDir::new("auth");
    let mut ops = token("ops", &secret_file(&dir, "ops", "s3cret-ops"), &["text.*"]);
    ops.operator = true;
    let auth = Authenticator::from_config(&[ops], &StorageConfig::default()).unwrap();
    let remote: SocketAddr = "10.1.2.3:5000".parse().unwrap();
    // Before any verifier is accepted, a grant is just a wrong token.
    assert_eq!(
        auth.authenticate(creds(Some("grant-ops:hub:tools"), remote))
            .await
            .unwrap_err(),
        AuthError::InvalidToken
    );
    assert!(auth.accept(vec![Arc::new(Scripted)]));
    assert!(!auth.accept(vec![]), "verifiers are set once");
    let caller = auth
        .authenticate(creds(Some("grant-ops:hub:tools"), remote))
        .await
        .unwrap();
    assert_eq!(caller.name(), "ops");
    assert_eq!(caller.client(), Some("client-1"));
    assert!(caller.may_call("text.upper") && !caller.may_call("calc.eval"));
    assert!(!caller.is_operator(), "no operator scope, no operator rights");
    let with_operator = auth
        .authenticate(creds(Some("grant-ops:hub:tools,operator"), remote))
        .await
        .unwrap();
    assert!(with_operator.is_operator());
    let chat_only = Credentials {
        needs: Scope::HubTools,
        ..creds(Some("grant-ops:chat"), remote)
    };
    assert_eq!(
        auth.authenticate(chat_only).await.unwrap_err(),
        AuthError::InsufficientScope {
            needed: Scope::HubTools
        }
    );
    assert_eq!(
        auth.authenticate(creds(Some("grant-ghost:hub:tools"), remote))
            .await
            .unwrap_err(),
        AuthError::Rejected(Rejection::UnknownPrincipal)
    );
    assert_eq!(
        auth.authenticate(creds(Some("grant-expired"), remote))
            .await
            .unwrap_err(),
        AuthError::Rejected(Rejection::Expired)
    );
    let api = Credentials {
        resource: Resource::Api,
        ..creds(Some("grant-ops:hub:tools"), remote)
    };
    assert_eq!(
        auth.authenticate(api).await.unwrap_err(),
        AuthError::Rejected(Rejection::WrongAudience)
    );
    // Configured tokens keep working beside grants, with every scope.
    let static_token = auth
        .authenticate(creds(Some("s3cret-ops"), remote))
        .await
        .unwrap();
    assert!(static_token.is_operator() && static_token.client().is_none());
}
