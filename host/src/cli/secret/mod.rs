//! `wasmhub secret keygen|set|list|rm`: the operator's plugin secrets, sealed in
//! the hub's storage (the data folder's embedded database, or the PostgreSQL
//! database every replica shares). A value is read from stdin only, never from
//! the command line (which other users and shell history see); `list` shows
//! names, whether each is set and since when, never a value. With `--hub URL`
//! (`remote`) the same commands go through a running hub's API instead.

mod remote;

pub(super) use remote::Hub;

use crate::config::Config;
use crate::logging::Rfc3339;
use crate::runtime::secrets::{SealKey, SecretSource};
use crate::runtime::{Manifest, SecretUse, Secrets, is_env_name, valid_plugin_name};
use crate::secret_ref::without_newline;
use crate::storage::Backend;
use std::io::{IsTerminal, Read, Write};
use std::path::Path;
use std::process::ExitCode;

/// What to do.
pub(super) enum Command<'a> {
    /// Seal stdin as `plugin`'s `name`.
    Set { plugin: &'a str, name: &'a str },
    /// List stored and declared secrets (of one plugin).
    List { plugin: Option<&'a str> },
    /// Remove `plugin`'s `name`.
    Remove { plugin: &'a str, name: &'a str },
}

/// Writes a new key (64 hex digits) to `path`, readable by its owner only; an
/// existing file is never overwritten.
pub(super) fn keygen(path: &Path) -> ExitCode {
    let mut options = std::fs::OpenOptions::new();
    options.write(true).create_new(true);
    #[cfg(unix)]
    std::os::unix::fs::OpenOptionsExt::mode(&mut options, 0o600);
    let written = options
        .open(path)
        .and_then(|mut f| f.write_all(format!("{}\n", SealKey::generate_hex()).as_bytes()));
    match written {
        Ok(()) => {
            eprintln!(
                "wrote a secrets key to {} (0600); set secrets.key_file = {:?} in the hub's configuration",
                path.display(),
                path.display().to_string()
            );
            ExitCode::SUCCESS
        }
        Err(e) => fail(&format!("{}: {e}", path.display())),
    }
}

/// Runs `command` against the configured storage, or through `hub` when given.
pub(super) fn run(command: Command<'_>, config: &Config, hub: Option<Hub<'_>>) -> ExitCode {
    let names_ok = match &command {
        Command::Set { plugin, name } | Command::Remove { plugin, name } => check_names(plugin, name),
        Command::List { plugin: Some(plugin) } => check_names(plugin, "X"),
        Command::List { plugin: None } => Ok(()),
    };
    if let Err(e) = names_ok {
        return fail(&e);
    }
    if let Some(hub) = hub {
        return block_on(remote::execute(command, &hub, config.secrets.max_value_kb));
    }
    let value = match &command {
        Command::Set { plugin, name } => match read_value(plugin, name, config.secrets.max_value_kb) {
            Ok(value) => Some(value),
            Err(e) => return fail(&e),
        },
        _ => None,
    };
    block_on(execute(command, value, config))
}

/// Runs `work` to its end on a runtime of its own.
fn block_on(work: impl std::future::Future<Output = Result<(), String>>) -> ExitCode {
    let runtime = match tokio::runtime::Builder::new_current_thread().enable_all().build() {
        Ok(r) => r,
        Err(e) => return fail(&format!("cannot start the async runtime: {e}")),
    };
    match runtime.block_on(work) {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => fail(&e),
    }
}

fn check_names(plugin: &str, name: &str) -> Result<(), String> {
    if !valid_plugin_name(plugin) {
        return Err(format!("{plugin:?} is not a plugin name ([a-z][a-z0-9_-]*)"));
    }
    if !is_env_name(name) {
        return Err(format!("{name:?} is not a secret name ([A-Za-z_][A-Za-z0-9_]*)"));
    }
    Ok(())
}

/// The value on stdin, one trailing newline dropped.
fn read_value(plugin: &str, name: &str, max_kb: u64) -> Result<String, String> {
    let max_bytes = max_kb.saturating_mul(1024);
    let stdin = std::io::stdin();
    if stdin.is_terminal() {
        eprintln!("the value of {plugin}/{name}, then Enter and Ctrl-D (it is not echoed to any log):");
    }
    let mut bytes = Vec::new();
    stdin
        .lock()
        .take(max_bytes + 1)
        .read_to_end(&mut bytes)
        .map_err(|e| format!("cannot read stdin: {e}"))?;
    if bytes.len() as u64 > max_bytes {
        return Err(format!(
            "the value on stdin is larger than {max_kb} KiB (secrets.max_value_kb)"
        ));
    }
    let value = String::from_utf8(bytes).map_err(|_| "the value on stdin is not UTF-8 text".to_string())?;
    let value = without_newline(value);
    if value.is_empty() {
        return Err(
            "the value on stdin is empty (pipe it in: `printf %s \"$KEY\" | wasmhub secret set …`)".into(),
        );
    }
    Ok(value)
}

