"""Reading type hints: the small vocabulary schema derivation and decoding share.

Owns how an annotation is taken apart (`Annotated` metadata, `Optional`), how the
fields of an object type (dataclass, TypedDict, or an operation's parameters) are
listed with their JSON names, descriptions, defaults and required-ness, and the
64-bit bounds given to plain `int`.
"""

import dataclasses
import enum
import inspect
import keyword
import types
import typing

INT64_MIN = -(2**63)
INT64_MAX = 2**63 - 1



class _Missing:
    def __repr__(self):
        return "MISSING"


# Marks "no default" in Field.default (None is a real default). Not
# dataclasses.MISSING: as a field default that would mean "no default" to Field itself.
MISSING = _Missing()


@dataclasses.dataclass(frozen=True)
class Field:
    """One property of an object type."""

    key: str  # the JSON property name
    attr: str  # the Python name (parameter, dataclass field or TypedDict key)
    hint: typing.Any  # the full annotation, `Annotated` included
    required: bool
    default: typing.Any = MISSING


def json_name(attr):
    """`from_` travels as `from`: a trailing underscore only dodges a Python keyword."""
    if attr.endswith("_") and keyword.iskeyword(attr[:-1]):
        return attr[:-1]
    return attr


def unwrap(hint):
    """(the bare type, its description or None, extra JSON Schema keywords) of a hint.

    `Annotated[T, "text"]` gives a description and `Annotated[T, {"minimum": 1}]`
    extra keywords; several metadata items may be combined."""
    description, extra = None, {}
    while typing.get_origin(hint) is typing.Annotated:
        for meta in hint.__metadata__:
            if isinstance(meta, str):
                description = meta
            elif isinstance(meta, dict):
                extra.update(meta)
        hint = hint.__origin__
    return hint, description, extra


def is_union(tp):
    return typing.get_origin(tp) in (typing.Union, types.UnionType)


def optional_of(tp):
    """T when `tp` is `Optional[T]` / `T | None` (with one T), else None."""
    if not is_union(tp):
        return None
    args = [a for a in typing.get_args(tp) if a is not type(None)]
    if len(args) == len(typing.get_args(tp)) or len(args) != 1:
        return None
    return args[0]


def admits_none(hint):
    tp, _, _ = unwrap(hint)
    return tp is type(None) or tp is typing.Any or optional_of(tp) is not None


def is_typeddict(tp):
    return isinstance(tp, type) and issubclass(tp, dict) and hasattr(tp, "__required_keys__")


def is_object_type(tp):
    """Dataclasses and TypedDicts are JSON objects with declared properties."""
    return (isinstance(tp, type) and dataclasses.is_dataclass(tp)) or is_typeddict(tp)


def is_enum(tp):
    return isinstance(tp, type) and issubclass(tp, enum.Enum)


def hints_of(obj):
    """Resolved annotations (with `Annotated` kept); a clear error for unresolved names."""
    try:
        return typing.get_type_hints(obj, include_extras=True)
    except NameError as e:
        raise TypeError(
            f"cannot resolve the type hints of {getattr(obj, '__qualname__', obj)!r}: {e} "
            "(define the types an operation uses before the operation)"
        ) from None


def own_doc(cls):
    """A class's own docstring, or None for the ones Python writes itself."""
    doc = cls.__dict__.get("__doc__")
    if not doc or doc == "An enumeration." or doc.startswith(f"{cls.__name__}("):
        return None
    return inspect.cleandoc(doc)


def object_fields(tp, output=False):
    """The fields of a dataclass or TypedDict, in declaration order. As an output a
    dataclass sends every field (defaults included), so all are required; as an input
    the fields `__init__` takes, required unless they have a default or admit None."""
    hints = hints_of(tp)
    if is_typeddict(tp):
        return [Field(k, k, hints[k], k in tp.__required_keys__) for k in hints]
    fields = []
    for f in dataclasses.fields(tp):
        if not (f.init or output):
            continue
        hint = hints[f.name]
        if "description" in f.metadata:
            hint = typing.Annotated[hint, str(f.metadata["description"])]
        default = MISSING if f.default is dataclasses.MISSING else f.default
        has_default = default is not MISSING or f.default_factory is not dataclasses.MISSING
        required = output or not (has_default or admits_none(hint))
        fields.append(Field(json_name(f.name), f.name, hint, required, default))
    return fields


def parameter_fields(fn):
    """The parameters of an operation as fields; refuses what JSON cannot pass."""
    hints = hints_of(fn)
    fields = []
    for p in inspect.signature(fn).parameters.values():
        if p.kind not in (p.POSITIONAL_OR_KEYWORD, p.KEYWORD_ONLY):
            raise TypeError(f"parameter `{p.name}`: *args, **kwargs and positional-only parameters cannot come from JSON")
        if p.name not in hints:
            raise TypeError(f"parameter `{p.name}` has no type hint; the input schema is derived from it")
        hint = hints[p.name]
        default = MISSING if p.default is p.empty else p.default
        required = default is MISSING and not admits_none(hint)
        fields.append(Field(json_name(p.name), p.name, hint, required, default))
    return fields
