//! The approval policy: for one caller and one operation, allow, ask or deny, and
//! the configuration key that decided, so every refusal can name what an operator
//! would change. Rules by operation name come first (the token's, then the global
//! ones; the first match decides); otherwise the hints decide, the strictest of
//! those that apply (`destructive`, `open-world`, not `read-only`), each taken from
//! the token when it sets it, else from `[approvals]`. Hints are the plugin's word;
//! an operator who does not trust them writes a rule by name, which no plugin or
//! manifest can lower.

use super::super::auth::Allowlist;
use crate::config::{ApprovalAction, ApprovalRule, ApprovalsConfig, TokenApprovals, TokenConfig};
use crate::runtime::Hints;
use std::collections::HashMap;

/// What the policy says about one call, and which key said it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Decision {
    /// Allow, ask or deny.
    pub action: ApprovalAction,
    /// The configuration key that decided (`approvals.destructive`,
    /// `approvals.rules[0]`, `tokens[name=ci].approvals.writes`); `None` when no
    /// entry applies (a read-only, closed-world operation no rule names).
    pub key: Option<String>,
}

/// The whole policy, built once from the configuration.
pub(crate) struct Policy {
    global: Level,
    tokens: HashMap<String, Level>,
}

/// One level of the policy: the global one, or one token's.
struct Level {
    /// Where its keys live: `approvals` or `tokens[name=NAME].approvals`.
    prefix: String,
    destructive: Option<ApprovalAction>,
    open_world: Option<ApprovalAction>,
    writes: Option<ApprovalAction>,
    rules: Vec<(Allowlist, ApprovalAction)>,
}

fn rules(rules: &[ApprovalRule]) -> Vec<(Allowlist, ApprovalAction)> {
    rules
        .iter()
        .map(|r| (Allowlist::new(&r.tools), r.action))
        .collect()
}

impl Policy {
    /// The policy of `global` and each token's `approvals`.
    pub(crate) fn new(global: &ApprovalsConfig, tokens: &[TokenConfig]) -> Policy {
        let global_level = Level {
            prefix: "approvals".into(),
            destructive: Some(global.destructive),
            open_world: Some(global.open_world),
            writes: Some(global.writes),
            rules: rules(&global.rules),
        };
        let tokens = tokens
            .iter()
            .map(|t| (t.name.clone(), token_level(&t.name, &t.approvals)))
            .collect();
        Policy {
            global: global_level,
            tokens,
        }
    }

    /// The decision for `caller` (a token name) calling `tool` with `hints`.
    pub(crate) fn decide(&self, caller: &str, tool: &str, hints: &Hints) -> Decision {
        let token = self.tokens.get(caller);
        let levels = token.into_iter().chain(std::iter::once(&self.global));
        for level in levels.clone() {
            if let Some((i, (_, action))) = level.rules.iter().enumerate().find(|(_, (m, _))| m.allows(tool))
            {
                return Decision {
                    action: *action,
                    key: Some(format!("{}.rules[{i}]", level.prefix)),
                };
            }
        }
        type Value = fn(&Level) -> Option<ApprovalAction>;
        let applicable: [(bool, &str, Value); 3] = [
            (hints.destructive, "destructive", |l| l.destructive),
            (hints.open_world, "open_world", |l| l.open_world),
            (!hints.read_only, "writes", |l| l.writes),
        ];
        let mut decision = Decision {
            action: ApprovalAction::Allow,
            key: None,
        };
        for (applies, name, value) in applicable {
            if !applies {
                continue;
            }
            let Some((level, action)) = levels.clone().find_map(|l| value(l).map(|a| (l, a))) else {
                continue;
            };
            if decision.key.is_none() || action > decision.action {
                decision = Decision {
                    action,
                    key: Some(format!("{}.{name}", level.prefix)),
                };
            }
        }
        decision
    }
}

fn token_level(name: &str, approvals: &TokenApprovals) -> Level {
    Level {
        prefix: format!("tokens[name={name}].approvals"),
        destructive: approvals.destructive,
        open_world: approvals.open_world,
        writes: approvals.writes,
        rules: rules(&approvals.rules),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use ApprovalAction::{Allow, Ask, Deny};

    fn hints(read_only: bool, destructive: bool, open_world: bool) -> Hints {
        Hints {
            read_only,
            destructive,
            idempotent: false,
            open_world,
        }
    }

    fn decision(action: ApprovalAction, key: &str) -> Decision {
        Decision {
            action,
            key: Some(key.into()),
        }
    }

    fn token(name: &str, approvals: TokenApprovals) -> TokenConfig {
        TokenConfig {
            name: name.into(),
            approvals,
            ..TokenConfig::default()
        }
    }

    #[test]
    fn the_defaults_ask_for_destructive_operations_only() {
        let p = Policy::new(&ApprovalsConfig::default(), &[]);
        assert_eq!(
            p.decide("local", "files.delete", &hints(false, true, false)),
            decision(Ask, "approvals.destructive")
        );
        // Not read-only and open-world, but both default to allow.
        let d = p.decide("local", "fetch.get", &hints(false, false, true));
        assert_eq!(d.action, Allow);
        let read_only = p.decide("local", "calc.eval", &hints(true, false, false));
        assert_eq!(
            read_only,
            Decision {
                action: Allow,
                key: None
            }
        );
    }

    #[test]
    fn the_strictest_applicable_hint_decides() {
        let config = ApprovalsConfig {
            open_world: Deny,
            writes: Ask,
            ..ApprovalsConfig::default()
        };
        let p = Policy::new(&config, &[]);
        assert_eq!(
            p.decide("local", "fetch.post", &hints(false, false, true)),
            decision(Deny, "approvals.open_world")
        );
        assert_eq!(
            p.decide("local", "notes.add", &hints(false, false, false)),
            decision(Ask, "approvals.writes")
        );
    }

    #[test]
    fn rules_come_first_the_tokens_before_the_global_ones() {
        let config = ApprovalsConfig {
            rules: vec![
                ApprovalRule {
                    tools: vec!["files.*".into()],
                    action: Deny,
                },
                ApprovalRule {
                    tools: vec!["calc.eval".into()],
                    action: Ask,
                },
            ],
            ..ApprovalsConfig::default()
        };
        let ops = token(
            "ops",
            TokenApprovals {
                destructive: Some(Allow),
                rules: vec![ApprovalRule {
                    tools: vec!["files.read".into()],
                    action: Allow,
                }],
                ..TokenApprovals::default()
            },
        );
        let p = Policy::new(&config, &[ops]);
        // A rule outranks the read-only hint.
        assert_eq!(
            p.decide("local", "calc.eval", &hints(true, false, false)),
            decision(Ask, "approvals.rules[1]")
        );
        assert_eq!(
            p.decide("ops", "files.read", &hints(true, false, false)),
            decision(Allow, "tokens[name=ops].approvals.rules[0]")
        );
        assert_eq!(
            p.decide("ops", "files.delete", &hints(false, true, false)),
            decision(Deny, "approvals.rules[0]")
        );
        // The token's own hint value replaces the global one.
        assert_eq!(
            p.decide("ops", "db.drop", &hints(false, true, false)),
            decision(Allow, "tokens[name=ops].approvals.destructive")
        );
        assert_eq!(
            p.decide("web", "db.drop", &hints(false, true, false)),
            decision(Ask, "approvals.destructive")
        );
    }
}
