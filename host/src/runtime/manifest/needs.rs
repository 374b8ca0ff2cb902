//! What a plugin needs from its operator: secrets (`[secrets.NAME]`, injected into
//! outbound requests to declared hosts, or revealed to the guest) and typed
//! configuration (`[config.NAME]`). The manifest only declares; the values come
//! from the operator (`wasmhub secret set`, `[plugin.NAME]` in the hub's TOML).

use super::error::ManifestProblem;
use super::grants::HostGrant;
use super::{Checks, is_env_name};
use serde::Deserialize;
use std::collections::BTreeMap;
use std::fmt;

/// Headers a secret may never be injected as: they frame the request itself.
const FRAMING_HEADERS: &[&str] = &[
    "host",
    "content-length",
    "transfer-encoding",
    "connection",
    "upgrade",
    "te",
    "trailer",
    "keep-alive",
    "proxy-connection",
];

/// One declared secret.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct SecretDecl {
    /// `[A-Za-z_][A-Za-z0-9_]*`, unique within the plugin.
    pub name: String,
    /// What it is, for the operator.
    pub description: String,
    /// How the guest gets to use it.
    pub use_: SecretUse,
}

/// How a secret is used: injected by the host (the guest never holds it) or
/// revealed to the guest (only with the operator's `allow_reveal`).
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum SecretUse {
    /// Added as a header to requests whose destination matches one of these.
    Inject(Vec<InjectRule>),
    /// Returned by the reveal import of WIT 0.3.0.
    Reveal,
}

/// One destination of an injected secret.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct InjectRule {
    /// The destination: a host name (with its port, or the scheme's default).
    pub host: HostGrant,
    /// The header's name, lowercase.
    pub header: String,
    /// The header's value with `{}` standing for the secret (`Bearer {}`).
    pub format: String,
}

impl InjectRule {
    /// The header value for `secret`.
    pub fn value(&self, secret: &str) -> String {
        self.format.replacen("{}", secret, 1)
    }
}

impl fmt::Display for InjectRule {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{} header {} = {:?}", self.host, self.header, self.format)
    }
}

/// The type of a configuration value.
#[derive(Clone, Copy, Debug, PartialEq, Eq, serde::Serialize)]
#[serde(rename_all = "lowercase")]
pub enum ConfigType {
    /// A TOML string.
    String,
    /// A TOML integer.
    Integer,
    /// A TOML integer or float.
    Number,
    /// A TOML boolean.
    Boolean,
}

impl ConfigType {
    fn parse(text: &str) -> Option<ConfigType> {
        Some(match text {
            "string" => ConfigType::String,
            "integer" => ConfigType::Integer,
            "number" => ConfigType::Number,
            "boolean" => ConfigType::Boolean,
            _ => return None,
        })
    }

    /// Whether `value` (from TOML, as JSON) is of this type.
    pub fn admits(self, value: &serde_json::Value) -> bool {
        match self {
            ConfigType::String => value.is_string(),
            ConfigType::Integer => value.is_i64() || value.is_u64(),
            ConfigType::Number => value.is_number(),
            ConfigType::Boolean => value.is_boolean(),
        }
    }

    /// The name in manifests and messages.
    pub fn as_str(self) -> &'static str {
        match self {
            ConfigType::String => "string",
            ConfigType::Integer => "integer",
            ConfigType::Number => "number",
            ConfigType::Boolean => "boolean",
        }
    }
}

