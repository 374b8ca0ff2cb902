//! Unit tests of the configuration: defaults, unknown keys, `--set` overrides and
//! the cross-value checks, through their operator-facing messages.

use super::*;

#[test]
fn defaults_apply_to_an_empty_file() {
    let c = Config::parse("", Path::new("w.toml")).unwrap();
    assert_eq!(c.listen.to_string(), "127.0.0.1:8787");
    assert_eq!(c.agent.max_steps, 10);
    assert_eq!(c.limits.call.memory_mb, 64);
}

#[test]
fn unknown_keys_name_the_key_and_line() {
    let err = Config::parse(
        "listen = \"127.0.0.1:1\"\n[limits]\nmemroy_mb = 3\n",
        Path::new("w.toml"),
    )
    .unwrap_err()
    .to_string();
    assert!(err.contains("memroy_mb"), "{err}");
    assert!(err.contains("line 3"), "{err}");
    assert!(err.starts_with("w.toml"), "{err}");
}

#[test]
fn mcp_session_limits_are_server_keys_and_must_be_positive() {
    let c = Config::parse(
        "[server]\nmcp_max_sessions = 8\nmcp_session_idle_minutes = 2\n",
        Path::new("w.toml"),
    )
    .unwrap();
    assert_eq!(
        (c.server.mcp_max_sessions, c.server.mcp_session_idle_minutes),
        (8, 2)
    );
    let err = Config::parse("[server]\nmcp_max_sessions = 0\n", Path::new("w.toml"))
        .unwrap_err()
        .to_string();
    assert!(err.contains("server.mcp_max_sessions"), "{err}");
}

fn with_overrides(file: &str, overrides: &[&str]) -> Result<Config, ConfigError> {
    let dir = std::env::temp_dir().join(crate::ids::new_id("wasmhub-config"));
    std::fs::create_dir_all(&dir).unwrap();
    let path = dir.join("w.toml");
    std::fs::write(&path, file).unwrap();
    let overrides: Vec<String> = overrides.iter().map(|s| s.to_string()).collect();
    let result = Config::load_with(Some(&path), &overrides);
    let _ = std::fs::remove_dir_all(&dir);
    result
}

#[test]
fn set_overrides_any_key_after_the_file() {
    let c = with_overrides(
        "[limits]\nmemory_mb = 32\n[agent]\nmax_steps = 4\n",
        &[
            "limits.memory_mb=128",
            "agent.model=openai/gpt-4o",
            "server.allowed_hosts=[\"hub.internal\"]",
            "audit.retention = 10",
        ],
    )
    .unwrap();
    assert_eq!(c.limits.call.memory_mb, 128);
    assert_eq!(c.agent.max_steps, 4, "keys not overridden keep the file's value");
    assert_eq!(c.agent.model.as_deref(), Some("openai/gpt-4o"));
    assert_eq!(c.server.allowed_hosts, ["hub.internal"]);
    assert_eq!(c.audit.retention, 10);
}

#[test]
fn set_errors_name_the_override() {
    let err = |o: &str| with_overrides("", &[o]).unwrap_err().to_string();
    assert!(
        err("limits.memroy_mb=3").contains("memroy_mb"),
        "{}",
        err("limits.memroy_mb=3")
    );
    assert!(err("limits").contains("expected KEY=VALUE"));
    assert!(err("limits..x=1").contains("not a dotted key"));
    let nested = with_overrides("listen = \"127.0.0.1:1\"\n", &["listen.port=1"])
        .unwrap_err()
        .to_string();
    assert!(nested.contains("listen is not a table"), "{nested}");
    assert!(err("limits.memory_mb=0").contains("limits.memory_mb must be greater than 0"));
    // The file's own mistakes keep their line numbers.
    let file = with_overrides("[limits]\nmemroy_mb = 3\n", &["limits.memory_mb=1"])
        .unwrap_err()
        .to_string();
    assert!(file.contains("line 2"), "{file}");
}

