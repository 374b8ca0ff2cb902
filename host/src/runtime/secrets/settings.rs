//! The operator's `[plugin.NAME]` tables checked against the plugins: names when
//! the runtime starts, and at each load the configuration values against the
//! manifest's `[config.NAME]` (type, required) and the secret references against
//! its `[secrets.NAME]`. The result is the configuration the guest reads
//! through `wasi:config/store`.

use super::super::manifest::Manifest;
use super::super::names::valid_plugin_name;
use crate::config::PluginSettings;
use std::collections::BTreeMap;
use std::fmt;

/// A `[plugin.NAME]` table names no possible plugin, or a key no plugin can declare.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SettingsError(pub String);

impl fmt::Display for SettingsError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

impl std::error::Error for SettingsError {}

/// What is wrong with a plugin's `[plugin.NAME]` settings for its manifest.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum SettingsProblem {
    /// `plugin.NAME.config.KEY` is not declared by the manifest.
    UnknownConfig {
        /// The plugin.
        plugin: String,
        /// The key.
        key: String,
    },
    /// `plugin.NAME.config.KEY` is not of the declared type.
    ConfigType {
        /// The plugin.
        plugin: String,
        /// The key.
        key: String,
        /// The declared type.
        expected: &'static str,
    },
    /// A `required` key without a value.
    MissingConfig {
        /// The plugin.
        plugin: String,
        /// The key.
        key: String,
    },
    /// `plugin.NAME.secrets.SECRET` names a secret the manifest does not declare.
    UnknownSecret {
        /// The plugin.
        plugin: String,
        /// The secret's name.
        name: String,
    },
}

impl fmt::Display for SettingsProblem {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            SettingsProblem::UnknownConfig { plugin, key } => write!(
                f,
                "plugin.{plugin}.config.{key} (hub configuration): the manifest declares no [config.{key}]"
            ),
            SettingsProblem::ConfigType {
                plugin,
                key,
                expected,
            } => write!(
                f,
                "plugin.{plugin}.config.{key} (hub configuration): must be of type {expected}, as [config.{key}] declares"
            ),
            SettingsProblem::MissingConfig { plugin, key } => write!(
                f,
                "[config.{key}] is required: set plugin.{plugin}.config.{key} in the hub configuration"
            ),
            SettingsProblem::UnknownSecret { plugin, name } => write!(
                f,
                "plugin.{plugin}.secrets.{name} (hub configuration): the manifest declares no [secrets.{name}]"
            ),
        }
    }
}

impl std::error::Error for SettingsProblem {}

/// Every `[plugin.NAME]` names a valid plugin name and valid configuration keys.
pub(super) fn check_names(plugins: &BTreeMap<String, PluginSettings>) -> Result<(), SettingsError> {
    for (name, settings) in plugins {
        if !valid_plugin_name(name) {
            return Err(SettingsError(format!(
                "plugin.{name}: {name:?} is not a plugin name ([a-z][a-z0-9_-]*)"
            )));
        }
        if let Some(key) = settings
            .config
            .keys()
            .find(|k| !super::super::manifest::is_config_name(k))
        {
            return Err(SettingsError(format!(
                "plugin.{name}.config.{key}: a configuration key must be [a-z][a-z0-9_]*"
            )));
        }
    }
    Ok(())
}

/// The configuration `plugin` runs with: each declared key's value (the
/// operator's, else the default) as text, as `wasi:config/store` gives it.
pub(crate) fn effective_config(
    plugin: &str,
    manifest: &Manifest,
    settings: Option<&PluginSettings>,
) -> Result<Vec<(String, String)>, Vec<SettingsProblem>> {
    let empty = PluginSettings::default();
    let settings = settings.unwrap_or(&empty);
    let mut problems = Vec::new();
    for key in settings.config.keys() {
        if !manifest.config.iter().any(|c| &c.name == key) {
            problems.push(SettingsProblem::UnknownConfig {
                plugin: plugin.into(),
                key: key.clone(),
            });
        }
    }
    for name in settings.secrets.keys() {
        if !manifest.secrets.iter().any(|s| &s.name == name) {
            problems.push(SettingsProblem::UnknownSecret {
                plugin: plugin.into(),
                name: name.clone(),
            });
        }
    }
    let mut values = Vec::new();
    for decl in &manifest.config {
        let value = match settings.config.get(&decl.name).or(decl.default.as_ref()) {
            Some(v) if decl.ty.admits(v) => v,
            Some(_) => {
                problems.push(SettingsProblem::ConfigType {
                    plugin: plugin.into(),
                    key: decl.name.clone(),
                    expected: decl.ty.as_str(),
                });
                continue;
            }
            None if decl.required => {
                problems.push(SettingsProblem::MissingConfig {
                    plugin: plugin.into(),
                    key: decl.name.clone(),
                });
                continue;
            }
            None => continue,
        };
        let text = match value {
            serde_json::Value::String(s) => s.clone(),
            other => other.to_string(),
        };
        values.push((decl.name.clone(), text));
    }
    if problems.is_empty() {
        Ok(values)
    } else {
        Err(problems)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;
    use std::path::Path;

    fn manifest() -> Manifest {
        Manifest::parse(
            "[config.units]\ntype = \"string\"\ndefault = \"metric\"\n\
             [config.retries]\ntype = \"integer\"\nrequired = true\n\
             [config.verbose]\ntype = \"boolean\"\n\
             [secrets.SIGN]\nreveal = true\n",
            Path::new("/tmp/w.toml"),
        )
        .unwrap()
    }

    #[test]
    fn values_defaults_and_types() {
        let mut s = PluginSettings::default();
        s.config.insert("retries".into(), json!(3));
        let values = effective_config("w", &manifest(), Some(&s)).unwrap();
        assert_eq!(
            values,
            [
                ("retries".to_string(), "3".to_string()),
                ("units".into(), "metric".into())
            ]
        );
        s.config.insert("verbose".into(), json!("yes"));
        s.config.insert("colour".into(), json!(1));
        s.secrets.insert("SIGNN".into(), "env:X".into());
        let problems: Vec<String> = effective_config("w", &manifest(), Some(&s))
            .unwrap_err()
            .iter()
            .map(ToString::to_string)
            .collect();
        assert_eq!(problems.len(), 3, "{problems:?}");
        assert!(problems[0].contains("plugin.w.config.colour"), "{problems:?}");
        assert!(problems[1].contains("plugin.w.secrets.SIGNN"), "{problems:?}");
        assert!(problems[2].contains("plugin.w.config.verbose") && problems[2].contains("boolean"));
        let missing = effective_config("w", &manifest(), None).unwrap_err();
        assert_eq!(
            missing[0].to_string(),
            "[config.retries] is required: set plugin.w.config.retries in the hub configuration"
        );
    }

    #[test]
    fn names_are_checked() {
        let mut plugins = BTreeMap::new();
        plugins.insert("Bad".to_string(), PluginSettings::default());
        assert!(check_names(&plugins).unwrap_err().0.contains("plugin.Bad"));
        let mut s = PluginSettings::default();
        s.config.insert("X".into(), json!(1));
        let plugins = BTreeMap::from([("good".to_string(), s)]);
        assert!(
            check_names(&plugins)
                .unwrap_err()
                .0
                .contains("plugin.good.config.X")
        );
    }
}
