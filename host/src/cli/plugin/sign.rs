//! `wasmhub plugin keygen` (an Ed25519 signing key: the private key file, mode
//! 0600, never overwritten, and its public key beside it as `FILE.pub`) and
//! `plugin sign FILE --key KEY` (the detached signature `FILE.sig`).

use crate::runtime::{SigningKey, sha256_file, signature_path};
use std::io::Write;
use std::os::unix::fs::OpenOptionsExt;
use std::path::Path;
use std::process::ExitCode;

/// `wasmhub plugin keygen [--out FILE]`.
pub(crate) fn keygen(out: &Path) -> ExitCode {
    let fail = |e: &dyn std::fmt::Display| {
        eprintln!("wasmhub plugin keygen: {e}");
        ExitCode::from(1)
    };
    let (key, text) = match SigningKey::generate() {
        Ok(k) => k,
        Err(e) => return fail(&e),
    };
    let public = {
        let mut p = out.as_os_str().to_owned();
        p.push(".pub");
        std::path::PathBuf::from(p)
    };
    // create_new: an existing key is never replaced by accident.
    let written = std::fs::OpenOptions::new()
        .write(true)
        .create_new(true)
        .mode(0o600)
        .open(out)
        .and_then(|mut f| f.write_all(text.as_bytes()));
    if let Err(e) = written {
        return fail(&format!("{}: {e}", out.display()));
    }
    if let Err(e) = std::fs::write(&public, format!("{}\n", key.public_key())) {
        return fail(&format!("{}: {e}", public.display()));
    }
    println!("private key: {} (keep it secret)", out.display());
    println!("public key:  {} ({})", key.public_key(), public.display());
    println!("key id:      {}", key.key_id());
    println!(
        "\ntrust it in wasmhub.toml:\n[trust]\nkeys = [\"{}\"]",
        key.public_key()
    );
    ExitCode::SUCCESS
}

/// `wasmhub plugin sign FILE --key KEY`: writes `FILE.sig`.
pub(crate) fn sign(file: &Path, key_file: &Path) -> ExitCode {
    let fail = |e: &dyn std::fmt::Display| {
        eprintln!("wasmhub plugin sign: {e}");
        ExitCode::from(1)
    };
    let key = match std::fs::read_to_string(key_file) {
        Ok(text) => match SigningKey::parse(&text) {
            Ok(k) => k,
            Err(e) => return fail(&format!("{}: {e}", key_file.display())),
        },
        Err(e) => return fail(&format!("{}: {e}", key_file.display())),
    };
    let digest = match sha256_file(file) {
        Ok(d) => d,
        Err(e) => return fail(&format!("{}: {e}", file.display())),
    };
    let sig = key.sign(&digest);
    let path = signature_path(file);
    if let Err(e) = std::fs::write(&path, sig.to_bytes()) {
        return fail(&format!("{}: {e}", path.display()));
    }
    println!(
        "signed sha256:{digest} with key {}: {}",
        key.key_id(),
        path.display()
    );
    ExitCode::SUCCESS
}
