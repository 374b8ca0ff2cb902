//! The `wasmhub` binary: everything lives in the library; see `cli`.

fn main() -> std::process::ExitCode {
    wasmhub::cli::main(std::env::args().skip(1).collect())
}
