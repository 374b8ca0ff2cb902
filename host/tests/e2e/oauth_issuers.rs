//! External identity providers (`[[oauth.issuers]]`) over HTTP on loopback: a
//! scripted issuer serves its OpenID configuration and key set, the test signs
//! ES256 and EdDSA access tokens, and the hub accepts them mapped to a principal
//! (a `hub_call` over `/mcp` recorded under it, a REST call), and refuses another
//! audience, an expired or tampered token, `alg: none` and an unknown subject (403)
//! with the exact `error_description`, and a token whose scope claim lacks the
//! route's scope (403 `insufficient_scope`).

use crate::support::oauth::*;
use crate::support::upstream::{Reply, Upstream};
use http::Method;
use ring::rand::SystemRandom;
use ring::signature::{ECDSA_P256_SHA256_FIXED_SIGNING, EcdsaKeyPair, Ed25519KeyPair, KeyPair};
use serde_json::{Value, json};
use std::collections::BTreeMap;
use wasmhub::config::IssuerConfig;

/// Base64url without padding (RFC 7515 §2).
fn b64(bytes: &[u8]) -> String {
    const A: &[u8; 64] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_";
    let mut out = String::new();
    for chunk in bytes.chunks(3) {
        let n = chunk
            .iter()
            .enumerate()
            .fold(0u32, |n, (i, &b)| n | (b as u32) << (16 - 8 * i));
        for i in 0..=chunk.len() {
            out.push(A[(n >> (18 - 6 * i) & 63) as usize] as char);
        }
    }
    out
}

fn now() -> u64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_secs()
}

struct Keys {
    ec: EcdsaKeyPair,
    ed: Ed25519KeyPair,
}

impl Keys {
    fn new() -> Keys {
        let rng = SystemRandom::new();
        let ec = EcdsaKeyPair::generate_pkcs8(&ECDSA_P256_SHA256_FIXED_SIGNING, &rng).unwrap();
        let ed = Ed25519KeyPair::generate_pkcs8(&rng).unwrap();
        Keys {
            ec: EcdsaKeyPair::from_pkcs8(&ECDSA_P256_SHA256_FIXED_SIGNING, ec.as_ref(), &rng).unwrap(),
            ed: Ed25519KeyPair::from_pkcs8(ed.as_ref()).unwrap(),
        }
    }

    fn jwks(&self) -> Value {
        let p = self.ec.public_key().as_ref();
        json!({"keys": [
            {"kty": "EC", "crv": "P-256", "kid": "ec", "use": "sig", "x": b64(&p[1..33]), "y": b64(&p[33..])},
            {"kty": "OKP", "crv": "Ed25519", "kid": "ed", "x": b64(self.ed.public_key().as_ref())},
        ]})
    }

    /// A token signed with `alg` ("ES256" or "EdDSA") over `claims`.
    fn sign(&self, alg: &str, claims: &Value) -> String {
        let kid = if alg == "ES256" { "ec" } else { "ed" };
        let header = json!({"alg": alg, "kid": kid, "typ": "at+jwt"});
        let input = format!(
            "{}.{}",
            b64(header.to_string().as_bytes()),
            b64(claims.to_string().as_bytes())
        );
        let sig = match alg {
            "ES256" => self
                .ec
                .sign(&SystemRandom::new(), input.as_bytes())
                .unwrap()
                .as_ref()
                .to_vec(),
            _ => self.ed.sign(input.as_bytes()).as_ref().to_vec(),
        };
        format!("{input}.{}", b64(&sig))
    }
}

/// Claims of a token `issuer` issues to `email` for `aud`, valid for 5 minutes.
fn claims(issuer: &str, email: &str, aud: &str) -> Value {
    json!({"iss": issuer, "sub": "u-1", "email": email, "aud": aud, "azp": "e2e-client",
           "iat": now(), "exp": now() + 300})
}

async fn call_calc(addr: std::net::SocketAddr, token: &str) -> String {
    let init = mcp_initialize(addr, token).await;
    assert_eq!(
        init.status,
        200,
        "{}",
        init.header("www-authenticate").unwrap_or("")
    );
    let session = init.header("mcp-session-id").unwrap().to_string();
    let call = json!({"jsonrpc": "2.0", "id": 2, "method": "tools/call", "params": {"name": "hub_call",
        "arguments": {"calls": [{"tool": "calc.eval", "input": {"expression": "6*7"}}]}}});
    let bearer = format!("Bearer {token}");
    let headers = [
        ACCEPT,
        ("authorization", bearer.as_str()),
        ("mcp-session-id", session.as_str()),
        ("mcp-protocol-version", "2025-11-25"),
    ];
    let answer = send(addr, Method::POST, "/mcp", &call.to_string(), &headers).await;
    assert_eq!(answer.status, 200);
    String::from_utf8(answer.bytes().await.to_vec()).unwrap()
}

