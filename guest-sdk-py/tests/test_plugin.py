"""The plugin as the hub sees it: list() specs (schemas, hints, examples as JSON
text), call() with errors mapped onto the WIT variant, instructions, the decorator's
refusals, check_examples, and the host helpers, through stand-in bindings."""

import builtins
import contextlib
import io
import json
import unittest
from unittest import mock
from dataclasses import dataclass

from tests import fake_bindings
from wasmhub_plugin import (
    CallError,
    Failed,
    Forbidden,
    InvalidInput,
    NotFound,
    Plugin,
    call,
    config,
    example,
    log,
    reveal_secret,
)


@dataclass
class Sum:
    sum: int


def make_plugin():
    plugin = Plugin(instructions="  Integers are 64-bit.  ")

    @plugin.operation(
        hints=["idempotent", "read_only"],
        examples=[example("Adds two numbers", {"a": 2, "b": 40}, {"sum": 42}), example("Unchecked", {"a": 1, "b": 1})],
    )
    def add(a: int, b: int) -> Sum:
        """Add two integers exactly.

        Fails when the sum leaves the 64-bit range."""
        total = a + b
        if not -(2**63) <= total < 2**63:
            raise InvalidInput(f"the sum {total} does not fit in 64 bits")
        return Sum(total)

    @plugin.operation(name="raise_", hints="destructive")
    def raiser(kind: str) -> None:
        """Raise the named error."""
        errors = {"not_found": NotFound, "forbidden": Forbidden, "failed": Failed}
        if kind in errors:
            raise errors[kind](f"{kind} happened")
        raise KeyError(kind)

    return plugin


class SpecsTest(unittest.TestCase):
    def test_list_gives_wit_specs(self):
        with fake_bindings.installed() as (types, _, _):
            ops = make_plugin().exports()()
            self.assertIsInstance(ops, fake_bindings.ExportsBase)
            specs = ops.list()
        self.assertEqual([s.name for s in specs], ["add", "raise_"])
        add = specs[0]
        self.assertEqual(add.description, "Add two integers exactly.\n\nFails when the sum leaves the 64-bit range.")
        self.assertEqual(add.hints, types.Hints.READ_ONLY | types.Hints.IDEMPOTENT)
        self.assertEqual(specs[1].hints, types.Hints.DESTRUCTIVE)
        self.assertEqual(json.loads(add.input_schema)["required"], ["a", "b"])
        self.assertEqual(json.loads(add.output_schema)["properties"]["sum"]["type"], "integer")
        self.assertEqual(json.loads(specs[1].output_schema)["type"], "null")

    def test_examples_are_json_text(self):
        with fake_bindings.installed():
            add = make_plugin().exports()().list()[0]
        self.assertEqual(
            [(e.description, e.input, e.output) for e in add.examples],
            [("Adds two numbers", '{"a":2,"b":40}', '{"sum":42}'), ("Unchecked", '{"a":1,"b":1}', None)],
        )

    def test_instructions(self):
        with fake_bindings.installed():
            self.assertEqual(make_plugin().exports()().instructions(), "Integers are 64-bit.")
            self.assertIsNone(Plugin().exports()().instructions())

    def test_exports_loads_every_binding_at_build_time(self):
        # componentize-py keeps only modules imported while it builds: the lazy imports
        # of log, call and the error mapping would fail in the component otherwise.
        seen, real = set(), builtins.__import__

        def spy(name, globals=None, locals=None, fromlist=(), level=0):
            seen.update([name, *(f"{name}.{f}" for f in fromlist or ())])
            return real(name, globals, locals, fromlist, level)

        with fake_bindings.installed(), mock.patch("builtins.__import__", spy):
            make_plugin().exports()
        self.assertLessEqual({"componentize_py_types", "wit_world.exports.Operations", "wit_world.imports.host", "wit_world.imports.types"}, seen)

    def test_exports_without_bindings_is_a_plain_class(self):
        ops = make_plugin().exports()()
        self.assertEqual(ops.instructions(), "Integers are 64-bit.")
        self.assertEqual(ops.call("add", '{"a": 1, "b": 2}'), '{"sum":3}')


