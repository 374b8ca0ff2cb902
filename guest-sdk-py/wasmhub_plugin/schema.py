"""JSON Schema (draft 2020-12) derived from type hints, for inputs and outputs.

Schemas are inlined (no `$ref`: models and MCP clients handle references poorly), and
every object is closed (`additionalProperties: false`). Plain `int` carries the exact
64-bit range and a note for clients that parse JSON numbers as doubles, worded as the
Rust SDK words it, since both SDKs feed the same hub.
"""

import inspect
import json
import typing

from . import _types as t
from .codec import to_json_value

DRAFT = "https://json-schema.org/draft/2020-12/schema"

# Appended to the description of every plain `int` (the Rust SDK's WIDE_INTEGER_NOTE).
WIDE_INTEGER_NOTE = (
    "64-bit integer: send it as a JSON integer (not a string); every digit is kept "
    "exactly, but clients that parse numbers as doubles lose precision past 2^53."
)

_PRIMITIVES = {str: "string", bool: "boolean", float: "number", type(None): "null"}


def input_schema(fields, description=None):
    """The root schema of an operation's input, from its fields."""
    schema = {"$schema": DRAFT}
    if description:
        schema["description"] = description
    schema.update(_object(fields, output=False, seen=()))
    return schema


def output_schema(hint):
    """The schema of what an operation returns, or None when its return type says
    nothing checkable (no hint, `Any`, `dict`, `dict[str, Any]`)."""
    tp, _, _ = t.unwrap(hint)
    if tp in (inspect.Signature.empty, typing.Any, dict, object) or tp == dict[str, typing.Any]:
        return None
    return {"$schema": DRAFT, **schema_of(hint, output=True)}


def schema_of(hint, output, seen=()):
    """The schema of one annotation (`Annotated` description and keywords applied)."""
    tp, description, extra = t.unwrap(hint)
    schema = _bare(tp, output, seen)
    if tp is int:
        description = f"{description}\n\n{WIDE_INTEGER_NOTE}" if description else WIDE_INTEGER_NOTE
    if description:
        schema["description"] = description
    schema.update(extra)
    return schema


def _bare(tp, output, seen):
    inner = t.optional_of(tp)
    if inner is not None:
        return _nullable(schema_of(inner, output, seen))
    if tp is typing.Any:
        return {}
    if tp in _PRIMITIVES:
        return {"type": _PRIMITIVES[tp]}
    if tp is int:
        return {"type": "integer", "minimum": t.INT64_MIN, "maximum": t.INT64_MAX}
    if typing.get_origin(tp) is typing.Literal:
        return _enum(list(typing.get_args(tp)))
    if t.is_enum(tp):
        schema = _enum([member.value for member in tp])
        doc = t.own_doc(tp)
        return {**schema, "description": doc} if doc else schema
    if t.is_object_type(tp):
        return _named_object(tp, output, seen)
    return _container(tp, output, seen)


def _container(tp, output, seen):
    origin, args = typing.get_origin(tp) or tp, typing.get_args(tp)
    if origin is list:
        return {"type": "array", **({"items": schema_of(args[0], output, seen)} if args else {})}
    if origin is dict:
        if args and args[0] is not str:
            raise TypeError(f"dict keys must be str (JSON object keys), not {args[0]!r}")
        return {"type": "object", **({"additionalProperties": schema_of(args[1], output, seen)} if args else {})}
    raise TypeError(
        f"unsupported type {tp!r}: use int, float, str, bool, None, list[T], dict[str, T], "
        "Optional[T], Literal[...], an Enum, a dataclass or a TypedDict"
    )


def _named_object(tp, output, seen):
    if tp in seen:
        raise TypeError(f"{tp.__name__} contains itself; recursive types are not supported")
    schema = {}
    doc = t.own_doc(tp)
    if doc:
        schema["description"] = doc
    schema.update(_object(t.object_fields(tp, output), output, seen + (tp,)))
    return schema


def _object(fields, output, seen):
    properties = {}
    for field in fields:
        prop = schema_of(field.hint, output, seen)
        if not output and field.default is not t.MISSING and _is_json(field.default):
            prop["default"] = to_json_value(field.default)
        properties[field.key] = prop
    schema = {"type": "object", "properties": properties}
    required = [f.key for f in fields if f.required]
    if required:
        schema["required"] = required
    schema["additionalProperties"] = False
    return schema


def _enum(values):
    kinds = {_json_type(v) for v in values}
    schema = {"type": kinds.pop()} if len(kinds) == 1 else {}
    schema["enum"] = values
    return schema


def _json_type(value):
    if isinstance(value, bool):
        return "boolean"
    if isinstance(value, int):
        return "integer"
    if isinstance(value, str):
        return "string"
    if value is None:
        return "null"
    raise TypeError(f"enum and Literal values must be str, int, bool or None, not {value!r}")


def _nullable(schema):
    """`T | None`: null joins the type and the enum; `{}` already admits it."""
    out = dict(schema)
    if "type" in out:
        kinds = out["type"] if isinstance(out["type"], list) else [out["type"]]
        out["type"] = kinds if "null" in kinds else [*kinds, "null"]
    if "enum" in out and None not in out["enum"]:
        out["enum"] = [*out["enum"], None]
    return out


def _is_json(value):
    try:
        json.dumps(to_json_value(value), allow_nan=False)
    except (TypeError, ValueError):
        return False
    return True
