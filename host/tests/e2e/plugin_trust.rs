//! Plugin signatures at load (`[trust]`): a signed plugin loads with its signer;
//! unsigned, tampered, wrongly signed and revoked-key plugins are `rejected` with
//! their reason; a hot-reloaded file that its signature no longer covers is
//! rejected too, and a re-signed one loads again.

use crate::support::runtime::*;
use std::sync::{Arc, Mutex};
use wasmhub::config::TrustConfig;
use wasmhub::runtime::{PluginDir, PluginEntry, PluginState, Runtime, SigningKey, signature_path};

fn sign(key: &SigningKey, wasm: &std::path::Path) {
    let digest = wasmhub::runtime::sha256_file(wasm).unwrap();
    std::fs::write(signature_path(wasm), key.sign(&digest).to_bytes()).unwrap();
}

fn trusting(keys: &[&SigningKey], revoked: &[String]) -> Runtime {
    let trust = TrustConfig {
        keys: keys.iter().map(|k| k.public_key()).collect(),
        revoked: revoked.to_vec(),
        require_signed: true,
    };
    Runtime::with_trust(&limits(), None, &trust).expect("runtime")
}

/// The folder `s` watched by `rt`, and the latest set it published.
async fn watch(rt: Runtime, s: &Scratch) -> (PluginDir, Arc<Mutex<Vec<PluginEntry>>>) {
    let set = Arc::new(Mutex::new(Vec::new()));
    let sink = set.clone();
    let on_change = Arc::new(move |e| *sink.lock().unwrap() = e);
    let dir = PluginDir::start(rt, s.0.clone(), None, on_change).await.unwrap();
    (dir, set)
}

/// Each plugin's state: `active by KEYID`, `active unsigned` or `rejected: REASON`.
fn states(entries: &[PluginEntry]) -> Vec<(String, String)> {
    let state = |s: &PluginState| match s {
        PluginState::Active(p) | PluginState::Deprecated(p) => {
            format!("active by {}", p.signer().unwrap_or("nobody"))
        }
        PluginState::Rejected { reason, .. } => format!("rejected: {reason}"),
        PluginState::Loading => "loading".into(),
    };
    entries
        .iter()
        .map(|e| (e.name.clone(), state(&e.state)))
        .collect()
}

fn state_of(set: &[(String, String)], name: &str) -> String {
    set.iter()
        .find(|(n, _)| n == name)
        .map(|(_, s)| s.clone())
        .unwrap_or_default()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn signed_plugins_load_and_unsigned_tampered_wrong_key_and_revoked_ones_are_rejected() {
    let (alice, _) = SigningKey::generate().unwrap();
    let (bob, _) = SigningKey::generate().unwrap();
    let (mallory, _) = SigningKey::generate().unwrap();
    let s = Scratch::new("trust");
    let signed = s.plugin("adversary", "signed", None);
    sign(&alice, &signed);
    s.plugin("adversary", "unsigned", None);
    let tampered = s.plugin("adversary", "tampered", None);
    sign(&alice, &tampered);
    // The signature stays; the bytes change after signing.
    std::fs::copy(guest("examples"), &tampered).unwrap();
    let wrong = s.plugin("adversary", "wrongkey", None);
    sign(&mallory, &wrong);
    let old = s.plugin("adversary", "oldkey", None);
    sign(&bob, &old);

    // Rotation: alice and bob trusted, bob revoked by key id.
    let (_dir, set) = watch(trusting(&[&alice, &bob], &[bob.key_id()]), &s).await;
    let got = states(&set.lock().unwrap());
    assert_eq!(state_of(&got, "signed"), format!("active by {}", alice.key_id()));
    let unsigned = state_of(&got, "unsigned");
    assert!(
        unsigned.starts_with("rejected: trust: unsigned: [trust] require_signed is on"),
        "{unsigned}"
    );
    let tampered = state_of(&got, "tampered");
    assert!(
        tampered.contains("signature mismatch: the signature is over sha256:"),
        "{tampered}"
    );
    assert_eq!(
        state_of(&got, "wrongkey"),
        format!(
            "rejected: trust: signed by key {}, which is not in [trust] keys",
            mallory.key_id()
        )
    );
    assert_eq!(
        state_of(&got, "oldkey"),
        format!(
            "rejected: trust: signed by key {}, which is revoked ([trust] revoked)",
            bob.key_id()
        )
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_hot_reloaded_file_its_signature_does_not_cover_is_rejected_until_re_signed() {
    let (alice, _) = SigningKey::generate().unwrap();
    let s = Scratch::new("trust-reload");
    let wasm = s.plugin("adversary", "alpha", None);
    sign(&alice, &wasm);
    let (_dir, set) = watch(trusting(&[&alice], &[]), &s).await;
    let now = || states(&set.lock().unwrap());
    assert_eq!(state_of(&now(), "alpha"), format!("active by {}", alice.key_id()));

    // A new build dropped over the old one (atomically), its old signature beside it.
    let tmp = s.path(".alpha.wasm.tmp");
    std::fs::copy(guest("examples"), &tmp).unwrap();
    std::fs::rename(&tmp, &wasm).unwrap();
    let rejected = crate::support::wait::until_seen("the replaced file to be rejected", || async {
        let state = state_of(&now(), "alpha");
        if state.contains("signature mismatch") {
            Ok(state)
        } else {
            Err(state)
        }
    })
    .await;
    assert!(
        rejected.starts_with("rejected: trust: signature mismatch"),
        "{rejected}"
    );

    // Signing the new file (only the .sig changes) makes it load again.
    sign(&alice, &wasm);
    crate::support::wait::until_seen("the re-signed file to load", || async {
        let state = state_of(&now(), "alpha");
        if state.starts_with("active by") {
            Ok(())
        } else {
            Err(state)
        }
    })
    .await;
}
