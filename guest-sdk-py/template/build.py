"""Builds {{name}}.wasm, the `{{name}}` plugin as a WebAssembly component.

One command: `python3 build.py`. It creates `.venv/` when missing, installs
componentize-py 0.25.1 there when it is missing or another version, and runs
`componentize-py -d wit -w plugin componentize app -o {{name}}.wasm`, which packs
`app.py`, the `wasmhub_plugin/` SDK and a Python interpreter against `wit/plugin.wit`.
"""

import os
import subprocess
import sys
import time
import venv
from pathlib import Path

COMPONENTIZE_PY_VERSION = "0.25.1"
HERE = Path(__file__).resolve().parent
VENV = HERE / ".venv"
OUTPUT = "{{name}}.wasm"


def venv_tool(name):
    """A program inside .venv (bin/ on Linux and macOS, Scripts/ on Windows)."""
    if os.name == "nt":
        return VENV / "Scripts" / f"{name}.exe"
    return VENV / "bin" / name


def ensure_venv():
    if not venv_tool("python").exists():
        print(f"==> creating {VENV}", flush=True)
        venv.create(VENV, with_pip=True)


def installed_version():
    tool = venv_tool("componentize-py")
    if not tool.exists():
        return None
    result = subprocess.run([str(tool), "--version"], capture_output=True, text=True)
    return result.stdout.strip() if result.returncode == 0 else None


def ensure_componentize_py():
    if installed_version() == f"componentize-py {COMPONENTIZE_PY_VERSION}":
        return
    print(f"==> installing componentize-py=={COMPONENTIZE_PY_VERSION} into {VENV}", flush=True)
    pip = [str(venv_tool("python")), "-m", "pip", "install", "--quiet"]
    subprocess.run([*pip, f"componentize-py=={COMPONENTIZE_PY_VERSION}"], check=True)


def componentize():
    command = [str(venv_tool("componentize-py")), "-d", "wit", "-w", "plugin", "componentize", "app", "-o", OUTPUT]
    print(f"==> componentize-py -d wit -w plugin componentize app -o {OUTPUT}", flush=True)
    started = time.monotonic()
    subprocess.run(command, cwd=HERE, check=True)
    size = (HERE / OUTPUT).stat().st_size
    print(f"==> built {OUTPUT} ({size / 2**20:.1f} MiB) in {time.monotonic() - started:.0f} s")
    print(f"    next: wasmhub plugin check {OUTPUT}")


def main():
    ensure_venv()
    ensure_componentize_py()
    componentize()


if __name__ == "__main__":
    try:
        main()
    except subprocess.CalledProcessError as e:
        sys.exit(f"build failed: {' '.join(map(str, e.cmd))} exited with {e.returncode}")
