"""What a plugin asks of the hub: `log` a line and `call` another operation.

Both wrap the WIT `host` import. The generated bindings (`wit_world`) exist only inside
a component, so they are imported on use (`plugin.exports()` has loaded them at build
time, which componentize-py needs); outside one (plain Python, unit tests) `log`
writes to stderr and `call` raises, since no hub is there to answer; patch it in tests.
"""

import json
import sys

from . import codec
from .errors import CallError

LEVELS = ("trace", "debug", "info", "warn", "error")


def log(level, message):
    """Writes `message` to the hub's log at `level` (trace, debug, info, warn, error)."""
    if level not in LEVELS:
        raise ValueError(f"log level must be one of {', '.join(LEVELS)}, not {level!r}")
    try:
        from wit_world.imports import host, types
    except ImportError:
        print(f"[{level}] {message}", file=sys.stderr)
        return
    host.log(types.LogLevel[level.upper()], str(message))


def call(tool, input):
    """Calls operation `tool` (`plugin.operation`) with `input` (a dict, a dataclass or
    any value the SDK encodes) through the hub; returns its output as parsed JSON.
    Raises CallError with the hub's code when the call fails."""
    try:
        from componentize_py_types import Err
        from wit_world.imports import host
    except ImportError:
        raise RuntimeError(
            f"call({tool!r}) needs the hub: it works inside a component; in unit tests, "
            "patch the `call` your module imported"
        ) from None
    try:
        output = host.call(tool, codec.dump(input))
    except Err as e:
        raise CallError(tool, e.value.code.name.lower(), e.value.message) from None
    return json.loads(output)
