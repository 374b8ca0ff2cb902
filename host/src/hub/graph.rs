//! The call graph: where a running call sits ([`Frame`]: its chain of tools, its
//! deadline, cancel token and caller) and the bounds a nested call must stay within
//! before it may run (no cycles, `limits.max_call_depth`, `limits.max_fanout` per
//! call, and `limits.max_calls_per_request` for the whole tree of one top-level call).

use super::auth::Caller;
use super::cancel::CancelToken;
use super::error::{CallError, ErrorCode, Limit};
use super::registry::Registry;
use crate::config::TreeLimits;
use crate::runtime::Deadline;
use std::sync::Arc;
use std::sync::atomic::{AtomicU32, Ordering};

/// Where a running call sits in the call graph.
pub(super) struct Frame {
    pub(super) id: String,
    /// Tools from the top-level call down to this one.
    pub(super) chain: Vec<String>,
    pub(super) deadline: Deadline,
    pub(super) cancel: CancelToken,
    pub(super) caller: Caller,
    /// Who approved the invocation's calls ahead (`wasmhub call --approve`).
    pub(super) approved_by: Option<String>,
    /// The chat session the tree's calls are accounted to.
    pub(super) session: Option<Arc<str>>,
    /// The named agent whose turn made the tree's first call.
    pub(super) agent: Option<Arc<str>>,
    pub(super) registry: Arc<Registry>,
    /// Nested calls made so far (bounded by `limits.max_fanout`).
    pub(super) nested: AtomicU32,
    /// Calls of the whole tree so far, shared by every frame of it (bounded by
    /// `limits.max_calls_per_request`).
    pub(super) tree_calls: Arc<AtomicU32>,
    /// The call's span: the parent of its nested calls' spans and of its
    /// outbound requests'.
    pub(super) trace: Option<crate::telemetry::SpanContext>,
}

/// The chain of a nested call to `tool` from `parent`, or why it may not run.
pub(super) fn check_graph(parent: &Frame, tool: &str, limits: &TreeLimits) -> Result<Vec<String>, CallError> {
    let mut chain = parent.chain.clone();
    chain.push(tool.to_string());
    if parent.chain.iter().any(|t| t == tool) {
        return Err(CallError::new(
            ErrorCode::CallLimit,
            format!(
                "call cycle: {} (a call may not call an operation it is already inside)",
                chain.join(" -> ")
            ),
        ));
    }
    let depth = chain.len() - 1;
    if depth > limits.max_call_depth as usize {
        return Err(CallError::limit(
            Limit::CallDepth,
            format!(
                "nested calls go deeper than {} = {}: {}",
                Limit::CallDepth.key(),
                limits.max_call_depth,
                chain.join(" -> ")
            ),
        ));
    }
    let made = parent.nested.fetch_add(1, Ordering::Relaxed) + 1;
    if made > limits.max_fanout {
        return Err(CallError::limit(
            Limit::Fanout,
            format!(
                "{} made more than {} = {} nested calls",
                parent.chain.last().map_or("", String::as_str),
                Limit::Fanout.key(),
                limits.max_fanout
            ),
        ));
    }
    let in_tree = parent.tree_calls.fetch_add(1, Ordering::Relaxed) + 1;
    if in_tree > limits.max_calls_per_request {
        return Err(CallError::limit(
            Limit::CallsPerRequest,
            format!(
                "{} would be call {in_tree} of one request, over {} = {}: a top-level call and all its nested calls together may make at most that many; do the work in fewer nested calls or split it over several requests",
                chain.join(" -> "),
                Limit::CallsPerRequest.key(),
                limits.max_calls_per_request
            ),
        ));
    }
    Ok(chain)
}

#[cfg(test)]
mod tests {
    use super::*;
    use tokio::time::Instant;

    fn frame(chain: &[&str]) -> Frame {
        Frame {
            id: "call_1".into(),
            chain: chain.iter().map(|s| s.to_string()).collect(),
            deadline: Instant::now().into(),
            cancel: CancelToken::new(),
            caller: Caller::local(Arc::new(crate::hub::StorageQuota::unlimited())),
            approved_by: None,
            session: None,
            agent: None,
            registry: Arc::new(Registry::empty()),
            nested: AtomicU32::new(0),
            tree_calls: Arc::new(AtomicU32::new(1)),
            trace: None,
        }
    }

    #[test]
    fn cycles_are_cut_naming_the_chain() {
        let e = check_graph(
            &frame(&["a.x", "b.y"]),
            "a.x",
            &crate::config::Limits::default().tree,
        )
        .unwrap_err();
        assert_eq!(e.code, ErrorCode::CallLimit);
        assert!(e.message.contains("a.x -> b.y -> a.x"), "{}", e.message);
    }

    #[test]
    fn depth_is_bounded() {
        let limits = TreeLimits {
            max_call_depth: 2,
            ..crate::config::Limits::default().tree
        };
        assert_eq!(
            check_graph(&frame(&["a.a", "b.b"]), "c.c", &limits).unwrap(),
            ["a.a", "b.b", "c.c"]
        );
        let e = check_graph(&frame(&["a.a", "b.b", "c.c"]), "d.d", &limits).unwrap_err();
        assert!(
            e.message.contains("max_call_depth = 2") && e.message.contains("a.a -> b.b -> c.c -> d.d"),
            "{}",
            e.message
        );
    }

    #[test]
    fn fan_out_is_bounded_per_call() {
        let limits = TreeLimits {
            max_fanout: 3,
            ..crate::config::Limits::default().tree
        };
        let parent = frame(&["a.a"]);
        for _ in 0..3 {
            check_graph(&parent, "b.b", &limits).unwrap();
        }
        let e = check_graph(&parent, "b.b", &limits).unwrap_err();
        assert!(e.message.contains("max_fanout = 3"), "{}", e.message);
    }

    #[test]
    fn the_whole_call_tree_shares_one_call_budget() {
        let limits = TreeLimits {
            max_calls_per_request: 4,
            ..crate::config::Limits::default().tree
        };
        let top = frame(&["a.a"]);
        // Two children of the top call, each with a child of its own: 1 + 2 + 2 > 4.
        let child = |name: &str| Frame {
            chain: vec!["a.a".into(), name.into()],
            tree_calls: top.tree_calls.clone(),
            ..frame(&[])
        };
        check_graph(&top, "b.b", &limits).unwrap();
        check_graph(&top, "c.c", &limits).unwrap();
        check_graph(&child("b.b"), "d.d", &limits).unwrap();
        let e = check_graph(&child("c.c"), "d.d", &limits).unwrap_err();
        assert_eq!(
            (e.code, e.limit),
            (ErrorCode::CallLimit, Some(Limit::CallsPerRequest))
        );
        assert!(
            e.message.contains("a.a -> c.c -> d.d would be call 5")
                && e.message.contains("limits.max_calls_per_request = 4"),
            "{}",
            e.message
        );
        assert_eq!(e.to_json()["limit"], "limits.max_calls_per_request");
    }
}
