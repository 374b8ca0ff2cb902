//! The `wasmhub` binary: everything lives in the library; see `cli`.

// Every call creates and drops a wasmtime Store, a WASI context and a few JSON
// values; glibc's malloc spent ~15% of the request path in its slow paths
// (consolidation, bin unlinking). jemalloc, measured side by side under wrk: about
// +16-19% hub_call throughput for ~+10 MB RSS under load. mimalloc was as fast but
// held 2-3x glibc's RSS (100 MB idle) with its default arena settings.
// Reproduce: bench/mcp.sh (WASMHUB_BIN) on a build with and one without
// these two lines (mimalloc by LD_PRELOAD on the latter), in alternating runs.
#[global_allocator]
static ALLOCATOR: tikv_jemallocator::Jemalloc = tikv_jemallocator::Jemalloc;

/// jemalloc's options, read before `main` (jemalloc is the process's `malloc`, built
/// unprefixed: see host/Cargo.toml).
/// By default jemalloc returns freed pages only while the process keeps allocating,
/// so an idle hub kept every page its busiest moment used (compiling a plugin: about
/// 100 MB more at idle after start). A background thread now purges pages unused
/// for 1 s, and muzzy pages at once. `MALLOC_CONF` in the environment still overrides.
#[unsafe(export_name = "malloc_conf")]
static MALLOC_CONF: &u8 = &b"background_thread:true,dirty_decay_ms:1000,muzzy_decay_ms:0\0"[0];

fn main() -> std::process::ExitCode {
    wasmhub::cli::main(std::env::args().skip(1).collect())
}
