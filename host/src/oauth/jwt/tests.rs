//! Tokens signed in the test with fresh Ed25519 and P-256 keys: accepted, and
//! refused for each reason (tampered, expired, early, another audience or
//! issuer, an unknown key, `alg: none`, HS256, garbage).

use super::*;
use crate::base64::encode_url;
use ring::rand::SystemRandom;
use ring::signature::{ECDSA_P256_SHA256_FIXED_SIGNING, EcdsaKeyPair, Ed25519KeyPair, KeyPair};
use serde_json::json;

/// The claims of `token` when one of `keys` signed it and its claims say what
/// `expect` asks at `now_ms`. The algorithm is checked first, then the key, the
/// signature and only then the claims: nothing unsigned is trusted.
fn verify(token: &str, keys: &Jwks, expect: &Expect<'_>, now_ms: u64) -> Result<Claims, JwtError> {
    let compact = Compact::parse(token)?;
    let key = keys
        .find(compact.kid.as_deref(), compact.alg)
        .ok_or(JwtError::UnknownKey)?;
    compact.verify(key)?;
    compact.claims.check(expect, now_ms)?;
    Ok(compact.claims)
}

pub(super) const ISS: &str = "https://id.example.com";
pub(super) const AUD: &str = "https://hub.example.com/mcp";
pub(super) const NOW: u64 = 1_800_000_000_000;

fn expect() -> Expect<'static> {
    Expect {
        issuer: ISS,
        audience: AUD,
        skew_ms: 60_000,
    }
}

/// A signer for one of the test keys, and its JWK.
pub(super) enum Signer {
    Ed(Ed25519KeyPair),
    Ec(EcdsaKeyPair),
}

impl Signer {
    pub(super) fn ed() -> Signer {
        let doc = Ed25519KeyPair::generate_pkcs8(&SystemRandom::new()).unwrap();
        Signer::Ed(Ed25519KeyPair::from_pkcs8(doc.as_ref()).unwrap())
    }

    pub(super) fn ec() -> Signer {
        let rng = SystemRandom::new();
        let doc = EcdsaKeyPair::generate_pkcs8(&ECDSA_P256_SHA256_FIXED_SIGNING, &rng).unwrap();
        Signer::Ec(EcdsaKeyPair::from_pkcs8(&ECDSA_P256_SHA256_FIXED_SIGNING, doc.as_ref(), &rng).unwrap())
    }

    fn alg(&self) -> &'static str {
        match self {
            Signer::Ed(_) => "EdDSA",
            Signer::Ec(_) => "ES256",
        }
    }

    pub(super) fn jwk(&self, kid: &str) -> serde_json::Value {
        match self {
            Signer::Ed(k) => {
                json!({"kty": "OKP", "crv": "Ed25519", "kid": kid, "x": encode_url(k.public_key().as_ref())})
            }
            Signer::Ec(k) => {
                let point = k.public_key().as_ref();
                json!({"kty": "EC", "crv": "P-256", "kid": kid, "use": "sig",
                       "x": encode_url(&point[1..33]), "y": encode_url(&point[33..])})
            }
        }
    }

    fn sign(&self, header: serde_json::Value, claims: serde_json::Value) -> String {
        let input = format!(
            "{}.{}",
            encode_url(header.to_string().as_bytes()),
            encode_url(claims.to_string().as_bytes())
        );
        let sig = match self {
            Signer::Ed(k) => k.sign(input.as_bytes()).as_ref().to_vec(),
            Signer::Ec(k) => k
                .sign(&SystemRandom::new(), input.as_bytes())
                .unwrap()
                .as_ref()
                .to_vec(),
        };
        format!("{input}.{}", encode_url(&sig))
    }

    pub(super) fn token(&self, kid: &str, claims: serde_json::Value) -> String {
        self.sign(json!({"alg": self.alg(), "kid": kid, "typ": "at+jwt"}), claims)
    }
}

pub(super) fn claims() -> serde_json::Value {
    json!({"iss": ISS, "aud": AUD, "sub": "u1", "email": "alice@example.com",
           "exp": NOW / 1000 + 300, "nbf": NOW / 1000 - 10})
}

fn set(keys: &[serde_json::Value]) -> Jwks {
    Jwks::parse(json!({ "keys": keys }).to_string().as_bytes()).unwrap()
}

fn refusal(token: &str, keys: &Jwks) -> Rejection {
    verify(token, keys, &expect(), NOW).unwrap_err().rejection()
}

#[test]
fn ed25519_and_p256_tokens_verify() {
    for signer in [Signer::ed(), Signer::ec()] {
        let keys = set(&[signer.jwk("k1")]);
        let verified = verify(&signer.token("k1", claims()), &keys, &expect(), NOW).unwrap();
        assert_eq!(
            verified.string("email"),
            Some("alice@example.com"),
            "{}",
            signer.alg()
        );
        // `aud` may be an array naming the resource among others.
        let mut c = self::claims();
        c["aud"] = json!(["other", AUD]);
        verify(&signer.token("k1", c), &keys, &expect(), NOW).unwrap();
        // Without a kid, the set's only key for the algorithm is used.
        let no_kid = signer.sign(json!({"alg": signer.alg()}), claims());
        verify(&no_kid, &keys, &expect(), NOW).unwrap();
    }
}