#[test]
fn tokens_need_exactly_one_secret_source() {
    let err = Config::parse("[[tokens]]\nname = \"a\"\nallow = [\"*\"]\n", Path::new("w.toml")).unwrap_err();
    assert!(
        err.to_string()
            .contains("exactly one of secret_env or secret_file"),
        "{err}"
    );
}

#[test]
fn providers_parse_with_defaults() {
    let c = Config::parse(
        "[[providers]]\nname = \"local\"\nbase_url = \"http://127.0.0.1:11434/v1\"\nmodels = [\"llama*\"]\n",
        Path::new("w.toml"),
    )
    .unwrap();
    assert_eq!(c.providers[0].max_retries, 3);
    assert_eq!(c.providers[0].api_key_env, None);
}

#[test]
fn concurrency_and_accounting_sections_parse_and_are_checked() {
    let c = Config::parse(
        "[concurrency]\nchat = 2\nqueue = 5\n[accounting]\njsonl = \"usage.jsonl\"\n\
         [accounting.prices.\"openai/gpt-4o-mini\"]\ninput = 0.15\noutput = 0.6\n",
        Path::new("w.toml"),
    )
    .unwrap();
    assert_eq!(
        (c.concurrency.chat, c.concurrency.queue, c.concurrency.mcp),
        (2, 5, 64)
    );
    let price = c.accounting.prices["openai/gpt-4o-mini"];
    assert_eq!((price.input, price.output, price.cached_input), (0.15, 0.6, None));
    for (text, key) in [
        ("[concurrency]\nproxy = 0\n", "concurrency.proxy"),
        ("[concurrency]\nqueue_wait_ms = 0\n", "concurrency.queue_wait_ms"),
        (
            "[accounting.prices.m]\ninput = -1.0\noutput = 1.0\n",
            "accounting.prices.\"m\"",
        ),
        ("[accounting.prices.m]\ninput = 1.0\n", "output"),
    ] {
        let err = Config::parse(text, Path::new("w.toml")).unwrap_err().to_string();
        assert!(err.contains(key), "{text}: {err}");
    }
}

#[test]
fn telemetry_section_parses_and_is_checked() {
    let c = Config::parse(
        "[telemetry]\notlp_endpoint = \"http://127.0.0.1:4318\"\nsample_ratio = 0.25\nlog_format = \"json\"\n",
        Path::new("w.toml"),
    )
    .unwrap();
    assert_eq!(
        c.telemetry.otlp_endpoint.as_deref(),
        Some("http://127.0.0.1:4318")
    );
    assert_eq!(c.telemetry.sample_ratio, 0.25);
    assert_eq!(c.telemetry.log_format, crate::config::LogFormat::Json);
    assert_eq!((c.telemetry.queue_spans, c.telemetry.batch_spans), (4096, 512));
    assert!(Config::default().telemetry.otlp_endpoint.is_none());
    for (text, key) in [
        ("[telemetry]\nsample_ratio = 1.5\n", "telemetry.sample_ratio"),
        ("[telemetry]\nflush_ms = 0\n", "telemetry.flush_ms"),
        ("[telemetry]\nprobe_max_ms = 0\n", "telemetry.probe_max_ms"),
        (
            "[telemetry]\nforward_baggage = [\"a=b\"]\n",
            "telemetry.forward_baggage",
        ),
        (
            "[telemetry]\nforward_baggage = [\"\"]\n",
            "telemetry.forward_baggage",
        ),
        (
            "[telemetry]\nbatch_spans = 10\nqueue_spans = 5\n",
            "telemetry.batch_spans",
        ),
        (
            "[telemetry]\notlp_endpoint = \"ftp://x\"\n",
            "telemetry.otlp_endpoint",
        ),
        (
            "[telemetry]\notlp_endpoint = \"http://x/?a=1\"\n",
            "telemetry.otlp_endpoint",
        ),
        ("[telemetry]\nlog_format = \"xml\"\n", "expected `text` or `json`"),
        ("[telemetry]\nendpoint = \"x\"\n", "endpoint"),
    ] {
        let err = Config::parse(text, Path::new("w.toml")).unwrap_err().to_string();
        assert!(err.contains(key), "{text}: {err}");
    }
}

