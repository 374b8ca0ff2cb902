//! The approval policy: for one caller and one operation, allow, ask or deny, and
//! the configuration key that decided, so every refusal can name what an operator
//! would change. Rules by operation name come first (the token's, then the global
//! ones; the first match decides); otherwise the hints decide, the strictest of
//! those that apply (`destructive`, `open-world`, not `read-only`), each taken from
//! the token when it sets it, else from `[approvals]`. Hints are the plugin's word;
//! an operator who does not trust them writes a rule by name, which no plugin or
//! manifest can lower.
//!
//! An agent profile's own policy (`approvals` of `[[agents]]` or a profile file,
//! carried by the [`Caller`] its turn runs as) only tightens: each one decides on
//! its own keys alone (its rules, else its hint values that apply) and the
//! strictest of those decisions and the caller's stands, so a profile's `allow`
//! never lowers what the token or `[approvals]` says.

use super::super::auth::{Allowlist, Caller};
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

    /// The decision for `caller` calling `tool` with `hints`: its token's and the
    /// global policy's, tightened by every agent profile policy it runs under.
    pub(crate) fn decide_for(&self, caller: &Caller, tool: &str, hints: &Hints) -> Decision {
        let mut decision = self.decide(caller.name(), tool, hints);
        for profile in caller.profile_approvals() {
            let level = token_level_at(profile.prefix.clone(), &profile.policy);
            if let Some(own) = level.decide_alone(tool, hints)
                && own.action > decision.action
            {
                decision = own;
            }
        }
        decision
    }

    /// The decision for `caller` (a token name) calling `tool` with `hints`.
    pub(crate) fn decide(&self, caller: &str, tool: &str, hints: &Hints) -> Decision {
        let token = self.tokens.get(caller);
        let levels = token.into_iter().chain(std::iter::once(&self.global));
        if let Some(decision) = levels.clone().find_map(|level| level.rule(tool)) {
            return decision;
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

impl Level {
    /// What its first rule matching `tool` says, if one does.
    fn rule(&self, tool: &str) -> Option<Decision> {
        let (i, (_, action)) = self.rules.iter().enumerate().find(|(_, (m, _))| m.allows(tool))?;
        Some(Decision {
            action: *action,
            key: Some(format!("{}.rules[{i}]", self.prefix)),
        })
    }

    /// What this level says by its own keys only: its first matching rule, else
    /// the strictest of its hint values that apply; `None` when none does.
    fn decide_alone(&self, tool: &str, hints: &Hints) -> Option<Decision> {
        if let Some(decision) = self.rule(tool) {
            return Some(decision);
        }
        [
            (hints.destructive, "destructive", self.destructive),
            (hints.open_world, "open_world", self.open_world),
            (!hints.read_only, "writes", self.writes),
        ]
        .into_iter()
        .filter_map(|(applies, name, action)| Some((name, action.filter(|_| applies)?)))
        .fold(None, |best: Option<Decision>, (name, action)| match best {
            Some(b) if b.action >= action => Some(b),
            _ => Some(Decision {
                action,
                key: Some(format!("{}.{name}", self.prefix)),
            }),
        })
    }
}

fn token_level(name: &str, approvals: &TokenApprovals) -> Level {
    token_level_at(format!("tokens[name={name}].approvals"), approvals)
}

fn token_level_at(prefix: String, approvals: &TokenApprovals) -> Level {
    Level {
        prefix,
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

    #[test]
    fn a_profile_policy_only_tightens_the_callers() {
        let ops = token(
            "ops",
            TokenApprovals {
                destructive: Some(Allow),
                ..TokenApprovals::default()
            },
        );
        let p = Policy::new(&ApprovalsConfig::default(), &[ops]);
        let profile = |policy: TokenApprovals| crate::hub::ProfileApprovals {
            prefix: "agents[name=w].approvals".into(),
            policy,
        };
        let caller = Caller::unchecked("ops", Allowlist::all()).tightened(profile(TokenApprovals {
            open_world: Some(Ask),
            destructive: Some(Allow),
            rules: vec![ApprovalRule {
                tools: vec!["calc.*".into()],
                action: Deny,
            }],
            ..TokenApprovals::default()
        }));
        assert_eq!(
            p.decide_for(&caller, "fetch.get", &hints(true, false, true)),
            decision(Ask, "agents[name=w].approvals.open_world")
        );
        assert_eq!(
            p.decide_for(&caller, "calc.eval", &hints(true, false, false)),
            decision(Deny, "agents[name=w].approvals.rules[0]")
        );
        // Its allow does not lower the global `ask` of a token without its own.
        let web = Caller::unchecked("web", Allowlist::all()).tightened(profile(TokenApprovals {
            destructive: Some(Allow),
            ..TokenApprovals::default()
        }));
        assert_eq!(
            p.decide_for(&web, "db.drop", &hints(false, true, false)),
            decision(Ask, "approvals.destructive")
        );
        // A sub-agent's profile adds to its caller's: both apply.
        let nested = caller.tightened(crate::hub::ProfileApprovals {
            prefix: "agents[name=sub].approvals".into(),
            policy: TokenApprovals {
                writes: Some(Deny),
                ..TokenApprovals::default()
            },
        });
        assert_eq!(
            p.decide_for(&nested, "notes.add", &hints(false, false, true)),
            decision(Deny, "agents[name=sub].approvals.writes")
        );
        assert_eq!(
            p.decide_for(&nested, "fetch.get", &hints(true, false, true)),
            decision(Ask, "agents[name=w].approvals.open_world")
        );
    }
}