/// RS256: ring cannot generate RSA keys, so a 2048-bit key made for these tests
/// only (`openssl genpkey -algorithm RSA`, then `openssl rsa -traditional -outform DER`:
/// ring reads RSAPrivateKey DER) signs.
#[test]
fn rsa_tokens_verify_and_refuse_tampering() {
    let pair =
        ring::signature::RsaKeyPair::from_der(include_bytes!("testdata/rsa2048-test-only.der")).unwrap();
    let public = ring::signature::RsaPublicKeyComponents::<Vec<u8>>::from(pair.public());
    let jwk = json!({"kty": "RSA", "kid": "r", "alg": "RS256",
        "n": encode_url(&public.n),
        "e": encode_url(&public.e)});
    let keys = set(&[jwk]);
    let input = format!(
        "{}.{}",
        encode_url(json!({"alg": "RS256", "kid": "r"}).to_string().as_bytes()),
        encode_url(claims().to_string().as_bytes())
    );
    let mut sig = vec![0; pair.public().modulus_len()];
    pair.sign(
        &ring::signature::RSA_PKCS1_SHA256,
        &SystemRandom::new(),
        input.as_bytes(),
        &mut sig,
    )
    .unwrap();
    let token = format!("{input}.{}", encode_url(&sig));
    verify(&token, &keys, &expect(), NOW).unwrap();
    sig[10] ^= 1;
    let bad = format!("{input}.{}", encode_url(&sig));
    assert_eq!(refusal(&bad, &keys), Rejection::BadSignature);
}

#[test]
fn a_tampered_token_or_another_key_is_refused() {
    let signer = Signer::ec();
    let keys = set(&[signer.jwk("k1")]);
    let token = signer.token("k1", claims());
    let (input, sig) = token.rsplit_once('.').unwrap();
    let (header, _) = input.split_once('.').unwrap();
    let mut forged = claims();
    forged["sub"] = json!("admin");
    let tampered = format!("{header}.{}.{sig}", encode_url(forged.to_string().as_bytes()));
    assert_eq!(refusal(&tampered, &keys), Rejection::BadSignature);

    // Signed by a key the set does not hold under the same kid.
    let other = Signer::ec().token("k1", claims());
    assert_eq!(refusal(&other, &keys), Rejection::BadSignature);
    // A kid the set does not have; a key of another algorithm under the kid.
    assert_eq!(
        refusal(&signer.token("k2", claims()), &keys),
        Rejection::UnknownKey
    );
    assert_eq!(
        refusal(&Signer::ed().token("k1", claims()), &keys),
        Rejection::UnknownKey
    );
    // Two keys for the algorithm and no kid: no guessing.
    let two = set(&[signer.jwk("k1"), Signer::ec().jwk("k2")]);
    let no_kid = signer.sign(json!({"alg": "ES256"}), claims());
    assert_eq!(refusal(&no_kid, &two), Rejection::UnknownKey);
}

#[test]
fn expiry_and_not_before_allow_the_skew() {
    let signer = Signer::ed();
    let keys = set(&[signer.jwk("k")]);
    let at = |exp: u64, nbf: u64| {
        let mut c = claims();
        c["exp"] = json!(exp);
        c["nbf"] = json!(nbf);
        verify(&signer.token("k", c), &keys, &expect(), NOW).map_err(|e| e.rejection())
    };
    let now = NOW / 1000;
    assert_eq!(at(now - 61, 0).unwrap_err(), Rejection::Expired);
    assert!(at(now - 59, 0).is_ok(), "within the skew");
    assert_eq!(at(now + 300, now + 61).unwrap_err(), Rejection::NotYetValid);
    assert!(at(now + 300, now + 59).is_ok(), "within the skew");
    // No `exp` at all: not an access token the hub takes.
    let mut c = claims();
    c.as_object_mut().unwrap().remove("exp");
    assert_eq!(refusal(&signer.token("k", c), &keys), Rejection::Malformed);
    let mut c = claims();
    c["exp"] = json!("tomorrow");
    assert_eq!(refusal(&signer.token("k", c), &keys), Rejection::Malformed);
}

