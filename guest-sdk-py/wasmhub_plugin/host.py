"""What a plugin asks of the hub: `log` a line, `call` another operation and
`reveal_secret` (one of its own secrets declared `reveal = true`).

All wrap the WIT `host` import. The generated bindings (`wit_world`) exist only inside
a component, so they are imported on use (`plugin.exports()` has loaded them at build
time, which componentize-py needs); outside one (plain Python, unit tests) `log`
writes to stderr and `call` and `reveal_secret` raise, since no hub is there to
answer; patch them in tests.
"""

import json
import sys

from . import codec
from .errors import CallError, Failed

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


def reveal_secret(name):
    """The value of this plugin's secret `name`, declared `reveal = true` in its
    manifest (`[secrets.NAME]`) and allowed by the operator (`allow_reveal`). Most
    plugins never need it: an `inject` secret is added by the hub to requests to its
    declared host. The hub scrubs a revealed value from everything the call returns or
    logs. Raises Failed saying why there is none (not declared for reveal, not
    allowed, unset)."""
    try:
        from componentize_py_types import Err
        from wit_world.imports import host
    except ImportError:
        raise RuntimeError(
            f"reveal_secret({name!r}) needs the hub: it works inside a component; in unit "
            "tests, patch the `reveal_secret` your module imported"
        ) from None
    try:
        return host.reveal_secret(name)
    except Err as e:
        raise Failed(f"secret {name}: {e.value}") from None
