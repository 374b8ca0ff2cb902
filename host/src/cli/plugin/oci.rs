//! `wasmhub plugin pull|push|sync`: the command-line side of `distribution`, and
//! the pull of `[[plugins.sources]]` that `serve` does at start.

use crate::config::Config;
use crate::distribution::{self, DistError, Options, Pull, Pulled, Reference};
use crate::runtime::TrustPolicy;
use std::path::Path;
use std::process::ExitCode;

/// What `pull`, `push` and `sync` were asked, beyond the configuration.
pub(crate) struct OciFlags<'a> {
    /// `--dir`: the plugins folder (default: the config's `plugins_dir`).
    pub(crate) dir: Option<&'a Path>,
    /// `--name`: the plugin name of a pull.
    pub(crate) name: Option<&'a str>,
    /// `--locked`: refuse unpinned references and moved tags.
    pub(crate) locked: bool,
    /// `--insecure-http`: plain HTTP to registries off loopback.
    pub(crate) insecure_http: bool,
}

fn options(config: &Config, flags: &OciFlags<'_>) -> Options {
    let mut options = Options::from_config(&config.plugins);
    options.insecure_http |= flags.insecure_http;
    options
}

fn block_on<T>(work: impl Future<Output = T>) -> Result<T, String> {
    let tokio = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .map_err(|e| format!("cannot start the async runtime: {e}"))?;
    Ok(tokio.block_on(work))
}

/// One line about a finished pull.
pub(crate) fn describe(reference: &str, p: &Pulled) -> String {
    let signer = match (&p.signer, p.signed) {
        (Some(id), _) => format!("signed by {id} (verified)"),
        (None, true) => "signed (not checked: no [trust] keys)".to_string(),
        (None, false) => "unsigned".to_string(),
    };
    let what = if p.unchanged { "up to date" } else { "pulled" };
    format!(
        "{reference}: {what} {} (sha256:{}, manifest {}), {signer}",
        p.path.display(),
        p.digest,
        p.manifest_digest
    )
}

/// `wasmhub plugin pull REF`.
pub(crate) fn pull(config: &Config, reference: &str, flags: &OciFlags<'_>) -> ExitCode {
    let fail = |e: &dyn std::fmt::Display| {
        eprintln!("wasmhub plugin pull: {e}");
        ExitCode::from(1)
    };
    let reference = match Reference::parse(reference) {
        Ok(r) => r,
        Err(e) => return fail(&e),
    };
    let trust = match TrustPolicy::new(&config.trust) {
        Ok(t) => t,
        Err(e) => return fail(&format!("[trust]: {e}")),
    };
    let dir = flags.dir.unwrap_or(&config.plugins_dir);
    if let Err(e) = std::fs::create_dir_all(dir) {
        return fail(&format!("{}: {e}", dir.display()));
    }
    let options = options(config, flags);
    let pull = Pull {
        reference: &reference,
        name: flags.name,
        dir,
        locked: flags.locked,
        trust: &trust,
        options: &options,
    };
    match block_on(pull.run()) {
        Err(e) => fail(&e),
        Ok(Err(e)) => fail(&e),
        Ok(Ok(pulled)) => {
            println!("{}", describe(&reference.to_string(), &pulled));
            ExitCode::SUCCESS
        }
    }
}

/// `wasmhub plugin push FILE REF`.
pub(crate) fn push(config: &Config, file: &Path, reference: &str, flags: &OciFlags<'_>) -> ExitCode {
    let fail = |e: &dyn std::fmt::Display| {
        eprintln!("wasmhub plugin push: {e}");
        ExitCode::from(1)
    };
    let reference = match Reference::parse(reference) {
        Ok(r) => r,
        Err(e) => return fail(&e),
    };
    let options = options(config, flags);
    match block_on(distribution::push(file, &reference, &options)) {
        Err(e) => fail(&e),
        Ok(Err(e)) => fail(&e),
        Ok(Ok(pushed)) => {
            let reference = reference.at_digest(&pushed.manifest_digest);
            println!("pushed {} as {reference}", file.display());
            println!("component: {}", pushed.digest);
            if pushed.with_manifest {
                println!("with its capability manifest (NAME.toml)");
            }
            if let Some(key) = pushed.signed_by {
                println!(
                    "signature by {key}: tag {}",
                    distribution::signature_tag(&pushed.manifest_digest)
                );
            }
            ExitCode::SUCCESS
        }
    }
}

/// Pulls every `[[plugins.sources]]` into `dir`; one result per source.
pub(crate) async fn sync_sources(
    config: &Config,
    dir: &Path,
    locked: bool,
    insecure_http: bool,
) -> Result<Vec<(String, Result<Pulled, DistError>)>, String> {
    let trust = TrustPolicy::new(&config.trust).map_err(|e| format!("[trust]: {e}"))?;
    std::fs::create_dir_all(dir).map_err(|e| format!("{}: {e}", dir.display()))?;
    let mut options = Options::from_config(&config.plugins);
    options.insecure_http |= insecure_http;
    Ok(distribution::sync(&config.plugins.sources, dir, locked, &trust, &options).await)
}

/// `wasmhub plugin sync`: exit 1 when any source failed.
pub(crate) fn sync(config: &Config, flags: &OciFlags<'_>) -> ExitCode {
    if config.plugins.sources.is_empty() {
        eprintln!("wasmhub plugin sync: no [[plugins.sources]] in the configuration");
        return ExitCode::from(1);
    }
    let dir = flags.dir.unwrap_or(&config.plugins_dir);
    let results = match block_on(sync_sources(config, dir, flags.locked, flags.insecure_http)) {
        Ok(Ok(results)) => results,
        Ok(Err(e)) | Err(e) => {
            eprintln!("wasmhub plugin sync: {e}");
            return ExitCode::from(1);
        }
    };
    let mut failed = 0;
    for (reference, result) in &results {
        match result {
            Ok(p) => println!("{}", describe(reference, p)),
            Err(e) => {
                failed += 1;
                eprintln!("{reference}: {e}");
            }
        }
    }
    println!("synced {} of {} source(s)", results.len() - failed, results.len());
    if failed > 0 {
        ExitCode::from(1)
    } else {
        ExitCode::SUCCESS
    }
}
