//! `wasmhub tokens`: counts (or lists) the tokens of files with a configured tokenizer,
//! the same code the context guard and accounting count with, so an operator can check
//! a tokenizer file and see what a text costs.

use super::args::{Args, UsageError};
use super::{CONFIG_FLAGS, CONFIG_FLAGS_HELP, load_config};
use crate::llm::tokenizer::{Spec, Tokenizer};
use std::process::ExitCode;

/// Runs `wasmhub tokens --tokenizer SPEC [--ids] FILE...`.
pub(super) fn command(argv: &[String]) -> Result<ExitCode, UsageError> {
    let mut with_value = CONFIG_FLAGS.to_vec();
    with_value.push("tokenizer");
    let args = Args::parse(argv, &with_value, &["ids", "help"])?;
    if args.switch("help") {
        println!(
            "Usage: wasmhub tokens --tokenizer SPEC [--ids] FILE...\n\n\
             Prints each FILE's token count and name (with --ids: its token ids, one line per file).\n\n\
             Options:\n{CONFIG_FLAGS_HELP}\n  \
             --tokenizer SPEC  tiktoken:o200k_base, tiktoken:cl100k_base (NAME.tiktoken in tokenizers.dir,\n                    \
             default DATA/tokenizers), anthropic:claude (claude.json in tokenizers.dir),\n                    \
             sentencepiece:NAME (NAME.model in tokenizers.dir), sentencepiece:/path/tokenizer.model\n                    \
             or file:/path/x.tiktoken (or x.json)\n  \
             --ids             print the token ids instead of the count"
        );
        return Ok(ExitCode::SUCCESS);
    }
    let spec: Spec = args
        .value("tokenizer")
        .ok_or_else(|| UsageError("--tokenizer SPEC is required".into()))?
        .parse()
        .map_err(|e| UsageError(format!("--tokenizer: {e}")))?;
    if args.positional.is_empty() {
        return Err(UsageError("name at least one FILE to count".into()));
    }
    let config = match load_config(&args) {
        Ok(c) => c,
        Err(e) => return fail(&e),
    };
    let dir = config.tokenizers.dir(&config.data_dir);
    let tokenizer = match Tokenizer::load(&spec, &dir, config.tokenizers.max_file_kb) {
        Ok(t) => t,
        Err(e) => return fail(&e.to_string()),
    };
    for file in &args.positional {
        let text = match std::fs::read(file).map(String::from_utf8) {
            Ok(Ok(text)) => text,
            Ok(Err(_)) => return fail(&format!("{file} is not UTF-8 text")),
            Err(e) => return fail(&format!("cannot read {file}: {e}")),
        };
        if args.switch("ids") {
            let ids: Vec<String> = tokenizer.encode(&text).iter().map(u32::to_string).collect();
            println!("{}", ids.join(" "));
        } else {
            println!("{}\t{file}", tokenizer.count(&text));
        }
    }
    Ok(ExitCode::SUCCESS)
}

fn fail(message: &str) -> Result<ExitCode, UsageError> {
    eprintln!("wasmhub tokens: {message}");
    Ok(ExitCode::FAILURE)
}
