//! The `wasmhub` command: parses the command line and runs one subcommand.
//!
//! Subcommands live in their own modules; this file only holds the help texts, the
//! shared configuration flags, and the dispatch.

mod args;
pub mod call;
mod config_watch;
mod hub_api;
pub mod mcp;
mod oauth;
pub mod plugin;
pub mod scaffold;
mod secret;
pub mod serve;
mod signals;
mod tokens;

use crate::config::Config;
use args::{Args, UsageError};
use std::path::PathBuf;
use std::process::ExitCode;

const HELP: &str = "\
wasmhub: an LLM tool hub for WebAssembly component plugins

Usage: wasmhub <command> [options]

Commands:
  serve                 run the hub's HTTP server (MCP, OpenAI proxy, chat, REST)
  mcp --stdio           serve MCP over stdin/stdout for desktop clients
  call TOOL JSON        run one operation locally, without a server
  plugin new NAME       scaffold a plugin project (--lang rust|python|js)
  plugin check FILE     check a plugin component and say what is wrong with it
  plugin test FILE      run every example of a plugin's operations in the sandbox
  plugin wit [--out D]  print (or write into D) the WIT contract this binary serves
  plugin inspect FILE   show a plugin's operations, schemas, imports and grants
  plugin lock [DIR]     pin every plugin's sha256 in DIR/plugins.lock
  plugin pull REF       pull a plugin from an OCI registry into the plugins folder
  plugin push FILE REF  push a plugin (and its manifest and signature) to an OCI registry
  plugin sync           pull every [[plugins.sources]] of the configuration
  plugin keygen         make an Ed25519 signing key
  plugin sign FILE      sign a plugin (FILE.sig) with --key KEY
  oauth code NAME       a one-time sign-in code for principal NAME, from the running hub
  secret set|list|rm    plugin secrets, sealed in the hub's storage (value from stdin)
  secret keygen FILE    make the key secrets are sealed with
  tokens FILE...        count a file's tokens with a tokenizer (--tokenizer tiktoken:o200k_base)

Run `wasmhub <command> --help` for its options.
";

const CONFIG_FLAGS_HELP: &str = "\
  --config FILE     configuration file (default: wasmhub.toml here, if present)
  --plugins DIR     folder of built .wasm plugins (config: plugins_dir)
  --data DIR        data folder for the store (config: data_dir)
  --set KEY=VALUE   set any config key, dotted (limits.memory_mb=128, agent.model=x);
                    VALUE is TOML or plain text; repeatable, applied after the file";

/// Flags every subcommand that loads the configuration accepts.
const CONFIG_FLAGS: [&str; 4] = ["config", "plugins", "data", "set"];

/// Runs the command line `argv` (without the program name).
pub fn main(argv: Vec<String>) -> ExitCode {
    crate::logging::init_from_env();
    let Some((command, rest)) = argv.split_first() else {
        eprint!("{HELP}");
        return ExitCode::from(2);
    };
    let result = match command.as_str() {
        "serve" => serve_command(rest),
        "mcp" => mcp_command(rest),
        "call" => call_command(rest),
        "plugin" => plugin_command(rest),
        "oauth" => oauth_command(rest),
        "secret" => secret_command(rest),
        "tokens" => tokens::command(rest),
        "-h" | "--help" | "help" => {
            print!("{HELP}");
            Ok(ExitCode::SUCCESS)
        }
        "-V" | "--version" => {
            println!("wasmhub {}", env!("CARGO_PKG_VERSION"));
            Ok(ExitCode::SUCCESS)
        }
        other => Err(UsageError(format!(
            "unknown command {other:?}; run `wasmhub --help`"
        ))),
    };
    match result {
        Ok(code) => code,
        Err(e) => {
            eprintln!("wasmhub {command}: {e}");
            ExitCode::from(2)
        }
    }
}