async fn open(config: &Config) -> Result<Secrets, String> {
    let backend = Backend::open(config).await.map_err(|e| {
        format!(
            "cannot open the hub's storage: {e} (with the embedded backend, a running hub holds the data \
             folder: use --hub URL with an operator token, the console, or stop the hub)"
        )
    })?;
    let store = crate::runtime::secrets::store::open(&backend)
        .await
        .map_err(|e| e.to_string())?;
    Secrets::new(Some(store), &config.secrets, config.plugin.clone()).map_err(|e| e.to_string())
}

async fn execute(command: Command<'_>, value: Option<String>, config: &Config) -> Result<(), String> {
    let secrets = open(config).await?;
    match command {
        Command::Set { plugin, name } => {
            if let Some(declared) = declared(config, plugin)
                && !declared.iter().any(|(n, _)| n == name)
            {
                eprintln!(
                    "note: {plugin}'s manifest in {} declares no [secrets.{name}] (yet)",
                    config.plugins_dir.display()
                );
            }
            let value = value.expect("set reads a value first");
            secrets
                .set(plugin, name, &value, crate::clock::now_ms())
                .await
                .map_err(|e| format!("cannot set {plugin}/{name}: {e}"))?;
            eprintln!(
                "set {plugin}/{name}: sealed in the {} storage; the next call uses it",
                backend_name(config)
            );
            Ok(())
        }
        Command::Remove { plugin, name } => {
            let store = secrets.store().map_err(|e| e.to_string())?;
            match store.remove(plugin, name).await.map_err(|e| e.to_string())? {
                true => {
                    eprintln!("removed {plugin}/{name}");
                    Ok(())
                }
                false => Err(format!("{plugin}/{name} is not stored")),
            }
        }
        Command::List { plugin } => list(&secrets, config, plugin).await,
    }
}

/// One line per stored or declared secret: `PLUGIN/NAME  set|unset  since/where`.
async fn list(secrets: &Secrets, config: &Config, only: Option<&str>) -> Result<(), String> {
    let store = secrets.store().map_err(|e| e.to_string())?;
    let mut rows: Vec<(String, String, String)> = Vec::new();
    for stored in store.list(only).await.map_err(|e| e.to_string())? {
        rows.push((
            format!("{}/{}", stored.plugin, stored.name),
            "set".into(),
            format!("stored {}", Rfc3339(stored.updated_ms)),
        ));
    }
    for plugin in declaring_plugins(config, only) {
        let declared = declared(config, &plugin).unwrap_or_default();
        let names: Vec<&str> = declared.iter().map(|(n, _)| n.as_str()).collect();
        let sources = secrets
            .sources(&plugin, &names)
            .await
            .map_err(|e| e.to_string())?;
        for ((name, how), source) in declared.iter().zip(sources) {
            let key = format!("{plugin}/{name}");
            let row = match source {
                SecretSource::Stored { .. } => continue,
                SecretSource::Reference { reference } => {
                    ("set".to_string(), format!("from {reference}; {how}"))
                }
                SecretSource::Unset => ("unset".to_string(), format!("declared; {how}")),
            };
            rows.retain(|(k, _, _)| k != &key);
            rows.push((key, row.0, row.1));
        }
    }
    rows.sort();
    let mut out = std::io::stdout().lock();
    for (key, state, detail) in rows {
        let _ = writeln!(out, "{key:<32} {state:<6} {detail}");
    }
    Ok(())
}

/// The plugins of the folder with a manifest (just `only` when given).
fn declaring_plugins(config: &Config, only: Option<&str>) -> Vec<String> {
    if let Some(plugin) = only {
        return vec![plugin.to_string()];
    }
    let Ok(entries) = std::fs::read_dir(&config.plugins_dir) else {
        return Vec::new();
    };
    let mut names: Vec<String> = entries
        .filter_map(|e| e.ok()?.file_name().into_string().ok())
        .filter_map(|f| f.strip_suffix(".toml").map(str::to_string))
        .filter(|n| valid_plugin_name(n))
        .collect();
    names.sort();
    names
}

/// The secrets `plugin`'s manifest in the plugins folder declares, with how each
/// is used; `None` when it has no readable manifest.
fn declared(config: &Config, plugin: &str) -> Option<Vec<(String, String)>> {
    let manifest = Manifest::load(&config.plugins_dir.join(format!("{plugin}.toml"))).ok()?;
    manifest.path.as_ref()?;
    Some(
        manifest
            .secrets
            .iter()
            .map(|s| {
                let how = match &s.use_ {
                    SecretUse::Inject(rules) => {
                        let hosts: Vec<String> = rules.iter().map(|r| r.host.to_string()).collect();
                        format!("injected into {}", hosts.join(", "))
                    }
                    SecretUse::Reveal => "revealed to the plugin".into(),
                };
                (s.name.clone(), how)
            })
            .collect(),
    )
}

fn backend_name(config: &Config) -> &'static str {
    config.storage.backend.as_str()
}

fn fail(message: &str) -> ExitCode {
    eprintln!("wasmhub secret: {message}");
    ExitCode::FAILURE
}
