# Developer recipes. The README's two commands do not need `just`.

# Build the example plugins into dist/plugins
build-plugins:
    bash scripts/build-plugins.sh

# Build everything and run the hub on the example plugins
run *ARGS:
    bash scripts/quickstart.sh {{ARGS}}

# Every test (what CI runs after its gates)
test:
    bash scripts/test.sh

# Benchmarks: runtime, hub, transformer, agent loop, MCP under wrk, fairness under attack
bench:
    cargo bench -p wasmhub
    bash bench/llm.sh
    bash bench/mcp.sh
    bash bench/fairness.sh

fmt:
    cargo fmt --all

lint:
    cargo clippy --workspace --all-targets -- -D warnings

# Dependency budget (add --top to see the biggest contributors)
deps *ARGS:
    bash scripts/deps-budget.sh {{ARGS}}

# Offline advisory audit against ../shared/advisory-db
audit:
    bash scripts/audit.sh

licenses:
    python3 scripts/check-licenses.py

# Everything CI runs
ci:
    bash .ci/run