#[test]
fn the_llm_trace_section_has_its_new_name_and_the_old_one_is_refused() {
    let c = Config::parse(
        "[llm_trace]\nenabled = true\nfile = \"t.log\"\nmax_mb = 2\n",
        Path::new("w.toml"),
    )
    .unwrap();
    assert!(c.llm_trace.enabled);
    assert_eq!(c.llm_trace.file.as_deref(), Some(Path::new("t.log")));
    assert_eq!(c.llm_trace.max_mb, 2);
    let err = Config::parse("[trace]\nllm = true\n", Path::new("w.toml"))
        .unwrap_err()
        .to_string();
    assert!(
        err.starts_with("w.toml: [trace] was renamed [llm_trace]"),
        "{err}"
    );
    let err = Config::parse("[llm_trace]\nmax_mb = 0\n", Path::new("w.toml"))
        .unwrap_err()
        .to_string();
    assert!(err.contains("llm_trace.max_mb must be greater than 0"), "{err}");
}

#[test]
fn models_and_per_model_settings_parse_and_are_checked() {
    let text = r#"
[[providers]]
name = "local"
base_url = "http://127.0.0.1:11434/v1"
models = ["qwen*"]
stream_deltas = "cumulative"
context_window = 32768
tool_choice = "required"

[[providers.model_settings]]
model = "qwen2.5-7b*"
context_window = 16384
max_output_tokens = 2048
context_buffer = 256
parallel_tool_calls = false

[[models]]
name = "smart"
targets = ["local/qwen2.5-7b-instruct", "local/qwen3"]
"#;
    let c = Config::parse(text, Path::new("w.toml")).unwrap();
    let p = &c.providers[0];
    assert_eq!(p.stream_deltas, StreamDeltas::Cumulative);
    assert_eq!(
        (p.context_window, p.tool_choice),
        (Some(32768), Some(ToolChoice::Required))
    );
    let m = &p.model_settings[0];
    assert_eq!(
        (
            m.model.as_str(),
            m.context_window,
            m.max_output_tokens,
            m.context_buffer,
            m.parallel_tool_calls
        ),
        ("qwen2.5-7b*", Some(16384), Some(2048), Some(256), Some(false))
    );
    assert_eq!(c.models[0].targets.len(), 2);
    assert_eq!(c.agent.context_window, 131_072, "the design's fallback window");

    let err = Config::parse("[[models]]\nname = \"x\"\ntargets = []\n", Path::new("w.toml"))
        .unwrap_err()
        .to_string();
    assert!(err.contains("models.x: targets"), "{err}");
    let err = Config::parse(
        "[[providers]]\nname = \"a\"\nbase_url = \"http://x\"\nstream_deltas = \"sometimes\"\n",
        Path::new("w.toml"),
    )
    .unwrap_err()
    .to_string();
    assert!(err.contains("sometimes"), "{err}");
    let err = Config::parse(
        "[[providers]]\nname = \"g\"\nkind = \"palm\"\nbase_url = \"http://x\"\n",
        Path::new("w.toml"),
    )
    .unwrap_err()
    .to_string();
    assert!(err.contains("providers.g.kind: \"palm\""), "{err}");
    assert!(
        err.contains("openai, ollama, anthropic, openrouter, gemini"),
        "{err}"
    );
    let c = Config::parse(
        "[[providers]]\nname = \"g\"\nkind = \"gemini\"\nbase_url = \"http://x\"\n",
        Path::new("w.toml"),
    )
    .unwrap();
    assert_eq!(c.providers[0].kind, "gemini");
    let c = Config::parse(
        "[[providers]]\nname = \"o\"\nkind = \"ollama\"\nstream = false\nthink = true\noptions = { num_ctx = 8192 }\nbase_url = \"http://x\"\n",
        Path::new("w.toml"),
    )
    .unwrap();
    let p = &c.providers[0];
    assert_eq!(
        (p.kind.as_str(), p.stream, p.think, &p.options["num_ctx"]),
        ("ollama", false, Some(true), &serde_json::json!(8192))
    );
    assert_eq!(
        (
            c.providers[0].request_timeout_ms,
            Config::default().providers.len()
        ),
        (600_000, 0)
    );
}

