"""Decoding inputs into declared types (with error paths), encoding outputs, and
exact 64-bit integer round trips."""

import enum
import json
import typing
import unittest
from dataclasses import dataclass, field
from typing import Annotated, Literal, Optional

from wasmhub_plugin import InvalidInput, Plugin, example


class Shape(enum.Enum):
    CIRCLE = "circle"
    SQUARE = "square"


@dataclass
class Part:
    name: str
    qty: int = 1


@dataclass
class Order:
    items: list[Part]
    shape: Shape
    rush: bool = False
    note: Optional[str] = None


@dataclass
class Positive:
    n: int

    def __post_init__(self):
        if self.n <= 0:
            raise ValueError("n must be positive")


class Opts(typing.TypedDict, total=False):
    depth: int
    label: Optional[str]


@dataclass
class Echo:
    order: Order
    opts: dict


plugin = Plugin()


@plugin.operation
def place(order: Order) -> Order:
    """Echo an order back."""
    return order


@plugin.operation
def typed(order: Order, opts: Opts, mode: Literal["a", "b"] = "a") -> Echo:
    """Return what was decoded, with its Python types checked."""
    assert isinstance(order, Order) and isinstance(order.items[0], Part) and isinstance(order.shape, Shape)
    return Echo(order, dict(opts, mode=mode))


@plugin.operation
def big(n: int, xs: list[int]) -> dict:
    """Return the integers as received."""
    return {"n": n, "xs": xs, "types": sorted({type(x).__name__ for x in [n, *xs]})}


@plugin.operation
def number(x: float) -> float:
    """Return the number."""
    return x


@plugin.operation
def positive(p: Positive) -> int:
    """Validated in __post_init__."""
    return p.n


@plugin.operation
def bounded(n: Annotated[int, {"minimum": 1, "maximum": 10}] = 5) -> int:
    """An int with bounds."""
    return n


@plugin.operation
def keyword(from_: str, to: str) -> dict:
    """Keyword-named parameters."""
    return {"from": from_, "to": to}


def message(name, payload):
    with unittest.TestCase().assertRaises(InvalidInput) as ctx:
        plugin.call_json(name, payload if isinstance(payload, str) else json.dumps(payload))
    return ctx.exception.message


ORDER = {"items": [{"name": "bolt", "qty": 3}, {"name": "nut"}], "shape": "circle"}


class DecodeTest(unittest.TestCase):
    def test_dataclasses_lists_enums_and_defaults(self):
        out = plugin.invoke("typed", {"order": ORDER, "opts": {"depth": 2}})
        self.assertEqual(
            out,
            {
                "order": {
                    "items": [{"name": "bolt", "qty": 3}, {"name": "nut", "qty": 1}],
                    "shape": "circle",
                    "rush": False,
                    "note": None,
                },
                "opts": {"depth": 2, "mode": "a"},
            },
        )

    def test_absent_typeddict_keys_stay_absent(self):
        out = plugin.invoke("typed", {"order": ORDER, "opts": {"label": None}, "mode": "b"})
        self.assertEqual(out["opts"], {"label": None, "mode": "b"})
        self.assertEqual(plugin.invoke("typed", {"order": ORDER, "opts": {}})["opts"], {"mode": "a"})

    def test_error_paths_name_the_field(self):
        bad_item = dict(ORDER, items=[{"name": "bolt"}, {"name": 7}])
        self.assertEqual(message("place", bad_item), "input.items[1].name: expected a string, got 7")
        self.assertEqual(message("place", dict(ORDER, shape="oval")), 'input.shape: expected one of "circle", "square", got "oval"')
        self.assertEqual(message("place", {"shape": "circle"}), "input.items: missing required field")
        self.assertEqual(message("place", dict(ORDER, extra=1)), "input.extra: unknown field (expected items, note, rush, shape)")
        self.assertEqual(message("place", dict(ORDER, items={})), "input.items: expected an array, got an object")
        self.assertEqual(message("place", dict(ORDER, rush=1)), "input.rush: expected a boolean, got 1")
        self.assertEqual(message("typed", {"order": ORDER, "opts": {"depth": "x"}}), 'input.opts.depth: expected an integer, got "x"')
        self.assertEqual(message("typed", {"order": ORDER, "opts": {}, "mode": "c"}), 'input.mode: expected one of "a", "b", got "c"')
        self.assertEqual(message("place", "[1]"), "input: expected an object, got an array")
        self.assertTrue(message("place", "{").startswith("input: not valid JSON"))
        self.assertTrue(message("number", '{"x": NaN}').startswith("input: not valid JSON"))

    def test_post_init_value_errors_are_invalid_input(self):
        self.assertEqual(message("positive", {"n": 0}), "input: n must be positive")
        self.assertEqual(plugin.invoke("positive", {"n": 3}), 3)

    def test_int_range_and_integral_floats(self):
        self.assertEqual(plugin.invoke("big", {"n": 5.0, "xs": []})["types"], ["int"])
        self.assertIn("outside the 64-bit integer range", message("big", {"n": 2**63, "xs": []}))
        self.assertIn("input.xs[0]: ", message("big", {"n": 0, "xs": [-(2**63) - 1]}))
        self.assertEqual(message("big", {"n": True, "xs": []}), "input.n: expected an integer, got true")
        self.assertEqual(message("bounded", {"n": 11}), "input.n: 11 is more than the maximum 10")
        self.assertEqual(message("bounded", {"n": 0}), "input.n: 0 is less than the minimum 1")
        self.assertEqual(plugin.invoke("bounded", {}), 5)

    def test_floats_accept_ints_exactly(self):
        self.assertEqual(plugin.call_json("number", '{"x": 9007199254740993}'), "9007199254740993")
        self.assertEqual(plugin.call_json("number", '{"x": 0.1}'), "0.1")
        self.assertEqual(message("number", {"x": "1"}), 'input.x: expected a number, got "1"')

    def test_keyword_fields(self):
        self.assertEqual(plugin.invoke("keyword", {"from": "m", "to": "km"}), {"from": "m", "to": "km"})


