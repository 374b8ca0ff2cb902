use super::*;

fn policy(keys: &[&SigningKey], revoked: &[String], require_signed: bool) -> TrustPolicy {
    TrustPolicy::new(&TrustConfig {
        keys: keys.iter().map(|k| k.public_key()).collect(),
        revoked: revoked.to_vec(),
        require_signed,
    })
    .unwrap()
}

#[test]
fn a_signature_verifies_only_for_its_file_and_a_trusted_unrevoked_key() {
    let (alice, text) = SigningKey::generate().unwrap();
    let again = SigningKey::parse(&text).unwrap();
    assert_eq!(again.public_key(), alice.public_key());
    let (mallory, _) = SigningKey::generate().unwrap();
    let digest = "ab".repeat(32);
    let sig = alice.sign(&digest);
    assert_eq!(Signature::parse(&sig.to_bytes()).unwrap(), sig);

    let trusting = policy(&[&alice], &[], true);
    assert_eq!(trusting.check(&digest, Some(&sig)).unwrap(), Some(alice.key_id()));
    assert!(matches!(
        trusting.check(&digest, None),
        Err(TrustProblem::Unsigned)
    ));
    let other = "cd".repeat(32);
    let e = trusting.check(&other, Some(&sig)).unwrap_err();
    assert!(e.to_string().contains(&format!("is sha256:{other}")), "{e}");

    let forged = Signature {
        signature: mallory.sign(&digest).signature,
        ..sig.clone()
    };
    assert!(matches!(
        trusting.check(&digest, Some(&forged)),
        Err(TrustProblem::BadSignature { .. })
    ));
    let e = trusting.check(&digest, Some(&mallory.sign(&digest))).unwrap_err();
    assert_eq!(
        e.to_string(),
        format!("signed by key {}, which is not in [trust] keys", mallory.key_id())
    );

    // Rotation: two trusted keys, the old one revoked by id or by public key.
    for revoked in [alice.key_id(), alice.public_key()] {
        let rotated = policy(&[&alice, &mallory], &[revoked], true);
        let e = rotated.check(&digest, Some(&sig)).unwrap_err();
        assert!(matches!(e, TrustProblem::Revoked { .. }), "{e}");
        assert!(rotated.check(&digest, Some(&mallory.sign(&digest))).is_ok());
    }
    // Without require_signed, an unsigned file passes and a signed one is still checked.
    let optional = policy(&[&alice], &[], false);
    assert_eq!(optional.check(&digest, None).unwrap(), None);
    assert!(optional.check(&other, Some(&sig)).is_err());
}

#[test]
fn key_ids_are_short_and_stable_and_bad_files_are_named() {
    assert_eq!(key_id(&[0u8; 32]), sha256_hex(&[0u8; 32])[..16]);
    assert!(matches!(Signature::parse(b"{}"), Err(TrustProblem::Malformed(_))));
    let other = br#"{"format":"x","digest":"d","key_id":"k","signature":"s"}"#;
    assert!(matches!(Signature::parse(other), Err(TrustProblem::Format(_))));
    assert!(SigningKey::parse("ed25519-pkcs8:zz").is_err());
    assert_eq!(
        signature_path(Path::new("/p/text.wasm")),
        Path::new("/p/text.wasm.sig")
    );
}