/// Loads the configuration named by `--config` (or the default) and applies the
/// flag overrides. The error names the file and the problem.
fn load_config(args: &Args) -> Result<Config, String> {
    let mut config = Config::load_with(args.value("config").map(std::path::Path::new), args.values("set"))
        .map_err(|e| e.to_string())?;
    if let Some(dir) = args.value("plugins") {
        config.plugins_dir = PathBuf::from(dir);
    }
    if let Some(dir) = args.value("data") {
        config.data_dir = PathBuf::from(dir);
    }
    if let Some(listen) = args.value("listen") {
        config.listen = listen
            .parse()
            .map_err(|_| format!("--listen {listen:?} is not an address like 127.0.0.1:8787"))?;
    }
    config.apply_openai_env_default();
    config.apply_openrouter_referer();
    Ok(config)
}

fn serve_command(argv: &[String]) -> Result<ExitCode, UsageError> {
    let mut with_value = CONFIG_FLAGS.to_vec();
    with_value.push("listen");
    let args = Args::parse(
        argv,
        &with_value,
        &["locked", "insecure-http", "trace-llm", "help"],
    )?;
    if args.switch("help") {
        println!(
            "Usage: wasmhub serve [options]\n\nRuns the hub's HTTP server.\n\nOptions:\n{CONFIG_FLAGS_HELP}\n  \
             --listen ADDR     address to bind (config: listen; default 127.0.0.1:8787)\n  \
             --locked          refuse plugins not pinned in plugins.lock, and [[plugins.sources]] tags that moved\n  \
             --insecure-http   plain HTTP to registries that are not on loopback (plugins.insecure_http)\n  \
             --trace-llm       write every upstream model request and response to the trace file, secrets\n                    \
             redacted (llm_trace.enabled; file: llm_trace.file, default DATA/logs/llm-trace.log)"
        );
        return Ok(ExitCode::SUCCESS);
    }
    args.at_most(0)?;
    let mut config = match load_config(&args) {
        Ok(c) => c,
        Err(e) => {
            eprintln!("wasmhub serve: {e}");
            return Ok(ExitCode::FAILURE);
        }
    };
    config.llm_trace.enabled |= args.switch("trace-llm");
    // The file `load_config` read, which `serve` follows for [[mcp_servers]].
    let file = match args.value("config") {
        Some(path) => Some(PathBuf::from(path)),
        None => Some(PathBuf::from("wasmhub.toml")).filter(|p| p.exists()),
    };
    let locked = args.switch("locked");
    let insecure_http = args.switch("insecure-http");
    let watched = file.map(|file| {
        let reload: config_watch::Reload = std::sync::Arc::new(move || load_config(&args));
        (file, reload)
    });
    Ok(serve::run(
        config,
        serve::ServeFlags {
            locked,
            insecure_http,
            config_file: watched,
        },
    ))
}

fn mcp_command(argv: &[String]) -> Result<ExitCode, UsageError> {
    let args = Args::parse(argv, &CONFIG_FLAGS, &["stdio", "help"])?;
    if args.switch("help") {
        println!(
            "Usage: wasmhub mcp --stdio [options]\n\nServes MCP over stdin/stdout (newline-delimited JSON-RPC; logs on \
             stderr).\nOver HTTP, MCP is part of `wasmhub serve` at /mcp.\n\nOptions:\n{CONFIG_FLAGS_HELP}"
        );
        return Ok(ExitCode::SUCCESS);
    }
    args.at_most(0)?;
    if !args.switch("stdio") {
        return Err(UsageError(
            "mcp needs --stdio (over HTTP, MCP is served by `wasmhub serve` at /mcp)".into(),
        ));
    }
    let config = match load_config(&args) {
        Ok(c) => c,
        Err(e) => {
            eprintln!("wasmhub mcp: {e}");
            return Ok(ExitCode::FAILURE);
        }
    };
    Ok(mcp::run_stdio(config))
}

