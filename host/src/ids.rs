//! Random identifiers (call ids, session ids, MCP session ids, message ids).
//!
//! Ids are 128 random bits from the OS in lowercase hex with a short prefix naming
//! what they identify, so a log line or a stored record says what an id is. Each
//! thread fetches the OS's random bytes [`BATCH`] at a time: a call id per call was
//! a `getrandom` system call per call. Every byte is used once, then zeroed.

use std::cell::RefCell;

/// Random bytes fetched from the OS at once, per thread (256 ids).
const BATCH: usize = 4096;

/// A thread's unused random bytes: `bytes[used..]`.
struct Pool {
    bytes: [u8; BATCH],
    used: usize,
}

thread_local! {
    static POOL: RefCell<Pool> = const { RefCell::new(Pool { bytes: [0; BATCH], used: BATCH }) };
}

/// Fills `out` with random bytes from this thread's pool, fetching a new batch from
/// the OS when it runs out.
fn fill(out: &mut [u8; 16]) {
    POOL.with_borrow_mut(|pool| {
        if pool.used + out.len() > BATCH {
            getrandom::fill(&mut pool.bytes).expect("the OS random source is available");
            pool.used = 0;
        }
        let taken = &mut pool.bytes[pool.used..pool.used + out.len()];
        out.copy_from_slice(taken);
        taken.fill(0);
        pool.used += out.len();
    });
}

/// 16 fresh random bytes (trace and span ids, `telemetry`).
pub(crate) fn random_bytes() -> [u8; 16] {
    let mut bytes = [0u8; 16];
    fill(&mut bytes);
    bytes
}

/// A fresh id such as `call_3f9a…` (prefix, `_`, 32 hex digits).
pub fn new_id(prefix: &str) -> String {
    let mut bytes = [0u8; 16];
    fill(&mut bytes);
    let mut id = String::with_capacity(prefix.len() + 33);
    id.push_str(prefix);
    id.push('_');
    for b in bytes {
        id.push(char::from_digit((b >> 4) as u32, 16).unwrap());
        id.push(char::from_digit((b & 0xf) as u32, 16).unwrap());
    }
    id
}

/// This process's id among the hub's replicas, `<host name>-<pid>-<8 hex>`: the
/// owner of the leases it holds and the writer of the records it stores.
pub fn replica_id() -> &'static str {
    static ID: std::sync::OnceLock<String> = std::sync::OnceLock::new();
    ID.get_or_init(|| {
        let host = std::fs::read_to_string("/proc/sys/kernel/hostname")
            .map(|h| h.trim().to_string())
            .unwrap_or_default();
        let host = if host.is_empty() {
            "wasmhub".to_string()
        } else {
            host
        };
        let random = new_id("r");
        format!("{host}-{}-{}", std::process::id(), &random[2..10])
    })
}

/// Whether `id` is acceptable as a client-chosen id: 1-128 chars of `[A-Za-z0-9_-]`.
/// Used for ids that arrive in URLs and request bodies (sessions, messages).
pub fn is_valid_client_id(id: &str) -> bool {
    !id.is_empty()
        && id.len() <= 128
        && id
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b == b'_' || b == b'-')
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ids_are_prefixed_unique_and_hex() {
        let a = new_id("call");
        let b = new_id("call");
        assert_ne!(a, b);
        assert!(a.starts_with("call_"));
        assert_eq!(a.len(), 5 + 32);
        assert!(a[5..].bytes().all(|c| c.is_ascii_hexdigit()));
    }

    #[test]
    fn ids_stay_unique_across_batches_and_threads() {
        // 3 batches' worth on each of two threads: every id differs from every other.
        let ids_of_a_thread = || (0..3 * BATCH / 16).map(|_| new_id("c")).collect::<Vec<_>>();
        let other = std::thread::spawn(ids_of_a_thread);
        let mut all = ids_of_a_thread();
        all.extend(other.join().unwrap());
        let distinct: std::collections::HashSet<&String> = all.iter().collect();
        assert_eq!(distinct.len(), 6 * BATCH / 16);
    }

    #[test]
    fn client_ids_are_checked() {
        assert!(is_valid_client_id("chat-1_AB"));
        assert!(!is_valid_client_id(""));
        assert!(!is_valid_client_id("../etc"));
        assert!(!is_valid_client_id(&"a".repeat(129)));
    }
}