#[test]
fn another_audience_or_issuer_is_refused() {
    let signer = Signer::ed();
    let keys = set(&[signer.jwk("k")]);
    for (claim, value, why) in [
        ("aud", json!("https://hub.example.com"), Rejection::WrongAudience),
        ("aud", json!(["a", "b"]), Rejection::WrongAudience),
        ("aud", json!(null), Rejection::WrongAudience),
        ("iss", json!("https://evil.example.com"), Rejection::WrongIssuer),
        ("iss", json!(null), Rejection::WrongIssuer),
    ] {
        let mut c = claims();
        c[claim] = value.clone();
        assert_eq!(refusal(&signer.token("k", c), &keys), why, "{claim} = {value}");
    }
}

#[test]
fn none_hmac_and_unknown_algorithms_are_refused_before_any_key() {
    let signer = Signer::ed();
    let keys = set(&[signer.jwk("k")]);
    let body = encode_url(claims().to_string().as_bytes());
    for alg in [
        "none", "None", "HS256", "HS512", "RS512", "PS256", "ES384", "ed25519",
    ] {
        let header = encode_url(json!({"alg": alg, "kid": "k"}).to_string().as_bytes());
        for sig in ["", "c2ln"] {
            let token = format!("{header}.{body}.{sig}");
            assert_eq!(refusal(&token, &keys), Rejection::RefusedAlgorithm, "{alg}");
        }
    }
    // An HS256 token whose "secret" is the public key (the classic forgery).
    let Signer::Ed(pair) = &signer else { unreachable!() };
    let header = encode_url(json!({"alg": "HS256", "kid": "k"}).to_string().as_bytes());
    let input = format!("{header}.{body}");
    let mac = ring::hmac::sign(
        &ring::hmac::Key::new(ring::hmac::HMAC_SHA256, pair.public_key().as_ref()),
        input.as_bytes(),
    );
    let forged = format!("{input}.{}", encode_url(mac.as_ref()));
    assert_eq!(refusal(&forged, &keys), Rejection::RefusedAlgorithm);
}

#[test]
fn malformed_tokens_say_so_without_the_token() {
    let signer = Signer::ed();
    let keys = set(&[signer.jwk("k")]);
    let good = signer.token("k", claims());
    let secret_part = good.split('.').nth(1).unwrap();
    for token in [
        "",
        "a.b",
        "a.b.c.d",
        "!!.e30.",
        &format!("{}.{}.x", encode_url(b"not json"), secret_part),
        &format!(
            "{}.{}.{}",
            encode_url(b"{\"alg\":\"EdDSA\",\"crit\":[\"b64\"]}"),
            secret_part,
            "c2ln"
        ),
        &format!(
            "{}.{}.c2ln",
            encode_url(b"{\"alg\":\"EdDSA\"}"),
            encode_url(b"[1]")
        ),
    ] {
        let err = verify(token, &keys, &expect(), NOW).unwrap_err();
        assert_eq!(err.rejection(), Rejection::Malformed, "{token}");
        assert!(!err.to_string().contains(secret_part), "{err}");
    }
    assert!(looks_like_jwt(&good));
    assert!(!looks_like_jwt("hub_at_abcdef"));
    assert!(!looks_like_jwt("a.b"));
    assert!(!looks_like_jwt("a+.b.c"));
}

#[test]
fn key_sets_keep_the_keys_the_hub_can_use() {
    let ed = Signer::ed();
    let ec = Signer::ec();
    let doc = json!({"keys": [
        ed.jwk("ed"),
        ec.jwk("ec"),
        {"kty": "RSA", "kid": "rsa", "n": encode_url(&[0xc5; 256]), "e": "AQAB", "alg": "RS256"},
        {"kty": "EC", "crv": "P-384", "kid": "p384", "x": "AA", "y": "AA"},
        {"kty": "oct", "kid": "hmac", "k": "c2VjcmV0"},
        {"kty": "RSA", "kid": "enc", "use": "enc", "n": "AQAB", "e": "AQAB"},
        {"kty": "OKP", "crv": "Ed25519", "kid": "ed-as-es", "alg": "ES256", "x": encode_url(&[1; 32])},
    ]});
    let keys = Jwks::parse(doc.to_string().as_bytes()).unwrap();
    assert_eq!(keys.len(), 3);
    assert!(matches!(keys.find(Some("rsa"), Alg::Rs256), Some(PublicKey::Rsa { e, .. }) if e == &[1, 0, 1]));
    assert!(
        matches!(keys.find(Some("ec"), Alg::Es256), Some(PublicKey::P256(p)) if p.len() == 65 && p[0] == 4)
    );
    assert!(keys.find(Some("ed"), Alg::Es256).is_none());

    // A usable key with a broken member is an error naming it; not JSON is one too.
    let bad = json!({"keys": [{"kty": "EC", "crv": "P-256", "kid": "short", "x": "AA", "y": "AA"}]});
    let err = Jwks::parse(bad.to_string().as_bytes()).unwrap_err();
    assert!(
        matches!(&err, JwksError::Key { kid: Some(k), member: "x" } if k == "short"),
        "{err}"
    );
    assert!(matches!(Jwks::parse(b"{}"), Err(JwksError::Json(_))));
}
