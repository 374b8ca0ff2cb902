"""JSON in and out of the declared types.

Decoding turns parsed JSON into what an operation's hints declare (dataclasses built,
enums and lists converted, `int` range-checked) and reports the first mismatch as
`InvalidInput` naming its path (`input.items[1].name: expected a string, got 5`).
Encoding turns results (dataclasses, enums, lists, dicts) back into JSON values.
Python's `json` keeps integers exact at any size, so 64-bit integers round-trip with
every digit; NaN and infinities are refused both ways, since JSON has none.
"""

import dataclasses
import enum
import json
import typing

from . import _types as t
from .errors import InvalidInput


def parse(text):
    """JSON text to a value; not JSON is the caller's mistake, so InvalidInput."""
    try:
        return json.loads(text, parse_constant=_refuse_constant)
    except ValueError as e:
        raise InvalidInput(f"input: not valid JSON: {e}") from None


def _refuse_constant(name):
    raise ValueError(f"{name} is not a JSON number")


def dump(value):
    """A value to compact JSON text (non-ASCII kept as is)."""
    return json.dumps(to_json_value(value), allow_nan=False, ensure_ascii=False, separators=(",", ":"))


def to_json_value(value):
    """Dataclasses, enums, tuples and the JSON types to plain JSON values."""
    if value is None or isinstance(value, (bool, int, float, str)):
        return value
    if isinstance(value, enum.Enum):
        return to_json_value(value.value)
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        return {t.json_name(f.name): to_json_value(getattr(value, f.name)) for f in dataclasses.fields(value)}
    if isinstance(value, dict):
        return {_key(k): to_json_value(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [to_json_value(v) for v in value]
    raise TypeError(f"cannot encode a {type(value).__name__} as JSON: return dataclasses, enums, lists, dicts or JSON scalars")


def _key(key):
    if isinstance(key, enum.Enum):
        key = key.value
    if not isinstance(key, str):
        raise TypeError(f"JSON object keys must be strings, not {key!r}")
    return key


def decode_fields(fields, value, path="input", fill_none=True):
    """A JSON object into {python name: decoded value} for the given fields; a field
    that is absent and not required is left out, so its Python default applies, or
    set to None when it has no default (an optional field) and `fill_none` (keyword
    arguments and dataclasses need a value; a TypedDict just lacks the key)."""
    if not isinstance(value, dict):
        raise InvalidInput(f"{path}: expected an object, got {_show(value)}")
    known = {f.key for f in fields}
    unknown = [k for k in value if k not in known]
    if unknown:
        expected = ", ".join(sorted(known)) or "no fields"
        raise InvalidInput(f"{_at(path, unknown[0])}: unknown field (expected {expected})")
    out = {}
    for field in fields:
        if field.key in value:
            out[field.attr] = decode(value[field.key], field.hint, _at(path, field.key))
        elif field.required:
            raise InvalidInput(f"{_at(path, field.key)}: missing required field")
        elif fill_none and field.default is t.MISSING and t.admits_none(field.hint):
            out[field.attr] = None
    return out


def decode(value, hint, path):
    """One JSON value into the type `hint` declares."""
    tp, _, extra = t.unwrap(hint)
    result = _decode_bare(value, tp, path)
    _check_bounds(result, extra, path)
    return result


def _decode_bare(value, tp, path):
    inner = t.optional_of(tp)
    if inner is not None:
        return None if value is None else decode(value, inner, path)
    if tp is typing.Any:
        return value
    if tp in _SCALARS:
        return _SCALARS[tp](value, path)
    if typing.get_origin(tp) is typing.Literal:
        return _choice(value, list(typing.get_args(tp)), path)
    if t.is_enum(tp):
        return tp(_choice(value, [m.value for m in tp], path))
    if t.is_typeddict(tp):
        return decode_fields(t.object_fields(tp), value, path, fill_none=False)
    if t.is_object_type(tp):
        return _dataclass(tp, value, path)
    return _container(tp, value, path)


def _container(tp, value, path):
    origin, args = typing.get_origin(tp) or tp, typing.get_args(tp)
    if origin is list:
        if not isinstance(value, list):
            raise InvalidInput(f"{path}: expected an array, got {_show(value)}")
        return [decode(v, args[0], f"{path}[{i}]") for i, v in enumerate(value)] if args else value
    if origin is dict:
        if not isinstance(value, dict):
            raise InvalidInput(f"{path}: expected an object, got {_show(value)}")
        return {k: decode(v, args[1], _at(path, k)) for k, v in value.items()} if args else value
    raise TypeError(f"unsupported type {tp!r} at {path}")


def _dataclass(cls, value, path):
    kwargs = decode_fields(t.object_fields(cls), value, path)
    try:
        return cls(**kwargs)
    except InvalidInput as e:
        raise InvalidInput(f"{path}: {e.message}") from None
    except ValueError as e:  # a __post_init__ check: the input's fault
        raise InvalidInput(f"{path}: {e}") from None


def _int(value, path):
    if isinstance(value, float) and value.is_integer():
        value = int(value)  # JSON Schema counts 5.0 as an integer
    if isinstance(value, bool) or not isinstance(value, int):
        raise InvalidInput(f"{path}: expected an integer, got {_show(value)}")
    if not t.INT64_MIN <= value <= t.INT64_MAX:
        raise InvalidInput(f"{path}: {value} is outside the 64-bit integer range [{t.INT64_MIN}, {t.INT64_MAX}]")
    return value


def _float(value, path):
    # An int stays an int (exact), as Python's typing lets an int stand for a float.
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise InvalidInput(f"{path}: expected a number, got {_show(value)}")
    return value


def _exact(kind, article):
    def check(value, path):
        if type(value) is not kind:
            raise InvalidInput(f"{path}: expected {article}, got {_show(value)}")
        return value

    return check


def _null(value, path):
    if value is not None:
        raise InvalidInput(f"{path}: expected null, got {_show(value)}")
    return None


_SCALARS = {
    int: _int,
    float: _float,
    str: _exact(str, "a string"),
    bool: _exact(bool, "a boolean"),
    type(None): _null,
}


def _choice(value, allowed, path):
    for option in allowed:
        if type(option) is type(value) and option == value:
            return option
    listed = ", ".join(json.dumps(to_json_value(a)) for a in allowed)
    raise InvalidInput(f"{path}: expected one of {listed}, got {_show(value)}")


def _check_bounds(value, extra, path):
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        return
    if "minimum" in extra and value < extra["minimum"]:
        raise InvalidInput(f"{path}: {value} is less than the minimum {extra['minimum']}")
    if "maximum" in extra and value > extra["maximum"]:
        raise InvalidInput(f"{path}: {value} is more than the maximum {extra['maximum']}")


def _at(path, key):
    return f"{path}.{key}" if key.isidentifier() else f"{path}[{json.dumps(key)}]"


def _show(value):
    if isinstance(value, dict):
        return "an object"
    if isinstance(value, list):
        return "an array"
    text = json.dumps(value)
    return text if len(text) <= 40 else text[:37] + "..."
