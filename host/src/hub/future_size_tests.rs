//! The guest's call (wasmtime's instantiation and run) is boxed in `Source::call`,
//! so the futures above it (moved by value from frame to frame on every call) do
//! not carry its kilobytes.

use super::meta_tools::MetaToolRequest;
use super::source::Source;
use super::{CallContext, Hub};
use crate::runtime::{Invocation, Plugin};
use std::future::Future;

/// The size of the future `f` returns (never called).
fn future3<A, B, C, F: Future>(_f: &impl Fn(A, B, C) -> F) -> usize {
    size_of::<F>()
}

fn future4<A, B, C, D, F: Future>(_f: &impl Fn(A, B, C, D) -> F) -> usize {
    size_of::<F>()
}

#[test]
fn the_source_call_future_does_not_carry_the_guest_call() {
    let guest = future4(
        &|p: &'static Plugin, op: &'static str, input: &'static str, inv: Invocation| p.call(op, input, inv),
    );
    let source = future4(
        &|s: &'static Source, op: &'static str, input: &'static str, inv: Invocation| s.call(op, input, inv),
    );
    let invoke = future3(&|h: &'static Hub, r: MetaToolRequest, c: CallContext| h.invoke(r, c));
    println!("future sizes: Plugin::call {guest} B, Source::call {source} B, Hub::invoke {invoke} B");
    assert!(
        source < guest,
        "Source::call ({source} B) holds the guest call ({guest} B)"
    );
}