#[test]
fn the_readme_model_examples_load() {
    let readme = include_str!("../../../README.md");
    let section = readme
        .split("### Models: fallback chains and provider settings")
        .nth(1)
        .expect("the README section")
        .split("\n### ")
        .next()
        .unwrap();
    let blocks: Vec<&str> = section
        .split("```toml\n")
        .skip(1)
        .map(|b| b.split("```").next().unwrap())
        .collect();
    assert!(blocks.len() >= 2, "{blocks:?}");
    for block in blocks {
        let c = Config::parse(block, Path::new("README.md")).unwrap_or_else(|e| panic!("{e}\n{block}"));
        crate::llm::Llm::with_models(&c.providers, &c.models).unwrap_or_else(|e| panic!("{e}\n{block}"));
    }
}

/// The error of a file whose `[limits]` holds `line` alone.
fn limits_error(line: &str) -> String {
    with_overrides(&format!("[limits]\n{line}\n"), &[])
        .unwrap_err()
        .to_string()
}

#[test]
fn the_epoch_tick_is_bounded_and_the_error_names_the_key() {
    let c = Config::parse("[limits]\nepoch_tick_us = 500\n", Path::new("w.toml")).unwrap();
    assert_eq!(
        crate::runtime::epoch_tick(&c.limits.cpu),
        std::time::Duration::from_micros(500)
    );
    for bad in [0, 99, 100_001] {
        let err = limits_error(&format!("epoch_tick_us = {bad}"));
        assert!(
            err.contains("limits.epoch_tick_us must be between 100 and 100000"),
            "{err}"
        );
    }
}

#[test]
fn busy_yield_us_is_off_or_bounded_and_the_error_names_the_key() {
    assert_eq!(Config::default().limits.cpu.busy_yield_us, 250);
    for ok in [0, 50, 100_000] {
        let c = Config::parse(&format!("[limits]\nbusy_yield_us = {ok}\n"), Path::new("w.toml")).unwrap();
        assert_eq!(c.limits.cpu.busy_yield_us, ok);
    }
    for bad in [1, 49, 100_001] {
        let err = limits_error(&format!("busy_yield_us = {bad}"));
        assert!(
            err.contains(&format!(
                "limits.busy_yield_us must be 0 (off) or between 50 and 100000 (it is {bad})"
            )),
            "{err}"
        );
    }
}

#[test]
fn the_low_priority_threads_are_bounded_and_the_error_names_the_key() {
    let c = Config::parse("[limits]\nbusy_threads = 3\n", Path::new("w.toml")).unwrap();
    assert_eq!(c.limits.cpu.busy_threads, Some(3));
    assert_eq!(Config::default().limits.cpu.busy_threads, None);
    for bad in [0, 1025] {
        let err = limits_error(&format!("busy_threads = {bad}"));
        assert!(
            err.contains(&format!(
                "limits.busy_threads must be between 1 and 1024 (it is {bad})"
            )),
            "{err}"
        );
    }
}

#[test]
fn the_warm_slot_keys_parse() {
    let c = with_overrides("[limits]\nwarm_slots = 4\nwarm_slot_kb = 256\n", &[]).unwrap();
    assert_eq!((c.limits.pool.warm_slots, c.limits.pool.warm_slot_kb), (4, 256));
    let d = Config::default();
    assert_eq!((d.limits.pool.warm_slots, d.limits.pool.warm_slot_kb), (64, 1024));
    // Zero is allowed for both: no warm slots, nothing kept resident.
    let z = with_overrides("", &["limits.warm_slots=0", "limits.warm_slot_kb=0"]).unwrap();
    assert_eq!((z.limits.pool.warm_slots, z.limits.pool.warm_slot_kb), (0, 0));
}

