#!/usr/bin/env bash
# Builds every example plugin under plugins/ into WebAssembly components and copies
# them, with their capability manifests, into dist/plugins/ (the hub's default
# plugins folder).
#
#   Rust plugins   (plugins/NAME/Cargo.toml): cargo build --release --target wasm32-wasip2
#   Python plugins (plugins/NAME/app.py):     componentize-py 0.25.1 from .venv/, with
#                                             the SDK guest-sdk-py/ on the Python path
#   JS plugins     (plugins/NAME/package.json): componentize-js 0.23.0 via npm ci and
#                                             npm run build, SDK from guest-sdk-js/
#
# Usage: scripts/build-plugins.sh [--out DIR] [--only NAME,...]   (run from anywhere)
#   --only builds and copies just those plugins (the benchmarks that need calc alone
#   use it: no Python or JS toolchain is set up, nothing else is rebuilt).
#
# Idempotent: cargo rebuilds only what changed, a Python or JS component is rebuilt only
# when its sources, the SDK's, the WIT or the componentize-py version change (a
# sha256 stamp), and a file in the output folder is replaced only when its bytes
# differ, so a running hub's folder watcher does not reload unchanged plugins.
set -euo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
OUT="$ROOT/dist/plugins"
ONLY=""
COMPONENTIZE_PY_VERSION="0.25.1"

while [[ $# -gt 0 ]]; do
    case "$1" in
        --out) OUT="$2"; shift 2 ;;
        --only) ONLY=",$2,"; shift 2 ;;
        -h|--help) sed -n '2,19p' "$0"; exit 0 ;;
        *) echo "unknown argument: $1 (see --help)" >&2; exit 2 ;;
    esac
done

log() { printf '==> %s\n' "$*"; }
# Whether plugin $1 is to be built (every one unless --only names others).
wanted() { [[ -z "$ONLY" || "$ONLY" == *",$1,"* ]]; }

