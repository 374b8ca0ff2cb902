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
        // The text is not repeated: it may be a value pasted where a reference goes.
        let (secret, problem) = settings.secrets.iter().find_map(|(secret, reference)| {
            crate::secret_ref::SecretRef::parse_reference(reference)
                .err()
                .map(|e| (secret, e))
        })?;
        Some(format!(
            "plugin.{name}.secrets.{secret}: {problem} (store a value itself with `wasmhub secret set {name} {secret}`)"
        ))
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_plugins_secret_must_be_a_reference_named_with_its_key() {
        let mut plugins = BTreeMap::new();
        let mut settings = PluginSettings::default();
        settings
            .secrets
            .insert("API_KEY".into(), "env:WEATHER_KEY".into());
        plugins.insert("weather".to_string(), settings.clone());
        assert_eq!(mismatch(&plugins), None);
        settings.secrets.insert("API_KEY".into(), "the key itself".into());
        plugins.insert("weather".to_string(), settings);
        let problem = mismatch(&plugins).unwrap();
        assert!(
            problem.starts_with("plugin.weather.secrets.API_KEY: "),
            "{problem}"
        );
        assert!(!problem.contains("the key itself"), "{problem}");
    }
}