class CallTest(unittest.TestCase):
    def wit_error(self, name, payload):
        with fake_bindings.installed():
            ops = make_plugin().exports()()
            with self.assertRaises(fake_bindings.Err) as ctx:
                ops.call(name, json.dumps(payload))
        return ctx.exception.value

    def test_errors_map_onto_the_wit_variant(self):
        cases = [
            ("add", {"a": 2**62, "b": 2**62}, "Error_InvalidInput", "the sum 9223372036854775808 does not fit in 64 bits"),
            ("add", {"a": "x", "b": 1}, "Error_InvalidInput", 'input.a: expected an integer, got "x"'),
            ("raise_", {"kind": "not_found"}, "Error_NotFound", "not_found happened"),
            ("raise_", {"kind": "forbidden"}, "Error_Forbidden", "forbidden happened"),
            ("raise_", {"kind": "failed"}, "Error_Failed", "failed happened"),
            ("raise_", {"kind": "boom"}, "Error_Failed", "KeyError: 'boom'"),
            ("nope", {}, "Error_NotFound", "no operation `nope` in this plugin (it has: add, raise_)"),
        ]
        for name, payload, case, text in cases:
            with self.subTest(name=name, payload=payload):
                err = self.wit_error(name, payload)
                self.assertEqual(type(err).__name__, case)
                self.assertEqual(err.value, text)

    def test_success_returns_json_text(self):
        with fake_bindings.installed():
            out = make_plugin().exports()().call("add", '{"a": 9223372036854775806, "b": 1}')
        self.assertEqual(out, '{"sum":9223372036854775807}')

    def test_unexpected_exception_keeps_its_cause(self):
        with self.assertRaises(Failed) as ctx:
            make_plugin().call_json("raise_", '{"kind": "x"}')
        self.assertIsInstance(ctx.exception.__cause__, KeyError)


class CheckExamplesTest(unittest.TestCase):
    def test_runs_safe_examples_and_reports_mismatches(self):
        self.assertEqual(make_plugin().check_examples(), 2)
        plugin = Plugin()

        @plugin.operation(
            examples=[
                example("Wrong", {"x": 1}, {"y": 2}),
                example("Bool is no number", {"x": 1}, {"y": True}),
                example("Float is no integer", {"x": 1}, {"y": 1.0}),
                example("Right", {"x": 1}, {"y": 1}),
            ]
        )
        def op(x: int) -> dict:
            """Doc."""
            return {"y": x}

        with self.assertRaises(AssertionError) as ctx:
            plugin.check_examples()
        lines = str(ctx.exception).splitlines()
        self.assertEqual(lines[0], 'op example 1 (Wrong): output {"y":1} differs from the expected {"y":2}')
        self.assertEqual(len(lines), 3)
        self.assertTrue(lines[2].startswith("op example 3 (Float is no integer)"))


class DecoratorErrorsTest(unittest.TestCase):
    def refusal(self, fn, **options):
        with self.assertRaises((ValueError, TypeError)) as ctx:
            Plugin().operation(**options)(fn)
        return str(ctx.exception)

    def test_bad_names(self):
        def op() -> None:
            """Doc."""

        for name in ["Add", "1add", "add-two", "", "a" * 65, "ä"]:
            with self.subTest(name=name):
                self.assertIn(f"invalid operation name {name!r}", self.refusal(op, name=name))
        Plugin().operation(name="a" * 64)(op)

    def test_missing_docstring(self):
        def nodoc(x: int) -> int:
            return x

        self.assertIn("operation `nodoc`", self.refusal(nodoc))
        self.assertIn("no docstring", self.refusal(nodoc))

    def test_duplicate(self):
        plugin = Plugin()

        def op() -> None:
            """Doc."""

        plugin.operation(op)
        with self.assertRaisesRegex(ValueError, "operation `op` is defined twice"):
            plugin.operation(op)

    def test_hints_parameters_and_examples(self):
        def op(x: int) -> int:
            """Doc."""
            return x

        def untyped(x) -> int:
            """Doc."""

        def star(*xs: int) -> int:
            """Doc."""

        self.assertIn("unknown hint 'readonly'", self.refusal(op, hints=["readonly"]))
        self.assertIn("contradict", self.refusal(op, hints=["read_only", "destructive"]))
        self.assertIn("parameter `x` has no type hint", self.refusal(untyped))
        self.assertIn("*args", self.refusal(star))
        self.assertIn(
            "example 1 ('Bad') does not fit the input types: input.x: expected an integer",
            self.refusal(op, examples=[example("Bad", {"x": "1"}, 1)]),
        )
        self.assertIn("build examples with example(...)", self.refusal(op, examples=[{"x": 1}]))
        self.assertIn("at most 16", self.refusal(op, examples=[example("e", {"x": 1}, 1)] * 17))
        self.assertIn("over 16 KiB", self.refusal(op, examples=[example("e", {"x": 1}, "x" * 17000)]))
        with self.assertRaisesRegex(ValueError, "needs a description"):
            example("", {"x": 1})

    def test_decorated_function_stays_callable(self):
        plugin = Plugin()

        @plugin.operation
        def double(x: int) -> int:
            """Doc."""
            return 2 * x

        self.assertEqual(double(4), 8)