fn oauth_command(argv: &[String]) -> Result<ExitCode, UsageError> {
    let mut with_value = CONFIG_FLAGS.to_vec();
    with_value.extend(["hub", "token-env"]);
    let args = Args::parse(argv, &with_value, &["help"])?;
    if args.switch("help") {
        println!(
            "Usage: wasmhub oauth code NAME [options]\n\nAsks the running hub for a one-time sign-in code for the \
             principal NAME (a [[tokens]] entry's name; the grant runs under its policy) and prints it. A person \
             types it on the hub's sign-in page when an OAuth client (Claude, ChatGPT, VS Code, Cursor) connects.\n\n\
             Options:\n  --hub URL         the hub (default: oauth.public_url, else http://LISTEN)\n  \
             --token-env VAR   the environment variable holding an operator token (default WASMHUB_TOKEN)\n\
             {CONFIG_FLAGS_HELP}"
        );
        return Ok(ExitCode::SUCCESS);
    }
    args.at_most(2)?;
    let principal = match args.positional.as_slice() {
        [code, name] if code == "code" => name.as_str(),
        _ => return Err(UsageError("usage: wasmhub oauth code NAME".into())),
    };
    let config = match load_config(&args) {
        Ok(c) => c,
        Err(e) => {
            eprintln!("wasmhub oauth: {e}");
            return Ok(ExitCode::FAILURE);
        }
    };
    let url = hub_api::hub_url(&config, args.value("hub"));
    let token = std::env::var(args.value("token-env").unwrap_or("WASMHUB_TOKEN")).ok();
    Ok(oauth::code(&url, principal, token.as_deref()))
}

const SECRET_HELP: &str = "\
Usage: wasmhub secret <set|list|rm|keygen> ...

  secret set PLUGIN NAME     seal the value on stdin (never an argument) as PLUGIN's secret NAME;
                             the next call uses it, on every replica
  secret list [PLUGIN]       names, set or unset, since when or from where; never values
  secret rm PLUGIN NAME      remove a stored value
  secret keygen FILE         write a new sealing key to FILE (0600; never overwrites)
The key: secrets.key_file or secrets.key_env. The storage: [storage] (the data folder's embedded
database, which a running hub holds; or PostgreSQL). With --hub, set, rm and list go through
a running hub's API instead (an operator token; the hub holds the key).

Options:
  --hub URL         a running hub (set, rm, list): its URL, e.g. http://127.0.0.1:8787
  --token-env VAR   the environment variable holding an operator token (default WASMHUB_TOKEN)";

fn secret_command(argv: &[String]) -> Result<ExitCode, UsageError> {
    let mut with_value = CONFIG_FLAGS.to_vec();
    with_value.extend(["hub", "token-env"]);
    let args = Args::parse(argv, &with_value, &["help"])?;
    if args.switch("help") {
        println!("{SECRET_HELP}\n{CONFIG_FLAGS_HELP}");
        return Ok(ExitCode::SUCCESS);
    }
    let positional: Vec<&str> = args.positional.iter().map(String::as_str).collect();
    let command = match positional.as_slice() {
        ["keygen", file] => return Ok(secret::keygen(std::path::Path::new(file))),
        ["set", plugin, name] => secret::Command::Set { plugin, name },
        ["rm", plugin, name] => secret::Command::Remove { plugin, name },
        ["list"] => secret::Command::List { plugin: None },
        ["list", plugin] => secret::Command::List { plugin: Some(plugin) },
        ["set", _, _, _, ..] => {
            return Err(UsageError(
                "secret set takes the value from stdin, never as an argument: printf %s \"$KEY\" | wasmhub secret set PLUGIN NAME".into(),
            ));
        }
        _ => return Err(UsageError(format!("expected a subcommand\n{SECRET_HELP}"))),
    };
    let config = match load_config(&args) {
        Ok(c) => c,
        Err(e) => {
            eprintln!("wasmhub secret: {e}");
            return Ok(ExitCode::FAILURE);
        }
    };
    let token = std::env::var(args.value("token-env").unwrap_or("WASMHUB_TOKEN")).ok();
    let hub = args.value("hub").map(|flag| secret::Hub {
        url: hub_api::hub_url(&config, Some(flag)),
        token: token.as_deref(),
    });
    Ok(secret::run(command, &config, hub))
}

