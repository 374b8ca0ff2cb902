//! The `wasmhub` binary: everything lives in the library; see `cli`.

// Every call creates and drops a wasmtime Store, a WASI context and a few JSON
// values; glibc's malloc spent ~15% of the request path in its slow paths
// (consolidation, bin unlinking). jemalloc, measured side by side under wrk: about
// +16-19% hub_call throughput for ~+10 MB RSS under load. mimalloc was as fast but
// held 2-3x glibc's RSS (100 MB idle) with its default arena settings.
// Reproduce: scripts/bench-mcp.sh (WASMHUB_BIN) on a build with and one without
// these two lines (mimalloc by LD_PRELOAD on the latter), in alternating runs.
#[global_allocator]
static ALLOCATOR: tikv_jemallocator::Jemalloc = tikv_jemallocator::Jemalloc;

fn main() -> std::process::ExitCode {
    wasmhub::cli::main(std::env::args().skip(1).collect())
}