cd "$ROOT"
for name in ${ONLY//,/ }; do
    [[ -d "plugins/$name" ]] || { echo "--only: no plugin plugins/$name" >&2; exit 2; }
done
mkdir -p "$OUT"
TARGET_DIR="$(cargo metadata --format-version 1 --no-deps \
    | python3 -c 'import json,sys; print(json.load(sys.stdin)["target_directory"])')"

# Replaces $2 with $1 only when the bytes differ, through a rename so a reader never
# sees half a file.
install_file() {
    local src="$1" dst="$2"
    if [[ -f "$dst" ]] && cmp -s "$src" "$dst"; then
        return 0
    fi
    cp "$src" "$dst.partial"
    mv -f "$dst.partial" "$dst"
}

BUILT=()

# --- Rust plugins ----------------------------------------------------------------
rust_plugins=()
for manifest in plugins/*/Cargo.toml; do
    [[ -f "$manifest" ]] || continue
    wanted "$(basename "$(dirname "$manifest")")" || continue
    rust_plugins+=("$(basename "$(dirname "$manifest")")")
done

if [[ ${#rust_plugins[@]} -gt 0 ]]; then
    if ! rustup target list --installed 2>/dev/null | grep -qx wasm32-wasip2; then
        log "installing the wasm32-wasip2 target"
        rustup target add wasm32-wasip2
    fi
    args=()
    for name in "${rust_plugins[@]}"; do args+=(-p "$name"); done
    log "cargo build --release --target wasm32-wasip2 ${args[*]}"
    cargo build --release --target wasm32-wasip2 "${args[@]}"
    for name in "${rust_plugins[@]}"; do
        # Cargo names the artifact after the library: dashes become underscores.
        wasm="$TARGET_DIR/wasm32-wasip2/release/${name//-/_}.wasm"
        [[ -f "$wasm" ]] || { echo "expected $wasm after the build" >&2; exit 1; }
        install_file "$wasm" "$OUT/$name.wasm"
        BUILT+=("$name")
    done
fi

# --- Python plugins (componentize-py) --------------------------------------------
python_plugins=()
for app in plugins/*/app.py; do
    [[ -f "$app" ]] || continue
    dir="$(dirname "$app")"
    [[ -f "$dir/Cargo.toml" ]] && continue
    wanted "$(basename "$dir")" || continue
    python_plugins+=("$(basename "$dir")")
done

if [[ ${#python_plugins[@]} -gt 0 ]]; then
    VENV="$ROOT/.venv"
    if [[ ! -x "$VENV/bin/python" ]]; then
        log "creating $VENV"
        python3 -m venv "$VENV"
    fi
    if [[ "$("$VENV/bin/componentize-py" --version 2>/dev/null || true)" != "componentize-py $COMPONENTIZE_PY_VERSION" ]]; then
        log "installing componentize-py==$COMPONENTIZE_PY_VERSION into $VENV"
        "$VENV/bin/python" -m pip install --quiet "componentize-py==$COMPONENTIZE_PY_VERSION"
    fi
    mkdir -p "$TARGET_DIR/componentize-py"
    SDK_PY="$ROOT/guest-sdk-py"
    for name in "${python_plugins[@]}"; do
        dir="$ROOT/plugins/$name"
        wasm="$TARGET_DIR/componentize-py/$name.wasm"
        stamp="$wasm.sha256"
        # Tests are not part of the component, so they do not force a rebuild.
        digest="$( {
            echo "componentize-py $COMPONENTIZE_PY_VERSION"
            find "$dir" "$SDK_PY/wasmhub_plugin" -name '*.py' ! -name 'test_*' -print0 | sort -z | xargs -0 sha256sum
            sha256sum "$ROOT"/wit/*.wit "$ROOT"/wit/deps/*/*.wit
        } | sed "s|$ROOT/||" | sha256sum | cut -d' ' -f1)"
        if [[ -f "$wasm" && -f "$stamp" && "$(cat "$stamp")" == "$digest" ]]; then
            log "$name: sources unchanged, reusing $wasm"
        else
            log "$name: componentize-py componentize app (takes about a minute)"
            rm -f "$stamp"
            "$VENV/bin/componentize-py" -d "$ROOT/wit" -w plugin componentize app -p "$dir" -p "$SDK_PY" -o "$wasm.partial"
            mv -f "$wasm.partial" "$wasm"
            echo "$digest" > "$stamp"
        fi
        install_file "$wasm" "$OUT/$name.wasm"
        BUILT+=("$name")
    done
fi

# --- JavaScript plugins (componentize-js) ----------------------------------------
# A JS plugin is plugins/NAME/ with a package.json and no Cargo.toml. Its package.json
# pins componentize-js exactly (package-lock.json committed), `npm ci` installs it into
# the plugin's node_modules/ (git-ignored, reused while the version matches), and its
# `npm run build` writes plugins/NAME/NAME.wasm from component.js, which imports the
# SDK guest-sdk-js/ by relative path (componentize-js resolves no bare specifiers).
COMPONENTIZE_JS_VERSION="0.23.0"
js_plugins=()
for pkg in plugins/*/package.json; do
    [[ -f "$pkg" ]] || continue
    dir="$(dirname "$pkg")"
    [[ -f "$dir/Cargo.toml" ]] && continue
    wanted "$(basename "$dir")" || continue
    js_plugins+=("$(basename "$dir")")
done

# The componentize-js version installed in plugin folder $1, or nothing.
componentize_js_installed() {
    local pkg="$1/node_modules/@bytecodealliance/componentize-js/package.json"
    [[ -f "$pkg" ]] && node -p "require(process.argv[1]).version" "$pkg"
}

if [[ ${#js_plugins[@]} -gt 0 ]]; then
    command -v npm >/dev/null || { echo "npm is needed to build ${js_plugins[*]}" >&2; exit 1; }
    mkdir -p "$TARGET_DIR/componentize-js"
    for name in "${js_plugins[@]}"; do
        dir="$ROOT/plugins/$name"
        # Installed afresh when componentize-js is not the pinned one, or the lock file
        # changed since the last install (npm writes node_modules/.package-lock.json).
        if [[ "$(componentize_js_installed "$dir" || true)" != "$COMPONENTIZE_JS_VERSION" ||
            "$dir/package-lock.json" -nt "$dir/node_modules/.package-lock.json" ]]; then
            log "$name: npm ci (componentize-js $COMPONENTIZE_JS_VERSION, pinned in package-lock.json)"
            (cd "$dir" && npm ci --no-audit --no-fund --loglevel=error)
            if [[ "$(componentize_js_installed "$dir" || true)" != "$COMPONENTIZE_JS_VERSION" ]]; then
                echo "plugins/$name/package-lock.json does not pin componentize-js $COMPONENTIZE_JS_VERSION" >&2
                exit 1
            fi
        fi
        wasm="$TARGET_DIR/componentize-js/$name.wasm"
        stamp="$wasm.sha256"
        # Tests are not part of the component, so they do not force a rebuild.
        digest="$( {
            echo "componentize-js $COMPONENTIZE_JS_VERSION"
            find "$dir" -path "$dir/node_modules" -prune -o -type f \( -name '*.js' -o -name 'package*.json' \) \
                ! -name '*.test.*' -print0 | sort -z | xargs -0 sha256sum
            (cd "$ROOT/guest-sdk-js" && xargs sha256sum < FILES)
            sha256sum "$ROOT"/wit/*.wit "$ROOT"/wit/deps/*/*.wit
        } | sed "s|$ROOT/||" | sha256sum | cut -d' ' -f1)"
        if [[ -f "$wasm" && -f "$stamp" && "$(cat "$stamp")" == "$digest" ]]; then
            log "$name: sources unchanged, reusing $wasm"
        else
            log "$name: npm run build (componentize-js, about 10-30 s)"
            rm -f "$stamp" "$dir/$name.wasm"
            (cd "$dir" && npm run --silent build)
            mv -f "$dir/$name.wasm" "$wasm"
            echo "$digest" > "$stamp"
        fi
        install_file "$wasm" "$OUT/$name.wasm"
        BUILT+=("$name")
    done
fi

# --- Manifests and summary -------------------------------------------------------
for name in "${BUILT[@]}"; do
    if [[ -f "plugins/$name/$name.toml" ]]; then
        install_file "plugins/$name/$name.toml" "$OUT/$name.toml"
    fi
done

log "plugins in $OUT:"
for name in "${BUILT[@]}"; do
    size=$(stat -c %s "$OUT/$name.wasm")
    manifest=""
    [[ -f "$OUT/$name.toml" ]] && manifest="  + $name.toml"
    printf '    %-10s %10s bytes (%s KiB)%s\n' "$name.wasm" "$size" "$(( (size + 1023) / 1024 ))" "$manifest"
done