/// One declared configuration key.
#[derive(Clone, Debug, PartialEq)]
pub struct ConfigDecl {
    /// `[a-z][a-z0-9_]*`.
    pub name: String,
    /// Its type.
    pub ty: ConfigType,
    /// The value when the operator sets none.
    pub default: Option<serde_json::Value>,
    /// The plugin is rejected when the operator sets no value (and there is no default).
    pub required: bool,
    /// What it is, for the operator.
    pub description: String,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct RawSecret {
    #[serde(default)]
    description: String,
    inject: Option<serde_json::Value>,
    reveal: Option<bool>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RawInject {
    host: String,
    header: String,
    format: Option<String>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct RawConfig {
    #[serde(rename = "type")]
    ty: String,
    default: Option<serde_json::Value>,
    required: Option<bool>,
    #[serde(default)]
    description: String,
}

/// `[a-z][a-z0-9_]*`: a configuration key.
pub fn is_config_name(name: &str) -> bool {
    let mut bytes = name.bytes();
    matches!(bytes.next(), Some(b'a'..=b'z'))
        && bytes.all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'_')
}

fn is_header_name(name: &str) -> bool {
    !name.is_empty() && http::HeaderName::from_bytes(name.as_bytes()).is_ok()
}

impl Checks<'_, '_> {
    fn problem(&mut self, pointer: &str, key: String, message: String) {
        let line = self.line(pointer);
        self.problems.push(ManifestProblem::Need { line, key, message });
    }

    /// `[secrets.NAME]`, each with exactly one of `inject` or `reveal = true`;
    /// every inject host must be granted by `network.allow`.
    pub(super) fn secrets(
        &mut self,
        raw: BTreeMap<String, RawSecret>,
        network: &[HostGrant],
    ) -> Vec<SecretDecl> {
        let mut out = Vec::new();
        for (name, secret) in raw {
            let pointer = format!("/secrets/{name}");
            if !is_env_name(&name) {
                self.problem(
                    &pointer,
                    format!("secrets.{name}"),
                    "a secret's name must be [A-Za-z_][A-Za-z0-9_]*".into(),
                );
                continue;
            }
            let use_ = match (secret.inject, secret.reveal.unwrap_or(false)) {
                (Some(_), true) => {
                    self.problem(
                        &pointer,
                        format!("secrets.{name}"),
                        "set either inject or reveal = true, not both".into(),
                    );
                    continue;
                }
                (None, false) => {
                    self.problem(
                        &pointer,
                        format!("secrets.{name}"),
                        "set inject = { host, header, format } (the host adds it to requests) \
                         or reveal = true (the plugin reads it)"
                            .into(),
                    );
                    continue;
                }
                (None, true) => SecretUse::Reveal,
                (Some(inject), false) => match self.inject_rules(&name, inject, network) {
                    Some(rules) => SecretUse::Inject(rules),
                    None => continue,
                },
            };
            out.push(SecretDecl {
                name,
                description: secret.description,
                use_,
            });
        }
        out
    }

    /// `inject`: one table or an array of them.
    fn inject_rules(
        &mut self,
        name: &str,
        inject: serde_json::Value,
        network: &[HostGrant],
    ) -> Option<Vec<InjectRule>> {
        let (entries, many) = match inject {
            serde_json::Value::Array(entries) => (entries, true),
            one => (vec![one], false),
        };
        if entries.is_empty() {
            self.problem(
                &format!("/secrets/{name}/inject"),
                format!("secrets.{name}.inject"),
                "needs at least one destination".into(),
            );
            return None;
        }
        let mut rules = Vec::new();
        let problems_before = self.problems.len();
        for (index, entry) in entries.into_iter().enumerate() {
            let (pointer, key) = if many {
                (
                    format!("/secrets/{name}/inject/{index}"),
                    format!("secrets.{name}.inject[{index}]"),
                )
            } else {
                (
                    format!("/secrets/{name}/inject"),
                    format!("secrets.{name}.inject"),
                )
            };
            let raw: RawInject = match serde_json::from_value(entry) {
                Ok(raw) => raw,
                Err(e) => {
                    self.problem(
                        &pointer,
                        key,
                        format!("{e} (expected {{ host, header, format }})"),
                    );
                    continue;
                }
            };
            if let Some(rule) = self.inject_rule(&pointer, &key, raw, network) {
                rules.push(rule);
            }
        }
        (self.problems.len() == problems_before).then_some(rules)
    }

    fn inject_rule(
        &mut self,
        pointer: &str,
        key: &str,
        raw: RawInject,
        network: &[HostGrant],
    ) -> Option<InjectRule> {
        let host = match HostGrant::parse(&raw.host) {
            Ok(host) => host,
            Err(e) => {
                self.problem(&format!("{pointer}/host"), format!("{key}.host"), e.to_string());
                return None;
            }
        };
        if !network.contains(&host) {
            self.problem(
                &format!("{pointer}/host"),
                format!("{key}.host"),
                format!("{host} is not in network.allow: add it there, or the plugin can never reach it"),
            );
            return None;
        }
        let header = raw.header.to_ascii_lowercase();
        if !is_header_name(&header) || FRAMING_HEADERS.contains(&header.as_str()) {
            self.problem(
                &format!("{pointer}/header"),
                format!("{key}.header"),
                format!("{:?} is not a header a secret may be sent in", raw.header),
            );
            return None;
        }
        let format = raw.format.unwrap_or_else(|| "{}".into());
        if format.matches("{}").count() != 1 {
            self.problem(
                &format!("{pointer}/format"),
                format!("{key}.format"),
                format!("{format:?} must contain {{}} exactly once (where the secret goes)"),
            );
            return None;
        }
        if http::HeaderValue::from_str(&format.replace("{}", "")).is_err() {
            self.problem(
                &format!("{pointer}/format"),
                format!("{key}.format"),
                format!("{format:?} has characters a header value cannot hold"),
            );
            return None;
        }
        Some(InjectRule { host, header, format })
    }

    /// `[config.NAME]`: a known type, a default of that type, not both required
    /// and defaulted.
    pub(super) fn config(&mut self, raw: BTreeMap<String, RawConfig>) -> Vec<ConfigDecl> {
        let mut out = Vec::new();
        for (name, c) in raw {
            let pointer = format!("/config/{name}");
            let key = format!("config.{name}");
            if !is_config_name(&name) {
                self.problem(
                    &pointer,
                    key,
                    "a configuration key must be [a-z][a-z0-9_]*".into(),
                );
                continue;
            }
            let Some(ty) = ConfigType::parse(&c.ty) else {
                self.problem(
                    &format!("{pointer}/type"),
                    format!("{key}.type"),
                    format!("{:?} is not a type: use string, integer, number or boolean", c.ty),
                );
                continue;
            };
            let required = c.required.unwrap_or(false);
            if let Some(default) = &c.default {
                if !ty.admits(default) {
                    self.problem(
                        &format!("{pointer}/default"),
                        format!("{key}.default"),
                        format!("{default} is not of type {}", ty.as_str()),
                    );
                    continue;
                }
                if required {
                    self.problem(
                        &format!("{pointer}/required"),
                        format!("{key}.required"),
                        "a key with a default is never missing: drop required or the default".into(),
                    );
                    continue;
                }
            }
            out.push(ConfigDecl {
                name,
                ty,
                default: c.default,
                required,
                description: c.description,
            });
        }
        out
    }
}

#[cfg(test)]
mod tests {
    use super::super::{Manifest, ManifestError};
    use super::*;
    use std::path::Path;

    fn parse(text: &str) -> Result<Manifest, ManifestError> {
        Manifest::parse(text, Path::new("/tmp/p.toml"))
    }

    #[test]
    fn secrets_and_config_parse() {
        let m = parse(
            "[network]\nallow = [\"api.example.com\", \"127.0.0.1:9000\"]\n\
             [secrets.API_KEY]\ndescription = \"the key\"\n\
             inject = { host = \"api.example.com\", header = \"Authorization\", format = \"Bearer {}\" }\n\
             [secrets.TWO]\ninject = [{ host = \"api.example.com\", header = \"X-Key\" }, \
             { host = \"127.0.0.1:9000\", header = \"x-key\" }]\n\
             [secrets.SIGNING]\nreveal = true\n\
             [config.units]\ntype = \"string\"\ndefault = \"metric\"\ndescription = \"units\"\n\
             [config.retries]\ntype = \"integer\"\nrequired = true\n",
        )
        .unwrap();
        let names: Vec<&str> = m.secrets.iter().map(|s| s.name.as_str()).collect();
        assert_eq!(names, ["API_KEY", "SIGNING", "TWO"]);
        let SecretUse::Inject(rules) = &m.secrets[0].use_ else {
            panic!("API_KEY is injected")
        };
        assert_eq!(rules[0].header, "authorization");
        assert_eq!(rules[0].value("k1"), "Bearer k1");
        assert_eq!(m.secrets[1].use_, SecretUse::Reveal);
        let SecretUse::Inject(two) = &m.secrets[2].use_ else {
            panic!("TWO is injected")
        };
        assert_eq!(two.len(), 2);
        assert_eq!(two[1].format, "{}");
        assert_eq!(two[1].host.port, Some(9000));
        assert_eq!(m.config[0].name, "retries");
        assert!(m.config[0].required);
        assert_eq!(m.config[1].default, Some(serde_json::json!("metric")));
        let described = m.describe().join("\n");
        assert!(described.contains("secret: SIGNING revealed"), "{described}");
        assert!(
            described.contains("config: units (string, default \"metric\")"),
            "{described}"
        );
    }

    #[test]
    fn bad_needs_name_file_line_and_key() {
        let err = parse(
            "[network]\nallow = [\"api.example.com\"]\n\
             [secrets.A]\ninject = { host = \"other.example.com\", header = \"X\" }\n\
             [secrets.B]\ninject = { host = \"api.example.com\", header = \"Host\" }\n\
             [secrets.C]\ninject = { host = \"api.example.com\", header = \"X\", format = \"no slot\" }\n\
             [secrets.D]\ndescription = \"neither\"\n\
             [secrets.E]\nreveal = true\ninject = { host = \"api.example.com\", header = \"X\" }\n\
             [secrets.F]\ninject = { host = \"api.example.com\", hedaer = \"X\" }\n\
             [config.n]\ntype = \"integer\"\ndefault = \"three\"\n\
             [config.t]\ntype = \"text\"\n\
             [config.Up]\ntype = \"string\"\n",
        )
        .unwrap_err();
        let p: Vec<String> = err.problems.iter().map(ToString::to_string).collect();
        let all = err.to_string();
        assert!(all.starts_with("/tmp/p.toml: "), "{all}");
        let expect = [
            ("line 4: secrets.A.inject.host", "not in network.allow"),
            (
                "line 6: secrets.B.inject.header",
                "not a header a secret may be sent in",
            ),
            ("line 8: secrets.C.inject.format", "exactly once"),
            ("line 9: secrets.D", "set inject"),
            ("line 11: secrets.E", "not both"),
            ("line 15: secrets.F.inject", "hedaer"),
            ("line 21: config.Up", "[a-z][a-z0-9_]*"),
            ("line 18: config.n.default", "is not of type integer"),
            ("line 20: config.t.type", "not a type"),
        ];
        assert_eq!(p.len(), expect.len(), "{p:#?}");
        for (start, contains) in expect {
            assert!(
                p.iter().any(|l| l.starts_with(start) && l.contains(contains)),
                "{start} … {contains} in {p:#?}"
            );
        }
    }

    #[test]
    fn required_with_default_is_refused() {
        let err = parse("[config.x]\ntype = \"boolean\"\ndefault = true\nrequired = true\n")
            .unwrap_err()
            .to_string();
        assert!(err.contains("line 4: config.x.required"), "{err}");
    }
}
