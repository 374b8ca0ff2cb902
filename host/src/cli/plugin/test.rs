//! `wasmhub plugin test FILE`: runs every example of every operation (WIT 0.2.0)
//! through the real sandbox, the hinted `destructive` and `open-world` ones too
//! (the author asked), and prints one line per example and a closing count.

use super::{StartError, print_problems, with_runtime};
use crate::runtime::{ExampleOutcome, ExampleReports, ExampleScope, LoadError, Plugin, WitVersion};
use std::path::Path;
use std::process::ExitCode;
use std::sync::Arc;

/// Exit 0 when every example passed (and there was at least one), 1 otherwise, 2
/// when the runtime could not start.
pub(crate) fn test(path: &Path) -> ExitCode {
    let run = with_runtime(|runtime| async move {
        let plugin = runtime.load_unverified(path).await?;
        let reports = runtime.run_examples(&plugin, ExampleScope::All).await;
        Ok::<_, LoadError>((plugin, reports))
    });
    match run {
        Err(e) => fail(&e),
        Ok(Err(e)) => {
            print_problems(path, &e);
            ExitCode::from(1)
        }
        Ok(Ok((plugin, reports))) => report(&plugin, &reports),
    }
}

fn fail(e: &StartError) -> ExitCode {
    eprintln!("wasmhub plugin test: {e}");
    ExitCode::from(2)
}

fn report(plugin: &Arc<Plugin>, reports: &ExampleReports) -> ExitCode {
    let name = plugin.name();
    if reports.0.is_empty() {
        let why = match plugin.wit_version() {
            WitVersion::V0_1 => {
                "it targets wasmhub:plugin@0.1.0, which has no examples; rebuild it against 0.2.0"
            }
            _ => "its operations list none; add examples to them",
        };
        println!("{name}: no examples to run: {why}");
        return ExitCode::from(1);
    }
    let (mut passed, mut failed) = (0, 0);
    for r in &reports.0 {
        match &r.outcome {
            ExampleOutcome::Passed => {
                passed += 1;
                println!("ok    {name}.{} example {}: {}", r.op, r.index, r.description);
            }
            ExampleOutcome::Failed(e) => {
                failed += 1;
                println!(
                    "FAIL  {name}.{} example {}: {}: {}",
                    r.op, r.index, r.description, e.failure
                );
            }
            // `ExampleScope::All` skips nothing; kept exhaustive for the loader's scope.
            ExampleOutcome::Skipped => println!("skip  {name}.{} example {}", r.op, r.index),
        }
    }
    println!("{name}: {passed} passed, {failed} failed");
    if failed == 0 {
        ExitCode::SUCCESS
    } else {
        ExitCode::from(1)
    }
}