#[tokio::test]
async fn tokens_of_an_external_issuer_are_verified_mapped_and_refused_with_reasons() {
    let keys = Keys::new();
    let idp = Upstream::start().await;
    let issuer = format!("http://{}", idp.addr);
    idp.set_default(
        "/.well-known/openid-configuration",
        Reply::json(
            200,
            json!({"issuer": issuer, "jwks_uri": format!("{issuer}/keys")}),
        ),
    );
    idp.set_default("/keys", Reply::json(200, keys.jwks()));
    let entry = IssuerConfig {
        issuer: issuer.clone(),
        jwks_uri: String::new(),
        audience: String::new(),
        principal_claim: "email".into(),
        principals: BTreeMap::from([("alice@example.com".to_string(), "alice".to_string())]),
        skew_secs: 60,
        refetch_secs: 60,
        jwks_cache_secs: 3600,
        max_kb: 64,
        timeout_ms: 5000,
        allow_private: true,
        allow_http: true,
        default_scopes: vec!["hub:tools".into(), "chat".into()],
    };
    let (hub, _dir, _plugins) = hub(|c| {
        c.oauth.builtin = false;
        c.oauth.issuers = vec![entry];
    })
    .await;
    let addr = hub.addr;
    let prm = get(addr, "/.well-known/oauth-protected-resource/mcp")
        .await
        .json()
        .await;
    assert_eq!(prm["authorization_servers"], json!([issuer]));

    // ES256 for /mcp: a hub_call runs as alice, recorded with the token's client.
    let mcp = format!("{BASE}/mcp");
    let es = keys.sign("ES256", &claims(&issuer, "alice@example.com", &mcp));
    assert!(call_calc(addr, &es).await.contains("42"));
    let calls = send(
        addr,
        Method::GET,
        "/api/calls?limit=10",
        "",
        &[("authorization", "Bearer secret-ops")],
    )
    .await
    .json()
    .await;
    let record = calls["calls"]
        .as_array()
        .unwrap()
        .iter()
        .find(|c| c["tool"] == "calc.eval")
        .unwrap()
        .clone();
    assert_eq!(record["caller"], "alice");
    assert_eq!(record["client"], "e2e-client");

    // EdDSA for the API root: REST works under alice's allowlist.
    let ed = keys.sign("EdDSA", &claims(&issuer, "alice@example.com", BASE));
    let bearer = format!("Bearer {ed}");
    let batch = json!({"calls": [{"tool": "calc.eval", "input": {"expression": "2*3"}}]});
    let rest = send(
        addr,
        Method::POST,
        "/api/hub/call",
        &batch.to_string(),
        &[("authorization", &bearer)],
    )
    .await;
    assert_eq!(rest.status, 200);
    assert_eq!(rest.json().await["results"][0]["result"]["decimal"], "6");

    let refused = |status: u16, description: &'static str| (status, description);
    let mut expired = claims(&issuer, "alice@example.com", &mcp);
    expired["exp"] = json!(now() - 120);
    let (head, rest_of) = es.split_once('.').unwrap();
    let (_, sig) = rest_of.split_once('.').unwrap();
    let mut forged = claims(&issuer, "alice@example.com", &mcp);
    forged["email"] = json!("ops@example.com");
    let tampered = format!("{head}.{}.{sig}", b64(forged.to_string().as_bytes()));
    let none = format!(
        "{}.{}.",
        b64(json!({"alg": "none"}).to_string().as_bytes()),
        b64(claims(&issuer, "alice@example.com", &mcp).to_string().as_bytes())
    );
    for (token, (status, description)) in [
        (
            ed.clone(),
            refused(401, "the access token was issued for another resource"),
        ),
        (
            keys.sign("EdDSA", &expired),
            refused(401, "the access token expired"),
        ),
        (
            tampered,
            refused(401, "the access token's signature does not verify"),
        ),
        (
            none,
            refused(
                401,
                "the access token's algorithm is refused: this hub accepts RS256, ES256 and EdDSA",
            ),
        ),
        (
            keys.sign("ES256", &claims(&issuer, "mallory@example.com", &mcp)),
            refused(403, "the access token's subject maps to no principal of this hub"),
        ),
    ] {
        let resp = mcp_initialize(addr, &token).await;
        assert_eq!(resp.status, status, "{description}");
        assert_eq!(
            challenge(&resp),
            format!(
                "Bearer error=\"invalid_token\", error_description=\"{description}\", \
                 resource_metadata=\"https://hub.example/.well-known/oauth-protected-resource/mcp\", scope=\"hub:tools\""
            )
        );
    }
    // A token's scope claim narrows it: `chat` alone is not enough for /mcp.
    let mut chat_only = claims(&issuer, "alice@example.com", &mcp);
    chat_only["scope"] = json!("openid chat");
    let resp = mcp_initialize(addr, &keys.sign("ES256", &chat_only)).await;
    assert_eq!(resp.status, 403);
    assert_eq!(
        challenge(&resp),
        "Bearer error=\"insufficient_scope\", \
         resource_metadata=\"https://hub.example/.well-known/oauth-protected-resource/mcp\", scope=\"hub:tools\""
    );
    // Discovery and the key set were fetched once; refusals did not refetch
    // (every kid was known).
    let fetched: Vec<String> = idp.requests().iter().map(|r| r.path.clone()).collect();
    assert_eq!(fetched, ["/.well-known/openid-configuration", "/keys"]);
}