#[test]
fn the_flat_limits_table_lands_in_its_groups() {
    let c = with_overrides(
        "[limits]\nmax_fanout = 7\nvalidate_blocking_kb = 8\nload_wait_ms = 9\nqueue_ms = 10\n",
        &[],
    )
    .unwrap();
    let l = &c.limits;
    assert_eq!(
        (
            l.tree.max_fanout,
            l.validation.blocking_bytes(),
            l.load.wait_ms,
            l.shares.queue_ms
        ),
        (7, 8 * 1024, 9, 10)
    );
}

#[test]
fn the_cpu_share_has_its_own_key_and_the_slot_share_stands_for_it_unset() {
    let unset = with_overrides("[limits]\ncaller_share_percent = 40\n", &[]).unwrap();
    assert_eq!(
        (
            unset.limits.shares.caller_percent,
            unset.limits.cpu.caller_percent
        ),
        (40, 40)
    );
    let set = with_overrides(
        "[limits]\ncaller_share_percent = 40\ncaller_cpu_share_percent = 25\n",
        &[],
    )
    .unwrap();
    assert_eq!(
        (set.limits.shares.caller_percent, set.limits.cpu.caller_percent),
        (40, 25)
    );
    for (key, bad) in [
        ("caller_cpu_share_percent", 0),
        ("caller_share_percent", 101),
        ("plugin_share_percent", 0),
    ] {
        let err = limits_error(&format!("{key} = {bad}"));
        assert!(
            err.contains(&format!("limits.{key} must be between 1 and 100 (it is {bad})")),
            "{err}"
        );
    }
}

#[test]
fn cpu_weights_are_read_per_plugin_and_token_and_their_mistakes_name_the_key() {
    let set = with_overrides(
        "[limits]\nplugin_cpu_weights = { calc = 4 }\ntoken_cpu_weights = { local = 2 }\n",
        &[],
    )
    .unwrap();
    assert_eq!(set.limits.cpu.plugin_weights.get("calc"), Some(&4));
    assert_eq!(set.limits.cpu.token_weights.get("local"), Some(&2));
    assert!(!set.limits.cpu.lend_idle, "lending is off unless asked for");
    let lend = with_overrides("[limits]\ncpu_lend_idle = true\n", &[]).unwrap();
    assert!(lend.limits.cpu.lend_idle);
    for (toml, expected) in [
        (
            "plugin_cpu_weights = { calc = 0 }",
            "limits.plugin_cpu_weights.calc must be between 1 and 100 (it is 0)",
        ),
        (
            "token_cpu_weights = { ci = 101 }",
            "limits.token_cpu_weights.ci must be between 1 and 100 (it is 101)",
        ),
        (
            "token_cpu_weights = { nobody = 2 }",
            "limits.token_cpu_weights.nobody: no token has this name",
        ),
    ] {
        let err = limits_error(toml);
        assert!(err.contains(expected), "{err}");
    }
}

#[test]
fn the_storage_backend_is_embedded_by_default_or_its_old_name_and_a_wrong_one_is_named() {
    let backend = |text: &str| Config::parse(text, Path::new("w.toml")).map(|c| c.storage.backend);
    assert_eq!(backend("").unwrap(), StorageBackend::Embedded);
    for name in ["embedded", "sled"] {
        let text = format!("[storage]\nbackend = \"{name}\"\n");
        assert_eq!(backend(&text).unwrap(), StorageBackend::Embedded, "{name}");
    }
    assert_eq!(
        backend("[storage]\nbackend = \"postgres\"\n").unwrap(),
        StorageBackend::Postgres
    );
    let err = backend("[storage]\nbackend = \"sqlite\"\n")
        .unwrap_err()
        .to_string();
    assert!(err.contains("backend") && err.contains("sqlite"), "{err}");
    assert!(err.contains("line 2"), "{err}");
}

