#!/usr/bin/env python3
"""Fails when a crate in the wasmhub binary's normal dependency tree has a license
outside supply-chain/licenses.txt.

An SPDX expression passes when one of its OR-alternatives consists only of allowed
licenses (`A AND B`); `X WITH exception` counts as X. Reads `cargo metadata` only, with
every feature on (the `postgres` build ships too).
"""
import json
import pathlib
import re
import subprocess
import sys

root = pathlib.Path(__file__).resolve().parent.parent
allowed = {
    line.split("#")[0].strip()
    for line in (root / "supply-chain" / "licenses.txt").read_text().splitlines()
    if line.split("#")[0].strip()
}

meta = json.loads(
    subprocess.run(
        ["cargo", "metadata", "--format-version", "1", "--all-features", "--filter-platform", "x86_64-unknown-linux-gnu"],
        cwd=root, check=True, capture_output=True, text=True,
    ).stdout
)
packages = {p["id"]: p for p in meta["packages"]}
nodes = {n["id"]: n for n in meta["resolve"]["nodes"]}
start = next(p["id"] for p in meta["packages"] if p["name"] == "wasmhub")

# Walk normal (non-dev, non-build) edges only: what ends up in the binary.
seen, stack = set(), [start]
while stack:
    pid = stack.pop()
    if pid in seen:
        continue
    seen.add(pid)
    for dep in nodes[pid]["deps"]:
        if any(k["kind"] is None for k in dep["dep_kinds"]):
            stack.append(dep["pkg"])


def passes(expr: str) -> bool:
    expr = expr.replace("/", " OR ")  # old crates write "MIT/Apache-2.0"
    for alternative in re.split(r"\s+OR\s+", expr.replace("(", " ").replace(")", " ")):
        terms = [re.sub(r"\s+WITH\s+\S+", "", t).strip() for t in re.split(r"\s+AND\s+", alternative)]
        if all(t in allowed for t in terms if t):
            return True
    return False


bad = []
for pid in sorted(seen):
    p = packages[pid]
    if p["name"] == "wasmhub":
        continue
    lic = p.get("license")
    if not lic:
        bad.append(f"{p['name']} {p['version']}: no SPDX license field (license-file: {p.get('license_file')})")
    elif not passes(lic):
        bad.append(f"{p['name']} {p['version']}: {lic}")

print(f"licenses: {len(seen) - 1} crates checked against supply-chain/licenses.txt")
if bad:
    print("licenses outside the allowlist:", *bad, sep="\n  ", file=sys.stderr)
    sys.exit(1)
