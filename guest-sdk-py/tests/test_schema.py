"""Schema derivation from type hints: objects, optionals, enums, Literal, lists,
dicts, descriptions, defaults, 64-bit integer ranges and output schemas."""

import enum
import typing
import unittest
from dataclasses import dataclass, field
from typing import Annotated, Any, Literal, Optional

from wasmhub_plugin import WIDE_INTEGER_NOTE, Plugin


class Color(enum.Enum):
    """A primary colour."""

    RED = "red"
    GREEN = "green"


class Level(enum.IntEnum):
    LOW = 1
    HIGH = 2


@dataclass
class Tag:
    """A label on an item."""

    name: Annotated[str, "The tag's text."]
    weight: float = 1.0


@dataclass
class Item:
    title: str
    tags: list[Tag]
    note: Optional[str] = field(default=None, metadata={"description": "Free text."})


class Filters(typing.TypedDict, total=False):
    color: Color
    limit: int


@dataclass
class Node:
    child: "Optional[Node]" = None


@dataclass
class Range:
    """Where to look."""

    low: int
    high: int | None


def spec_of(fn, **options):
    plugin = Plugin()
    plugin.operation(**options)(fn)
    return plugin.specs()[0]


def props(fn):
    return spec_of(fn).input_schema["properties"]


INT64 = {"type": "integer", "minimum": -(2**63), "maximum": 2**63 - 1, "description": WIDE_INTEGER_NOTE}


class RootTest(unittest.TestCase):
    def test_parameters_make_a_closed_object(self):
        def op(a: int, b: str, c: bool = False, d: float | None = None) -> None:
            """Doc."""

        s = spec_of(op).input_schema
        self.assertEqual(s["$schema"], "https://json-schema.org/draft/2020-12/schema")
        self.assertEqual(s["type"], "object")
        self.assertIs(s["additionalProperties"], False)
        self.assertEqual(s["required"], ["a", "b"])
        self.assertEqual(s["properties"]["a"], INT64)
        self.assertEqual(s["properties"]["b"], {"type": "string"})
        self.assertEqual(s["properties"]["c"], {"type": "boolean", "default": False})
        self.assertEqual(s["properties"]["d"], {"type": ["number", "null"], "default": None})

    def test_no_parameters(self):
        def op() -> None:
            """Doc."""

        s = spec_of(op).input_schema
        self.assertEqual(s["properties"], {})
        self.assertNotIn("required", s)
        self.assertIs(s["additionalProperties"], False)

    def test_single_dataclass_parameter_is_the_whole_input(self):
        def op(where: Range) -> None:
            """Doc."""

        s = spec_of(op).input_schema
        self.assertEqual(s["description"], "Where to look.")
        self.assertEqual(list(s["properties"]), ["low", "high"])
        self.assertEqual(s["required"], ["low"])
        self.assertEqual(s["properties"]["high"]["type"], ["integer", "null"])

    def test_keyword_names_drop_their_trailing_underscore(self):
        def op(from_: str, to: str) -> None:
            """Doc."""

        s = spec_of(op).input_schema
        self.assertEqual(list(s["properties"]), ["from", "to"])
        self.assertEqual(s["required"], ["from", "to"])


