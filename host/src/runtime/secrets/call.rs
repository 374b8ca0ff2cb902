//! A plugin's secrets at call time: [`SecretNeeds`] (built at load: which secret
//! goes into which destination's header) and [`CallSecrets`] (one call's: the
//! values it used, for scrubbing, and the first secret it needed and could not
//! have, which fails the call with `missing_secret`).

use super::super::manifest::{InjectRule, Manifest, SecretUse};
use super::scrub::Scrubber;
use super::{Secret, Secrets};
use std::sync::{Arc, Mutex};

/// One plugin's secrets: where each injected one goes, which may be revealed.
#[derive(Debug)]
pub(crate) struct SecretNeeds {
    plugin: Arc<str>,
    inject: Vec<(String, InjectRule)>,
    reveal: Vec<String>,
    secrets: Arc<Secrets>,
}

/// A header to add to one request: the secret's name and its rule.
#[derive(Debug, Clone)]
pub(crate) struct Injection {
    pub name: String,
    pub rule: InjectRule,
}

impl SecretNeeds {
    pub(crate) fn new(plugin: &str, manifest: &Manifest, secrets: Arc<Secrets>) -> Arc<SecretNeeds> {
        let mut inject = Vec::new();
        let mut reveal = Vec::new();
        for decl in &manifest.secrets {
            match &decl.use_ {
                SecretUse::Inject(rules) => {
                    inject.extend(rules.iter().map(|r| (decl.name.clone(), r.clone())));
                }
                SecretUse::Reveal => reveal.push(decl.name.clone()),
            }
        }
        Arc::new(SecretNeeds {
            plugin: plugin.into(),
            inject,
            reveal,
            secrets,
        })
    }

    /// The injections for a request to `host:port` (host lowercase, the name the
    /// request was made to: a request to the declared name's address gets none).
    pub(crate) fn injections(&self, host: &str, port: u16, default_port: u16) -> Vec<Injection> {
        self.inject
            .iter()
            .filter(|(_, rule)| rule.host.covers(host, port, default_port))
            .map(|(name, rule)| Injection {
                name: name.clone(),
                rule: rule.clone(),
            })
            .collect()
    }
}

/// One call's use of its plugin's secrets.
#[derive(Debug)]
pub(crate) struct CallSecrets {
    needs: Arc<SecretNeeds>,
    state: Mutex<CallState>,
}

#[derive(Debug, Default)]
struct CallState {
    /// The first secret the call needed and did not get: its name and why.
    missing: Option<(String, String)>,
    /// The values the call used, by name.
    used: Vec<(String, Secret)>,
}

impl CallSecrets {
    pub(crate) fn new(needs: Arc<SecretNeeds>) -> Arc<CallSecrets> {
        Arc::new(CallSecrets {
            needs,
            state: Mutex::default(),
        })
    }

    pub(crate) fn needs(&self) -> &SecretNeeds {
        &self.needs
    }

    /// `name`'s value now; on failure the call is marked as missing it and `None`
    /// comes back (the caller refuses what needed it).
    pub(crate) async fn get(&self, name: &str) -> Option<Secret> {
        let why = match self.needs.secrets.get(&self.needs.plugin, name).await {
            Ok(Some(value)) => {
                let mut state = self.state.lock().expect("call secrets lock");
                if !state.used.iter().any(|(n, v)| n == name && v == &value) {
                    state.used.push((name.to_string(), value.clone()));
                }
                return Some(value);
            }
            Ok(None) => "not set".to_string(),
            Err(e) => e.to_string(),
        };
        self.missing(name, why);
        None
    }

    /// `host.reveal-secret` (WIT 0.3.0): the value of a `reveal = true` secret when
    /// the operator allows it; the error says why not (an unset value also marks
    /// the call `missing_secret`).
    pub(crate) async fn reveal(&self, name: &str) -> Result<String, String> {
        let plugin = &self.needs.plugin;
        if !self.needs.reveal.iter().any(|n| n == name) {
            return Err(format!(
                "{plugin} declares no [secrets.{name}] with reveal = true: only those can be revealed"
            ));
        }
        let allowed = self
            .needs
            .secrets
            .settings(plugin)
            .is_some_and(|s| s.allow_reveal);
        if !allowed {
            return Err(format!(
                "the operator does not allow {plugin} to read its secrets (allow_reveal in [plugin.{plugin}])"
            ));
        }
        match self.get(name).await {
            Some(value) => Ok(value.expose().to_string()),
            None => Err(format!("the secret {plugin}/{name} is missing")),
        }
    }

    /// What scrubs the values this call used from what leaves it.
    pub(crate) fn scrubber(&self) -> Scrubber {
        Scrubber::new(&self.state.lock().expect("call secrets lock").used)
    }

    /// Records that the call needed `name` and could not have it.
    pub(crate) fn missing(&self, name: &str, why: String) {
        let mut state = self.state.lock().expect("call secrets lock");
        state.missing.get_or_insert((name.to_string(), why));
    }

    /// `plugin/NAME` and why, when the call needed a secret it did not get.
    pub(crate) fn missing_secret(&self) -> Option<(String, String)> {
        let state = self.state.lock().expect("call secrets lock");
        state
            .missing
            .as_ref()
            .map(|(name, why)| (format!("{}/{name}", self.needs.plugin), why.clone()))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::path::Path;

    #[test]
    fn injections_match_the_declared_name_and_port_only() {
        let manifest = Manifest::parse(
            "[network]\nallow = [\"api.example.com\", \"127.0.0.1:9000\", \"93.184.216.34\"]\n\
             [secrets.K]\ninject = [{ host = \"api.example.com\", header = \"Authorization\", format = \"Bearer {}\" },\
             { host = \"127.0.0.1:9000\", header = \"X-Key\" }]\n",
            Path::new("/tmp/x.toml"),
        )
        .unwrap();
        let needs = SecretNeeds::new("x", &manifest, Arc::new(Secrets::none()));
        let one = needs.injections("api.example.com", 443, 443);
        assert_eq!(one.len(), 1);
        assert_eq!(one[0].rule.header, "authorization");
        assert_eq!(needs.injections("api.example.com", 80, 80).len(), 1);
        assert!(
            needs.injections("api.example.com", 8443, 443).is_empty(),
            "other port"
        );
        assert!(
            needs.injections("93.184.216.34", 443, 443).is_empty(),
            "the name's address"
        );
        assert!(needs.injections("evil.example.com", 443, 443).is_empty());
        assert!(needs.injections("api.example.com.evil.org", 443, 443).is_empty());
        assert_eq!(needs.injections("127.0.0.1", 9000, 80)[0].rule.header, "x-key");
        assert!(needs.injections("127.0.0.1", 9001, 80).is_empty());
    }

    #[tokio::test]
    async fn a_missing_secret_is_named_and_remembered_once() {
        let manifest = Manifest::parse("[secrets.K]\nreveal = true\n", Path::new("/tmp/x.toml")).unwrap();
        let call = CallSecrets::new(SecretNeeds::new("x", &manifest, Arc::new(Secrets::none())));
        assert!(call.get("K").await.is_none());
        call.missing("L", "later".into());
        assert_eq!(
            call.missing_secret(),
            Some(("x/K".to_string(), "not set".to_string()))
        );
        assert!(call.state.lock().unwrap().used.is_empty());
    }
}