fn call_command(argv: &[String]) -> Result<ExitCode, UsageError> {
    let args = Args::parse(argv, &CONFIG_FLAGS, &["help", "approve"])?;
    if args.switch("help") {
        println!(
            "Usage: wasmhub call TOOL JSON [options]\n\nRuns one operation (`plugin.operation`) locally, without a \
             server, through the same validation and errors as hub_call.\nPrints the result JSON on stdout; errors \
             go to stderr with exit code 1.\n\nOptions:\n  --approve         approve the calls the approval policy \
             asks about (else they fail with approval_required)\n{CONFIG_FLAGS_HELP}"
        );
        return Ok(ExitCode::SUCCESS);
    }
    args.at_most(2)?;
    let [tool, input] = match args.positional.as_slice() {
        [tool, input] => [tool.as_str(), input.as_str()],
        [tool] => [tool.as_str(), "{}"],
        _ => {
            return Err(UsageError(
                "call needs TOOL and JSON, e.g. wasmhub call calc.eval '{\"expr\":\"1/3+1/6\"}'".into(),
            ));
        }
    };
    let config = match load_config(&args) {
        Ok(c) => c,
        Err(e) => {
            eprintln!("wasmhub call: {e}");
            return Ok(ExitCode::FAILURE);
        }
    };
    Ok(call::run(tool, input, &config, args.switch("approve")))
}

