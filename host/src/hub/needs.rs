//! What each plugin needs from its operator, as the operator sees it: the
//! secrets its manifest declares (with where each value comes from, never the
//! value) and its configuration (declared keys and the values in effect), for
//! `GET /api/plugins` and the console; and the operator's changes to a stored
//! secret (`PUT`/`DELETE /api/plugins/{plugin}/secrets/{name}`, operators only).

use super::{Caller, Hub, PluginInfo};
use crate::runtime::secrets::{SecretError, SecretSource};
use crate::runtime::{Plugin, SecretUse};
use crate::storage::StorageError;
use serde::Serialize;
use std::fmt;

/// One declared secret of a plugin.
#[derive(Debug, Clone, Serialize)]
pub struct SecretNeed {
    /// Its name.
    pub name: String,
    /// What it is, from the manifest.
    pub description: String,
    /// `inject` or `reveal`.
    #[serde(rename = "use")]
    pub use_: &'static str,
    /// The destinations it is injected into (`host[:port]`).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub hosts: Vec<String>,
    /// Where its value is (`stored`, `reference`, `unset`); filled by
    /// [`Hub::plugins_with_needs`].
    #[serde(flatten, skip_serializing_if = "Option::is_none")]
    pub source: Option<SecretSource>,
}

/// One declared configuration key of a plugin.
#[derive(Debug, Clone, Serialize)]
pub struct ConfigNeed {
    /// Its name.
    pub name: String,
    /// `string`, `integer`, `number` or `boolean`.
    #[serde(rename = "type")]
    pub ty: &'static str,
    /// Whether the operator must set it.
    pub required: bool,
    /// What it is, from the manifest.
    pub description: String,
    /// The value in effect (the operator's or the default), as the guest reads it.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub value: Option<String>,
}

/// The declared needs of a loaded plugin (sources not filled yet).
pub fn plugin_needs(plugin: &Plugin) -> (Vec<SecretNeed>, Vec<ConfigNeed>) {
    let secrets = plugin
        .manifest()
        .secrets
        .iter()
        .map(|s| SecretNeed {
            name: s.name.clone(),
            description: s.description.clone(),
            use_: match s.use_ {
                SecretUse::Inject(_) => "inject",
                SecretUse::Reveal => "reveal",
            },
            hosts: match &s.use_ {
                SecretUse::Inject(rules) => rules.iter().map(|r| r.host.to_string()).collect(),
                SecretUse::Reveal => Vec::new(),
            },
            source: None,
        })
        .collect();
    let config = plugin
        .manifest()
        .config
        .iter()
        .map(|c| ConfigNeed {
            name: c.name.clone(),
            ty: c.ty.as_str(),
            required: c.required,
            description: c.description.clone(),
            value: plugin
                .config()
                .iter()
                .find(|(k, _)| k == &c.name)
                .map(|(_, v)| v.clone()),
        })
        .collect();
    (secrets, config)
}

/// Why an operator's change to a secret was refused.
#[derive(Debug)]
pub enum SecretAdminError {
    /// Only operators set or remove secrets.
    NotOperator,
    /// No loaded plugin of that name declares that secret.
    Undeclared {
        /// The plugin.
        plugin: String,
        /// The secret's name.
        name: String,
    },
    /// The value is empty.
    Empty,
    /// Sealing or storing failed (no key, the storage).
    Secret(SecretError),
}

impl fmt::Display for SecretAdminError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            SecretAdminError::NotOperator => f.write_str("only operators set or remove plugin secrets"),
            SecretAdminError::Undeclared { plugin, name } => {
                write!(f, "no loaded plugin {plugin:?} declares a secret {name:?}")
            }
            SecretAdminError::Empty => f.write_str("the value must not be empty"),
            SecretAdminError::Secret(e) => write!(f, "{e}"),
        }
    }
}

impl std::error::Error for SecretAdminError {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        match self {
            SecretAdminError::Secret(e) => Some(e),
            _ => None,
        }
    }
}

impl Hub {
    /// [`Hub::plugins`] with each declared secret's source (stored since when,
    /// a reference, or unset), read now from the store every replica shares.
    pub async fn plugins_with_needs(&self) -> Result<Vec<PluginInfo>, StorageError> {
        let mut plugins = self.plugins();
        let secrets = self.runtime.secrets();
        for plugin in &mut plugins {
            if plugin.secrets.is_empty() {
                continue;
            }
            let names: Vec<&str> = plugin.secrets.iter().map(|s| s.name.as_str()).collect();
            let sources = secrets.sources(&plugin.name, &names).await?;
            for (need, source) in plugin.secrets.iter_mut().zip(sources) {
                need.source = Some(source);
            }
        }
        Ok(plugins)
    }

    /// Seals `value` as `plugin`'s secret `name`, which a loaded plugin must declare.
    pub async fn set_secret(
        &self,
        caller: &Caller,
        plugin: &str,
        name: &str,
        value: &str,
    ) -> Result<(), SecretAdminError> {
        self.check_declared(caller, plugin, name)?;
        if value.is_empty() {
            return Err(SecretAdminError::Empty);
        }
        let now = crate::clock::now_ms();
        self.runtime
            .secrets()
            .set(plugin, name, value, now)
            .await
            .map_err(SecretAdminError::Secret)?;
        crate::info!("secrets: {} set {plugin}/{name}", caller.name());
        Ok(())
    }

    /// Removes `plugin`'s stored secret `name`; whether there was one.
    pub async fn remove_secret(
        &self,
        caller: &Caller,
        plugin: &str,
        name: &str,
    ) -> Result<bool, SecretAdminError> {
        self.check_declared(caller, plugin, name)?;
        let store = self.runtime.secrets().store().map_err(SecretAdminError::Secret)?;
        let removed = store
            .remove(plugin, name)
            .await
            .map_err(|e| SecretAdminError::Secret(SecretError::Storage(e)))?;
        if removed {
            crate::info!("secrets: {} removed {plugin}/{name}", caller.name());
        }
        Ok(removed)
    }

    fn check_declared(&self, caller: &Caller, plugin: &str, name: &str) -> Result<(), SecretAdminError> {
        if !caller.is_operator() {
            return Err(SecretAdminError::NotOperator);
        }
        let declared = self
            .plugins()
            .iter()
            .any(|p| p.name == plugin && p.secrets.iter().any(|s| s.name == name));
        if declared {
            Ok(())
        } else {
            Err(SecretAdminError::Undeclared {
                plugin: plugin.to_string(),
                name: name.to_string(),
            })
        }
    }
}