#[test]
fn tokenizers_parse_per_provider_and_model_and_bad_ones_name_the_key() {
    let text = r#"
[tokenizers]
dir = "/srv/tokenizers"
max_file_kb = 8192

[[providers]]
name = "openai"
base_url = "https://api.openai.com/v1"
tokenizer = "tiktoken:o200k_base"

[[providers.model_settings]]
model = "gpt-4-*"
tokenizer = "tiktoken:cl100k_base"

[[providers.model_settings]]
model = "own*"
tokenizer = "file:/srv/own.tiktoken"
"#;
    let c = Config::parse(text, Path::new("w.toml")).unwrap();
    assert_eq!(c.tokenizers.dir(Path::new("data")), Path::new("/srv/tokenizers"));
    assert_eq!(c.tokenizers.max_file_kb, 8192);
    let p = &c.providers[0];
    assert_eq!(p.tokenizer, Some(Spec::Tiktoken(Encoding::O200kBase)));
    assert_eq!(
        p.model_settings[0].tokenizer,
        Some(Spec::Tiktoken(Encoding::Cl100kBase))
    );
    assert_eq!(
        p.model_settings[1].tokenizer,
        Some(Spec::File("/srv/own.tiktoken".into()))
    );
    let d = Config::parse("", Path::new("w.toml")).unwrap();
    assert_eq!(d.tokenizers.dir(Path::new("data")), Path::new("data/tokenizers"));

    let err = Config::parse(
        "[[providers]]\nname = \"a\"\nbase_url = \"http://x\"\ntokenizer = \"tiktoken:gpt2\"\n",
        Path::new("w.toml"),
    )
    .unwrap_err()
    .to_string();
    assert!(err.contains("\"tiktoken:gpt2\" is not a tokenizer"), "{err}");
    assert!(err.contains("w.toml: line 4"), "{err}");
    let err = Config::parse("[tokenizers]\nmax_file_kb = 0\n", Path::new("w.toml"))
        .unwrap_err()
        .to_string();
    assert!(
        err.contains("tokenizers.max_file_kb must be greater than 0"),
        "{err}"
    );
}

#[test]
fn an_openrouter_provider_names_the_hubs_public_url_as_its_referer_unless_the_operator_did() {
    let text = |oauth: &str| {
        format!(
            "{oauth}\n[[providers]]\nname = \"or\"\nkind = \"openrouter\"\nbase_url = \"https://openrouter.ai/api/v1\"\n\
             [[providers]]\nname = \"own\"\nkind = \"openrouter\"\nbase_url = \"https://openrouter.ai/api/v1\"\n\
             headers = {{ \"http-referer\" = \"https://mine.example\" }}\n\
             [[providers]]\nname = \"plain\"\nbase_url = \"https://api.openai.com/v1\"\n"
        )
    };
    let referer = |c: &Config, name: &str| {
        let p = c.providers.iter().find(|p| p.name == name).unwrap();
        p.headers
            .iter()
            .map(|(k, v)| format!("{k}: {v}"))
            .collect::<Vec<_>>()
    };
    let mut c = Config::parse(
        &text("[oauth]\npublic_url = \"https://hub.example.com/\""),
        Path::new("w.toml"),
    )
    .unwrap();
    c.apply_openrouter_referer();
    assert_eq!(referer(&c, "or"), ["HTTP-Referer: https://hub.example.com"]);
    assert_eq!(referer(&c, "own"), ["http-referer: https://mine.example"]);
    assert!(referer(&c, "plain").is_empty(), "only openrouter providers");
    let mut without = Config::parse(&text(""), Path::new("w.toml")).unwrap();
    without.apply_openrouter_referer();
    assert!(referer(&without, "or").is_empty(), "no public_url, no referer");
}
