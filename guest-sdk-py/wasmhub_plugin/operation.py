"""One operation: a type-hinted function, what the hub is told about it, and how a
call runs it.

Owns the checks made when a function is decorated (name, docstring, hints, examples,
supported types), so a mistake fails at import, with the function named, and never
at load time inside the hub.
"""

import dataclasses
import inspect
import json
import re

from . import _types as t
from . import codec, schema
from .errors import InvalidInput

HINTS = ("read_only", "destructive", "idempotent", "open_world")
NAME = re.compile(r"[a-z][a-z0-9_]*")
MAX_NAME_BYTES = 64
MAX_EXAMPLES = 16
MAX_EXAMPLE_BYTES = 16 * 1024

# `example(...)` without an output: the output is not fixed (a clock, the network).
_UNFIXED = object()


@dataclasses.dataclass(frozen=True)
class Example:
    """A worked example, its input and expected output as JSON text (output None when
    it is not fixed)."""

    description: str
    input: str
    output: str | None


def example(description, input, output=_UNFIXED):
    """A worked example: `input` as a dict (or a dataclass), `output` the exact result
    expected (compared as JSON values). Leave `output` out when it is not fixed; pass
    None to expect JSON null."""
    if not isinstance(description, str) or not description.strip():
        raise ValueError("an example needs a description: one sentence saying what it shows")
    return Example(description, codec.dump(input), None if output is _UNFIXED else codec.dump(output))


@dataclasses.dataclass(frozen=True)
class Spec:
    """What `list()` reports for one operation, before it becomes WIT types."""

    name: str
    description: str
    input_schema: dict
    output_schema: dict | None
    hints: tuple
    examples: tuple

    def input_schema_json(self):
        return json.dumps(self.input_schema, ensure_ascii=False)

    def output_schema_json(self):
        return None if self.output_schema is None else json.dumps(self.output_schema, ensure_ascii=False)


class Operation:
    """A decorated function with its derived spec."""

    def __init__(self, fn, name=None, hints=(), examples=()):
        self.fn = fn
        name = fn.__name__ if name is None else name
        where = f"operation `{name}` ({fn.__module__}.{fn.__qualname__})"
        try:
            self._build(fn, name, hints, examples)
        except (TypeError, ValueError) as e:
            raise type(e)(f"{where}: {e}") from None

    def _build(self, fn, name, hints, examples):
        _check_name(name)
        description = _description(fn)
        hints = _check_hints(hints)
        fields = t.parameter_fields(fn)
        self.whole = _whole_input(fields)
        if self.whole is not None:
            doc = t.own_doc(self.whole.hint)
            self.fields = t.object_fields(self.whole.hint)
        else:
            doc, self.fields = None, fields
        return_hint = t.hints_of(fn).get("return", inspect.Signature.empty)
        self.spec = Spec(
            name,
            description,
            schema.input_schema(self.fields, doc),
            schema.output_schema(return_hint),
            hints,
            tuple(examples),
        )
        self._check_examples()

    @property
    def name(self):
        return self.spec.name

    def run(self, input_json):
        """Decodes the input, calls the function, encodes its result as JSON text."""
        result = self.fn(**self.arguments(codec.parse(input_json)))
        return codec.dump(result)

    def arguments(self, value):
        """The keyword arguments of the function for a parsed JSON input."""
        if self.whole is None:
            return codec.decode_fields(self.fields, value)
        return {self.whole.attr: codec.decode(value, self.whole.hint, "input")}

    def _check_examples(self):
        examples = self.spec.examples
        if len(examples) > MAX_EXAMPLES:
            raise ValueError(f"{len(examples)} examples; the hub takes at most {MAX_EXAMPLES}: keep the most typical")
        for i, ex in enumerate(examples, 1):
            if not isinstance(ex, Example):
                raise TypeError(f"example {i} is a {type(ex).__name__}; build examples with example(...)")
            if max(len(ex.input.encode()), len((ex.output or "").encode())) > MAX_EXAMPLE_BYTES:
                raise ValueError(f"example {i}: its input or output is over 16 KiB of JSON")
            try:
                self.arguments(json.loads(ex.input))
            except InvalidInput as e:
                raise ValueError(f"example {i} ({ex.description!r}) does not fit the input types: {e.message}") from None


def _check_name(name):
    if not isinstance(name, str) or not NAME.fullmatch(name) or len(name.encode()) > MAX_NAME_BYTES:
        raise ValueError(
            f"invalid operation name {name!r}: it must match [a-z][a-z0-9_]* and be at most "
            f"{MAX_NAME_BYTES} bytes (pass name=... to the decorator to choose another)"
        )


def _description(fn):
    doc = inspect.getdoc(fn)
    if not doc or not doc.strip():
        raise ValueError(
            "no docstring: the docstring is the operation's description a model reads; "
            "write one or two sentences, the first one standing alone"
        )
    return doc.strip()


def _check_hints(hints):
    if isinstance(hints, str):
        hints = [hints]
    unknown = [h for h in hints if h not in HINTS]
    if unknown:
        raise ValueError(f"unknown hint {unknown[0]!r}; hints are {', '.join(HINTS)}")
    if "read_only" in hints and "destructive" in hints:
        raise ValueError("hints read_only and destructive contradict each other")
    return tuple(h for h in HINTS if h in hints)


def _whole_input(fields):
    """The single parameter that is the whole input (a dataclass or TypedDict), if so."""
    if len(fields) != 1:
        return None
    tp, _, _ = t.unwrap(fields[0].hint)
    return fields[0] if t.is_object_type(tp) else None
