//! `[secrets]` (the key plugin secrets are sealed with: a key file or an
//! environment variable, never the file itself) and `[plugin.NAME]` (what the
//! operator supplies one plugin: configuration values, references to secrets
//! held elsewhere, and whether it may read a `reveal = true` secret). Sealing is
//! `runtime::secrets`'s; a plugin's manifest declares what it needs.

use serde::Deserialize;
use std::collections::BTreeMap;
use std::path::PathBuf;

/// `[secrets]`: where the sealing key comes from, and how large a value may be.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct SecretsConfig {
    /// A file holding the 32-byte key as 64 hex digits (`wasmhub secret keygen`).
    pub key_file: Option<PathBuf>,
    /// An environment variable holding the key as 64 hex digits.
    pub key_env: Option<String>,
    /// Largest secret value, in KiB: set by the CLI or the API, or read from a
    /// `file:` reference (1 to 1024).
    pub max_value_kb: u64,
}

impl Default for SecretsConfig {
    fn default() -> Self {
        SecretsConfig {
            key_file: None,
            key_env: None,
            max_value_kb: 64,
        }
    }
}

/// `[plugin.NAME]`: one plugin's settings.
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct PluginSettings {
    /// The plugin may read its `reveal = true` secrets.
    pub allow_reveal: bool,
    /// Values of the plugin's `[config.NAME]` keys.
    pub config: BTreeMap<String, serde_json::Value>,
    /// Secrets held outside the hub: `env:VAR` or `file:/path`, read at every call
    /// (a value stored with `wasmhub secret set` is used when none is given here).
    pub secrets: BTreeMap<String, String>,
}

/// Where an operator-supplied secret is read from, per call.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum SecretRef {
    /// The hub's environment variable of that name.
    Env(String),
    /// The file's contents (one trailing newline dropped), e.g. a Kubernetes secret volume.
    File(PathBuf),
}

impl SecretRef {
    /// `env:VAR` or `file:/absolute/path`.
    pub fn parse(text: &str) -> Option<SecretRef> {
        if let Some(var) = text.strip_prefix("env:") {
            let mut b = var.bytes();
            let ok = matches!(b.next(), Some(c) if c.is_ascii_alphabetic() || c == b'_')
                && b.all(|c| c.is_ascii_alphanumeric() || c == b'_');
            return ok.then(|| SecretRef::Env(var.to_string()));
        }
        let path = PathBuf::from(text.strip_prefix("file:")?);
        path.is_absolute().then_some(SecretRef::File(path))
    }
}

impl std::fmt::Display for SecretRef {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            SecretRef::Env(var) => write!(f, "env:{var}"),
            SecretRef::File(path) => write!(f, "file:{}", path.display()),
        }
    }
}

impl SecretsConfig {
    /// The first problem with `[secrets]`.
    pub(super) fn mismatch(&self) -> Option<String> {
        match (&self.key_file, &self.key_env) {
            (Some(_), Some(_)) => Some("secrets: set one of key_file or key_env, not both".into()),
            (None, Some(var)) if var.is_empty() => Some("secrets.key_env must not be empty".into()),
            _ if !(1..=1024).contains(&self.max_value_kb) => Some(format!(
                "secrets.max_value_kb must be between 1 and 1024; it is {}",
                self.max_value_kb
            )),
            _ => None,
        }
    }
}

/// The first problem with the references of the `[plugin.NAME]` tables (names
/// and configuration keys are the runtime's to check, against the plugins).
pub(super) fn mismatch(plugins: &BTreeMap<String, PluginSettings>) -> Option<String> {
    plugins.iter().find_map(|(name, settings)| {
        let (secret, reference) = settings
            .secrets
            .iter()
            .find(|(_, reference)| SecretRef::parse(reference).is_none())?;
        Some(format!(
            "plugin.{name}.secrets.{secret}: {reference:?} must be env:VARIABLE or file:/absolute/path \
             (store a value itself with `wasmhub secret set {name} {secret}`)"
        ))
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn references_parse_strictly() {
        assert_eq!(
            SecretRef::parse("env:API_KEY"),
            Some(SecretRef::Env("API_KEY".into()))
        );
        assert_eq!(
            SecretRef::parse("file:/run/secrets/k"),
            Some(SecretRef::File("/run/secrets/k".into()))
        );
        assert_eq!(SecretRef::parse("env:"), None);
        assert_eq!(SecretRef::parse("env:A-B"), None);
        assert_eq!(SecretRef::parse("file:relative"), None);
        assert_eq!(SecretRef::parse("plain value"), None);
    }
}