class Int64RoundTripTest(unittest.TestCase):
    def test_extremes_keep_every_digit(self):
        text = '{"n": 9223372036854775807, "xs": [-9223372036854775808, 9007199254740993]}'
        out = plugin.call_json("big", text)
        self.assertEqual(out, '{"n":9223372036854775807,"xs":[-9223372036854775808,9007199254740993],"types":["int"]}')
        self.assertIn("9223372036854775807", out)
        self.assertIn("-9223372036854775808", out)

    def test_examples_keep_them_too(self):
        ex = example("max", {"n": 2**63 - 1, "xs": [-(2**63)]}, {"n": 2**63 - 1})
        self.assertEqual(ex.input, '{"n":9223372036854775807,"xs":[-9223372036854775808]}')
        self.assertEqual(ex.output, '{"n":9223372036854775807}')


class EncodeTest(unittest.TestCase):
    def test_dataclasses_enums_tuples_and_keyword_fields(self):
        @dataclass
        class Out:
            from_: str
            shape: Shape
            pair: list  # a tuple value still encodes as an array
            parts: list[Part] = field(default_factory=list)

        p = Plugin()

        @p.operation
        def op() -> Out:
            """Doc."""
            return Out("m", Shape.SQUARE, (1, "x"), [Part("a")])

        self.assertEqual(p.call_json("op", "{}"), '{"from":"m","shape":"square","pair":[1,"x"],"parts":[{"name":"a","qty":1}]}')
        self.assertEqual(list(p.specs()[0].output_schema["properties"]), ["from", "shape", "pair", "parts"])

    def test_unencodable_results_fail(self):
        p = Plugin()

        @p.operation
        def nan() -> float:
            """Doc."""
            return float("nan")

        @p.operation
        def obj() -> dict:
            """Doc."""
            return {"x": object()}

        from wasmhub_plugin import Failed

        with self.assertRaisesRegex(Failed, "ValueError: Out of range float values are not JSON compliant"):
            p.call_json("nan", "{}")
        with self.assertRaisesRegex(Failed, "TypeError: cannot encode a object as JSON"):
            p.call_json("obj", "{}")

    def test_non_ascii_stays_readable(self):
        p = Plugin()

        @p.operation
        def op(s: str) -> str:
            """Doc."""
            return s

        self.assertEqual(p.call_json("op", '{"s": "\\u00b5m"}'), '"µm"')


if __name__ == "__main__":
    unittest.main()
