//! `[approvals]` and each token's `approvals`: which calls need a person's yes
//! before they run. The decision itself is `hub::approval`'s; this is the shape of
//! the file.

use serde::Deserialize;

/// What happens to a call a policy entry matches.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum ApprovalAction {
    /// It runs.
    Allow,
    /// A person must approve it first (where the surface can ask one, or an
    /// operator through `POST /api/approvals/{id}`); otherwise `approval_required`.
    Ask,
    /// It never runs: `approval_required`, naming the key that denies it.
    Deny,
}

impl ApprovalAction {
    /// The value as written in the file.
    pub fn as_str(self) -> &'static str {
        match self {
            ApprovalAction::Allow => "allow",
            ApprovalAction::Ask => "ask",
            ApprovalAction::Deny => "deny",
        }
    }
}

/// One rule: the operations it matches and what happens to them. Rules are
/// checked in order, before the hint defaults; the first match decides.
#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ApprovalRule {
    /// Operation patterns, as in a token's `allow`: `files.*`, `text.slugify`, `*`.
    pub tools: Vec<String>,
    /// What happens to a call of a matching operation.
    pub action: ApprovalAction,
}

/// The global policy (`[approvals]`).
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct ApprovalsConfig {
    /// Operations hinted `destructive`.
    pub destructive: ApprovalAction,
    /// Operations hinted `open-world` (they reach the network or other systems).
    pub open_world: ApprovalAction,
    /// Operations not hinted `read-only`.
    pub writes: ApprovalAction,
    /// How long a call that needs an approval waits for an operator's decision
    /// (`POST /api/approvals/{id}`) on a surface that cannot ask its user; 0: it
    /// fails at once with `approval_required`.
    pub wait_secs: u64,
    /// Most calls waiting for an operator at once; past it a call that needs an
    /// approval fails with `approval_required`.
    pub max_pending: usize,
    /// Rules by operation name, checked first, in order.
    pub rules: Vec<ApprovalRule>,
}

impl Default for ApprovalsConfig {
    fn default() -> Self {
        ApprovalsConfig {
            destructive: ApprovalAction::Ask,
            open_world: ApprovalAction::Allow,
            writes: ApprovalAction::Allow,
            wait_secs: 0,
            max_pending: 256,
            rules: Vec::new(),
        }
    }
}

/// A token's own policy (`[[tokens]]` `approvals = {...}`): what it sets replaces
/// the global value for that token's calls; its rules are checked before the
/// global ones.
#[derive(Debug, Clone, Default, PartialEq, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct TokenApprovals {
    /// Replaces `approvals.destructive` for this token.
    pub destructive: Option<ApprovalAction>,
    /// Replaces `approvals.open_world` for this token.
    pub open_world: Option<ApprovalAction>,
    /// Replaces `approvals.writes` for this token.
    pub writes: Option<ApprovalAction>,
    /// Rules checked before the global rules.
    pub rules: Vec<ApprovalRule>,
}