const PLUGIN_HELP: &str = "\
Usage: wasmhub plugin <new|check|test|inspect|lock|wit|pull|push|sync|keygen|sign> ...

  plugin new NAME [--lang rust|python|js] [--dir DIR]
                                scaffold a plugin project in DIR/NAME (default: ./NAME, Rust);
                                it builds with one command and needs no checkout of the hub
  plugin check FILE             check a component; each problem on its own line; exit 1 on any
  plugin test FILE              run every example of every operation in the sandbox; exit 1 on a failure
  plugin wit [--out DIR]        print the newest WIT package, or write every version served into DIR
  plugin inspect FILE [--json]  operations, schemas, imports and what its manifest grants
  plugin lock [DIR]             write DIR/plugins.lock (default DIR: ./dist/plugins)
  plugin pull REF [--dir DIR] [--name NAME] [--locked] [--insecure-http]
                                REF is oci://host[:port]/repo:tag or oci://host[:port]/repo@sha256:HEX;
                                writes NAME.wasm (NAME.toml, NAME.wasm.sig) into DIR (default: plugins_dir)
                                and pins digest and source in plugins.lock; --locked refuses a moved tag
  plugin push FILE REF [--insecure-http]
                                push FILE (with FILE's NAME.toml and FILE.sig, when present) to REF (a tag)
  plugin sync [--dir DIR] [--locked] [--insecure-http]
                                pull every [[plugins.sources]]; exit 1 when any fails
  plugin keygen [--out FILE]    write an Ed25519 private key to FILE (default wasmhub-signing.key), 0600,
                                and its public key to FILE.pub
  plugin sign FILE --key KEY    write FILE.sig: KEY's signature over FILE's sha256
Registry credentials: WASMHUB_REGISTRY_USERNAME/WASMHUB_REGISTRY_PASSWORD, else ~/.docker/config.json.
Plain HTTP is used for loopback registries only, unless --insecure-http (plugins.insecure_http).
pull, push, sync and inspect also take --config FILE and --set KEY=VALUE ([trust], [plugins]).";

fn plugin_command(argv: &[String]) -> Result<ExitCode, UsageError> {
    let mut with_value = vec!["dir", "out", "lang", "key", "name"];
    with_value.extend(CONFIG_FLAGS);
    let args = Args::parse(argv, &with_value, &["json", "help", "locked", "insecure-http"])?;
    let positional: Vec<&str> = args.positional.iter().map(String::as_str).collect();
    if args.switch("help") {
        println!("{PLUGIN_HELP}");
        return Ok(ExitCode::SUCCESS);
    }
    fn path(p: &str) -> &std::path::Path {
        std::path::Path::new(p)
    }
    match positional.as_slice() {
        ["check", file] => Ok(plugin::check(path(file))),
        ["test", file] => Ok(plugin::test(path(file))),
        ["wit"] => Ok(plugin::wit(args.value("out").map(path))),
        ["inspect", file] => Ok(with_config(&args, |c| {
            plugin::inspect(path(file), args.switch("json"), c)
        })),
        ["pull", reference] => Ok(with_config(&args, |c| {
            plugin::pull(c, reference, &oci_flags(&args))
        })),
        ["push", file, reference] => Ok(with_config(&args, |c| {
            plugin::push(c, path(file), reference, &oci_flags(&args))
        })),
        ["sync"] => Ok(with_config(&args, |c| plugin::sync(c, &oci_flags(&args)))),
        ["keygen"] => Ok(plugin::keygen(path(
            args.value("out").unwrap_or("wasmhub-signing.key"),
        ))),
        ["sign", file] => match args.value("key") {
            Some(key) => Ok(plugin::sign(path(file), path(key))),
            None => Err(UsageError(
                "sign needs --key KEY (made by `wasmhub plugin keygen`)".into(),
            )),
        },
        ["lock"] => Ok(plugin::lock(std::path::Path::new("dist/plugins"))),
        ["lock", dir] => Ok(plugin::lock(std::path::Path::new(dir))),
        ["new", name] => plugin_new(name, args.value("dir").unwrap_or("."), args.value("lang")),
        [] => Err(UsageError(format!("missing subcommand\n{PLUGIN_HELP}"))),
        [other, ..] => Err(UsageError(format!(
            "unknown or incomplete subcommand {other:?}\n{PLUGIN_HELP}"
        ))),
    }
}

/// The `--dir`, `--name`, `--locked` and `--insecure-http` of `pull`, `push`, `sync`.
fn oci_flags(args: &Args) -> plugin::OciFlags<'_> {
    plugin::OciFlags {
        dir: args.value("dir").map(std::path::Path::new),
        name: args.value("name"),
        locked: args.switch("locked"),
        insecure_http: args.switch("insecure-http"),
    }
}

/// Runs `work` with the configuration of `--config`/`--set`, or exits 1 naming
/// what is wrong with it.
fn with_config(args: &Args, work: impl FnOnce(&Config) -> ExitCode) -> ExitCode {
    match load_config(args) {
        Ok(config) => work(&config),
        Err(e) => {
            eprintln!("wasmhub plugin: {e}");
            ExitCode::from(1)
        }
    }
}

/// `plugin new NAME [--lang L] [--dir DIR]`: the SDK and the WIT come from inside
/// this binary, so the project builds without a checkout of the hub.
fn plugin_new(name: &str, dir: &str, lang: Option<&str>) -> Result<ExitCode, UsageError> {
    let lang = match lang {
        None => scaffold::Lang::Rust,
        Some(l) => scaffold::Lang::parse(l)
            .ok_or_else(|| UsageError(format!("unknown --lang {l:?}: use {}", scaffold::Lang::NAMES)))?,
    };
    Ok(match scaffold::scaffold(name, std::path::Path::new(dir), lang) {
        Ok(done) => {
            for file in &done.files {
                println!("created {}", file.display());
            }
            println!("\nnext, in {}:", done.root.display());
            for line in done.next_steps.lines() {
                println!("  {line}");
            }
            ExitCode::SUCCESS
        }
        Err(e) => {
            eprintln!("wasmhub plugin new: {e}");
            ExitCode::FAILURE
        }
    })
}
