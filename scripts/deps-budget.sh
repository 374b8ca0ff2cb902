#!/usr/bin/env bash
# Counts the distinct crates (name + version) in the wasmhub binary's normal
# dependency tree for x86_64 Linux and fails when the count passes the budget in
# supply-chain/deps-budget.txt; the same for the build with the `postgres` feature
# (the replicas' PostgreSQL backend) against supply-chain/deps-budget-postgres.txt.
# `--top` also lists which direct dependency brings how many crates of its own.
set -euo pipefail
cd "$(dirname "$0")/.."

budget=$(grep -v '^#' supply-chain/deps-budget.txt | tr -d '[:space:]')
budget_postgres=$(grep -v '^#' supply-chain/deps-budget-postgres.txt | tr -d '[:space:]')
tree() { cargo tree -e normal --prefix none --target x86_64-unknown-linux-gnu "$@"; }
# Lines look like `name vX.Y.Z (path) (*)`; keep name and version, drop wasmhub itself.
count=$(tree -p wasmhub | awk '{print $1, $2}' | sort -u | grep -vc '^wasmhub ')
count_postgres=$(tree -p wasmhub --features postgres | awk '{print $1, $2}' | sort -u | grep -vc '^wasmhub ')

if [ "${1:-}" = "--top" ]; then
    echo "crates brought by each direct dependency (including shared ones):"
    for dep in $(tree -p wasmhub --depth 1 | awk 'NR>1 {print $1"@"substr($2,2)}' | sort -u); do
        n=$(tree -p wasmhub -i "${dep}" --depth 0 >/dev/null 2>&1 && tree -p "$dep" | awk '{print $1, $2}' | sort -u | wc -l)
        printf '%5s  %s\n' "$n" "$dep"
    done | sort -rn
fi

echo "dependency budget: $count crates in the wasmhub binary's normal tree (budget $budget)"
if [ "$count" -gt "$budget" ]; then
    echo "dependency budget exceeded: $count > $budget. Trim features or dependencies, or raise the budget on purpose in supply-chain/deps-budget.txt" >&2
    exit 1
fi
echo "dependency budget: $count_postgres crates with --features postgres (budget $budget_postgres)"
if [ "$count_postgres" -gt "$budget_postgres" ]; then
    echo "dependency budget of the postgres build exceeded: $count_postgres > $budget_postgres. Trim features or dependencies, or raise the budget on purpose in supply-chain/deps-budget-postgres.txt" >&2
    exit 1
fi