class HostTest(unittest.TestCase):
    def test_log_through_the_host(self):
        with fake_bindings.installed() as (types, host, _):
            log("warn", "careful")
        self.assertEqual(host.logs, [(types.LogLevel.WARN, "careful")])
        with self.assertRaisesRegex(ValueError, "log level must be one of"):
            log("loud", "x")

    def test_log_outside_a_component_goes_to_stderr(self):
        err = io.StringIO()
        with contextlib.redirect_stderr(err):
            log("info", "hello")
        self.assertEqual(err.getvalue(), "[info] hello\n")

    def test_call_encodes_input_and_parses_output(self):
        with fake_bindings.installed() as (types, host, _):
            host.answers["calc.eval"] = lambda text: json.dumps({"echo": json.loads(text)})
            out = call("calc.eval", {"n": 2**63 - 1, "s": Sum(1)})
        self.assertEqual(out, {"echo": {"n": 9223372036854775807, "s": {"sum": 1}}})

    def test_call_errors_carry_the_hub_code(self):
        with fake_bindings.installed() as (types, host, _):
            host.answers["calc.eval"] = types.CallError(types.CallErrorCode.INVALID_INPUT, "bad expression")
            with self.assertRaises(CallError) as ctx:
                call("calc.eval", {})
        self.assertEqual((ctx.exception.tool, ctx.exception.code, ctx.exception.message), ("calc.eval", "invalid_input", "bad expression"))
        self.assertEqual(str(ctx.exception), "calc.eval failed (invalid_input): bad expression")

    def test_call_outside_a_component_says_so(self):
        with self.assertRaisesRegex(RuntimeError, "needs the hub"):
            call("calc.eval", {})

    def test_reveal_secret_returns_the_value_or_says_why_not(self):
        with fake_bindings.installed() as (_, host, _):
            host.secrets["signing_key"] = "s3cret"
            self.assertEqual(reveal_secret("signing_key"), "s3cret")
            with self.assertRaises(Failed) as ctx:
                reveal_secret("other")
        self.assertEqual(ctx.exception.message, "secret other: other is not declared with reveal = true")
        with self.assertRaisesRegex(RuntimeError, "needs the hub"):
            reveal_secret("signing_key")


class ConfigTest(unittest.TestCase):
    def test_outside_a_component_every_key_is_unset(self):
        self.assertIsNone(config.get("retries"))
        self.assertIsNone(config.get_int("retries"))
        self.assertEqual(config.get_all(), {})

    def test_each_getter_parses_its_type(self):
        with fake_bindings.installed() as (_, _, store):
            store.values.update(name="x", retries="3", big="9223372036854775809", ratio="0.25", verbose="false")
            got = (
                config.get_str("name"),
                config.get_int("retries"),
                config.get_int("big"),
                config.get_float("ratio"),
                config.get_bool("verbose"),
                config.get("missing"),
                config.get_all()["retries"],
            )
        self.assertEqual(got, ("x", 3, 9223372036854775809, 0.25, False, None, "3"))

    def test_a_wrong_value_names_the_key_and_the_text(self):
        with fake_bindings.installed() as (_, _, store):
            store.values.update(retries="three", verbose="yes", ratio="1.2.3")
            for getter, key, kind in (
                (config.get_int, "retries", "an integer"),
                (config.get_bool, "verbose", "a boolean"),
                (config.get_float, "ratio", "a number"),
            ):
                with self.assertRaises(Failed) as ctx:
                    getter(key)
                self.assertEqual(ctx.exception.message, f"configuration {key} = {store.values[key]!r} is not {kind}")

    def test_a_store_error_names_the_key(self):
        with fake_bindings.installed() as (_, _, store):
            store.failing.add("retries")
            with self.assertRaises(Failed) as ctx:
                config.get("retries")
        self.assertEqual(ctx.exception.message, "configuration retries: upstream: the store is down")


if __name__ == "__main__":
    unittest.main()