class TypesTest(unittest.TestCase):
    def test_nested_dataclasses_are_inlined_with_descriptions(self):
        def op(item: Item, count: int) -> None:
            """Doc."""

        item = props(op)["item"]
        self.assertEqual(item["type"], "object")
        self.assertIs(item["additionalProperties"], False)
        self.assertEqual(item["required"], ["title", "tags"])
        self.assertEqual(item["properties"]["note"], {"type": ["string", "null"], "description": "Free text.", "default": None})
        tag = item["properties"]["tags"]["items"]
        self.assertEqual(tag["description"], "A label on an item.")
        self.assertEqual(tag["properties"]["name"], {"type": "string", "description": "The tag's text."})
        self.assertEqual(tag["properties"]["weight"], {"type": "number", "default": 1.0})
        self.assertEqual(tag["required"], ["name"])

    def test_enums_and_literals(self):
        def op(color: Color, level: Level, mode: Literal["fast", "exact"], maybe: Color | None) -> None:
            """Doc."""

        p = props(op)
        self.assertEqual(p["color"], {"type": "string", "enum": ["red", "green"], "description": "A primary colour."})
        self.assertEqual(p["level"], {"type": "integer", "enum": [1, 2]})
        self.assertEqual(p["mode"], {"type": "string", "enum": ["fast", "exact"]})
        self.assertEqual(p["maybe"]["type"], ["string", "null"])
        self.assertEqual(p["maybe"]["enum"], ["red", "green", None])

    def test_lists_dicts_any(self):
        def op(xs: list[int], m: dict[str, list[str]], anything: Any, raw: list) -> None:
            """Doc."""

        p = props(op)
        self.assertEqual(p["xs"], {"type": "array", "items": INT64})
        self.assertEqual(p["m"], {"type": "object", "additionalProperties": {"type": "array", "items": {"type": "string"}}})
        self.assertEqual(p["anything"], {})
        self.assertEqual(p["raw"], {"type": "array"})
        self.assertEqual(spec_of(op).input_schema["required"], ["xs", "m", "raw"])

    def test_typeddict_total_false_is_all_optional(self):
        def op(filters: Filters, q: str) -> None:
            """Doc."""

        f = props(op)["filters"]
        self.assertEqual(list(f["properties"]), ["color", "limit"])
        self.assertNotIn("required", f)
        self.assertIs(f["additionalProperties"], False)

    def test_annotated_description_keywords_and_tighter_int_bounds(self):
        def op(n: Annotated[int, "Page size.", {"minimum": 1, "maximum": 100}]) -> None:
            """Doc."""

        n = props(op)["n"]
        self.assertEqual(n["minimum"], 1)
        self.assertEqual(n["maximum"], 100)
        self.assertEqual(n["description"], "Page size.\n\n" + WIDE_INTEGER_NOTE)

    def test_recursive_and_unsupported_types_fail_at_decoration(self):
        def rec(node: Node) -> None:
            """Doc."""

        def bad(x: set[int]) -> None:
            """Doc."""

        def keys(x: dict[int, str]) -> None:
            """Doc."""

        with self.assertRaisesRegex(TypeError, "Node contains itself; recursive types are not supported"):
            spec_of(rec)
        with self.assertRaisesRegex(TypeError, r"operation `bad`.*unsupported type"):
            spec_of(bad)
        with self.assertRaisesRegex(TypeError, "dict keys must be str"):
            spec_of(keys)


class OutputSchemaTest(unittest.TestCase):
    def test_dataclass_output_requires_every_field(self):
        def op() -> Tag:
            """Doc."""

        s = spec_of(op).output_schema
        self.assertEqual(s["$schema"], "https://json-schema.org/draft/2020-12/schema")
        self.assertEqual(s["required"], ["name", "weight"])
        self.assertNotIn("default", s["properties"]["weight"])

    def test_free_form_returns_have_no_output_schema(self):
        def a() -> dict:
            """Doc."""

        def b() -> Any:
            """Doc."""

        def c():
            """Doc."""

        def d() -> dict[str, Any]:
            """Doc."""

        for fn in (a, b, c, d):
            self.assertIsNone(spec_of(fn).output_schema, fn.__name__)

    def test_scalar_and_list_outputs(self):
        def a() -> int:
            """Doc."""

        def b() -> list[Color]:
            """Doc."""

        self.assertEqual(spec_of(a).output_schema["type"], "integer")
        self.assertEqual(spec_of(b).output_schema["items"]["enum"], ["red", "green"])


if __name__ == "__main__":
    unittest.main()
