"""wasmhub_plugin: write wasmhub plugins in Python as type-hinted functions.

    from wasmhub_plugin import Plugin, example

    plugin = Plugin()

    @plugin.operation(hints=["read_only", "idempotent"],
                      examples=[example("Adds two numbers", {"a": 2, "b": 40}, {"sum": 42})])
    def add(a: int, b: int) -> dict:
        \"\"\"Add two integers exactly.\"\"\"
        return {"sum": a + b}

    Operations = plugin.exports()   # the class componentize-py binds to `operations`

Schemas come from the type hints, inputs are decoded into them, results encoded to
JSON, and raised InvalidInput / NotFound / Forbidden / Failed become the WIT error
cases. Standard library only; the generated bindings are imported only inside the
component, so everything here runs under plain CPython too.
"""

from .errors import CallError, Failed, Forbidden, InvalidInput, NotFound, PluginError
from . import config
from .host import call, log, reveal_secret
from .operation import Example, Spec, example
from .plugin import Plugin, json_equal
from .schema import WIDE_INTEGER_NOTE

__all__ = [
    "CallError",
    "Example",
    "Failed",
    "Forbidden",
    "InvalidInput",
    "NotFound",
    "Plugin",
    "PluginError",
    "Spec",
    "WIDE_INTEGER_NOTE",
    "call",
    "config",
    "example",
    "json_equal",
    "log",
    "reveal_secret",
]

__version__ = "0.3.0"
