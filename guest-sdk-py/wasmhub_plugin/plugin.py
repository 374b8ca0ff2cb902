"""The plugin: its operations, its instructions, and the class componentize-py binds
to the WIT `operations` export.

Everything but `exports()` is plain Python, so a plugin is unit-tested without a
component: `specs()` is what `list()` reports, `call_json()` is what `call()` does
(failures raised as the SDK's exceptions), `check_examples()` runs the examples the
way the hub does at load. `exports()` converts to and from the generated `wit_world`
types, imported only when a method runs inside the component.
"""

import json

from . import codec
from .errors import Failed, NotFound, PluginError
from .operation import Operation

# SDK hint names and error codes to the names componentize-py generates.
_WIT_HINTS = {"read_only": "READ_ONLY", "destructive": "DESTRUCTIVE", "idempotent": "IDEMPOTENT", "open_world": "OPEN_WORLD"}
_WIT_ERRORS = {
    "invalid-input": "Error_InvalidInput",
    "not-found": "Error_NotFound",
    "forbidden": "Error_Forbidden",
    "failed": "Error_Failed",
}


class Plugin:
    """A set of operations. `instructions` is optional text a model reads once before
    using the plugin (conventions shared by its operations)."""

    def __init__(self, instructions=None):
        if instructions is not None and not (isinstance(instructions, str) and instructions.strip()):
            raise ValueError("instructions must be non-empty text, or None")
        self.instructions = None if instructions is None else instructions.strip()
        self._operations = {}

    def operation(self, fn=None, *, name=None, hints=(), examples=()):
        """Decorator registering a function as an operation; the function itself is
        returned unchanged. Usable bare (`@plugin.operation`) or with options."""

        def register(fn):
            op = Operation(fn, name=name, hints=hints, examples=examples)
            if op.name in self._operations:
                raise ValueError(f"operation `{op.name}` is defined twice; operation names must be unique")
            self._operations[op.name] = op
            return fn

        return register if fn is None else register(fn)

    def specs(self):
        """The operation specs, in definition order (what `list()` reports)."""
        return [op.spec for op in self._operations.values()]

    def call_json(self, name, input_json):
        """Runs operation `name` on JSON text and returns JSON text. Every failure is a
        PluginError: the operation's own, or Failed naming an unexpected exception."""
        op = self._operations.get(name)
        if op is None:
            known = ", ".join(self._operations) or "none"
            raise NotFound(f"no operation `{name}` in this plugin (it has: {known})")
        try:
            return op.run(input_json)
        except PluginError:
            raise
        except Exception as e:  # a bug must still reach the model as a typed error
            raise Failed(f"{type(e).__name__}: {e}") from e

    def invoke(self, name, input):
        """`call_json` for tests: a Python input in, the parsed JSON output back."""
        return json.loads(self.call_json(name, codec.dump(input)))

    def check_examples(self):
        """Runs every example whose operation is safe to run (not hinted destructive or
        open_world, as the hub does at load) and compares outputs as JSON values.
        Raises AssertionError listing every failure; returns how many ran."""
        failures, ran = [], 0
        for spec in self.specs():
            if {"destructive", "open_world"} & set(spec.hints):
                continue
            for i, ex in enumerate(spec.examples, 1):
                ran += 1
                problem = _example_problem(self, spec.name, ex)
                if problem:
                    failures.append(f"{spec.name} example {i} ({ex.description}): {problem}")
        if failures:
            raise AssertionError("\n".join(failures))
        return ran

    def exports(self):
        """The class to bind to the WIT export: `Operations = plugin.exports()`."""
        return _exports_class(self)


def _example_problem(plugin, name, ex):
    try:
        got = plugin.call_json(name, ex.input)
    except PluginError as e:
        return f"failed with {e.code}: {e.message}"
    if ex.output is not None and not json_equal(json.loads(got), json.loads(ex.output)):
        return f"output {got} differs from the expected {ex.output}"
    return None


def json_equal(a, b):
    """Equality of JSON values as the hub compares example outputs (serde_json): key
    order does not matter, and an integer never equals a float (`212` is not `212.0`)."""
    if isinstance(a, dict) and isinstance(b, dict):
        return a.keys() == b.keys() and all(json_equal(a[k], b[k]) for k in a)
    if isinstance(a, list) and isinstance(b, list):
        return len(a) == len(b) and all(json_equal(x, y) for x, y in zip(a, b))
    return type(a) is type(b) and a == b


def _exports_class(plugin):
    try:
        # Inside the component: derive from the generated protocol, and load every
        # binding module now, at build time. componentize-py keeps only the modules
        # imported while it builds, so the imports `log`, `call` and the methods below
        # make on use must find them already loaded.
        import componentize_py_types  # noqa: F401
        from wit_world.exports import Operations as base
        from wit_world.imports import host, types  # noqa: F401
    except ImportError:
        base = object

    class Operations(base):
        def instructions(self):
            return plugin.instructions

        def list(self):
            from wit_world.imports import types

            return [_wit_spec(types, spec) for spec in plugin.specs()]

        def call(self, name, input_json):
            try:
                return plugin.call_json(name, input_json)
            except PluginError as e:
                raise _wit_error(e) from None

    return Operations


def _wit_error(error):
    from componentize_py_types import Err
    from wit_world.imports import types

    return Err(getattr(types, _WIT_ERRORS[error.code])(error.message))


def _wit_spec(types, spec):
    hints = types.Hints(0)
    for hint in spec.hints:
        hints |= types.Hints[_WIT_HINTS[hint]]
    return types.OperationSpec(
        name=spec.name,
        description=spec.description,
        input_schema=spec.input_schema_json(),
        output_schema=spec.output_schema_json(),
        hints=hints,
        examples=[types.Example(description=e.description, input=e.input, output=e.output) for e in spec.examples],
    )
