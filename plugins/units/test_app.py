"""Tests of the `units` plugin as the hub sees it (`app.plugin`: specs, JSON calls,
typed errors, the examples), with plain Python. The SDK comes from the repository's
`guest-sdk-py/` when it is not installed."""

import json
import pathlib
import sys
import unittest

try:
    import wasmhub_plugin  # noqa: F401
except ImportError:
    sys.path.insert(0, str(pathlib.Path(__file__).resolve().parents[2] / "guest-sdk-py"))

import app
import units_core
from wasmhub_plugin import PluginError


class AppTest(unittest.TestCase):
    def test_examples_pass(self):
        self.assertEqual(app.plugin.check_examples(), 4)

    def test_call_round_trips_json(self):
        out = json.loads(app.plugin.call_json("convert", json.dumps({"value": 5, "from": "mi", "to": "km"})))
        self.assertEqual(out["value"], 8.04672)
        self.assertEqual(len(app.plugin.invoke("list_units", {})["dimensions"]), 8)
        self.assertEqual(len(app.plugin.invoke("list_units", {"dimension": None})["dimensions"]), 8)
        self.assertEqual(app.plugin.invoke("convert", {"value": 10**30, "from": "B", "to": "B"})["value"], 1e30)

    def test_call_errors_are_typed(self):
        cases = [
            ("convert", "{", "invalid-input"),
            ("convert", '{"value": 1, "from": "m"}', "invalid-input"),
            ("convert", '{"value": 1, "from": "m", "to": "km", "x": 1}', "invalid-input"),
            ("convert", '{"value": 1, "from": 3, "to": "km"}', "invalid-input"),
            ("convert", '{"value": true, "from": "m", "to": "km"}', "invalid-input"),
            ("convert", '{"value": 1, "from": "kg", "to": "m"}', "invalid-input"),
            ("convert", '{"value": 1, "from": "furlong", "to": "m"}', "not-found"),
            ("convert", "[1]", "invalid-input"),
            ("list_units", '{"dimension": 5}', "invalid-input"),
            ("list_units", '{"dimension": "colour"}', "invalid-input"),
            ("nope", "{}", "not-found"),
        ]
        for name, payload, code in cases:
            with self.subTest(name=name, payload=payload):
                with self.assertRaises(PluginError) as e:
                    app.plugin.call_json(name, payload)
                self.assertEqual(e.exception.code, code)

    def test_specs_follow_the_contract(self):
        specs = app.plugin.specs()
        self.assertEqual([s.name for s in specs], ["convert", "list_units"])
        convert, list_units = specs
        self.assertEqual(list(convert.input_schema["properties"]), ["value", "from", "to"])
        self.assertEqual(convert.input_schema["required"], ["value", "from", "to"])
        self.assertEqual(convert.input_schema["properties"]["from"]["maxLength"], units_core.MAX_UNIT_NAME)
        self.assertEqual(convert.output_schema["required"], ["value", "from", "to", "dimension", "factor"])
        self.assertEqual(convert.output_schema["properties"]["factor"]["type"], ["number", "null"])
        enum = list_units.input_schema["properties"]["dimension"]["enum"]
        self.assertEqual(enum, [*units_core.DIMENSIONS, None])
        self.assertNotIn("required", list_units.input_schema)
        for spec in specs:
            self.assertEqual(spec.hints, ("read_only", "idempotent"))
            self.assertTrue(spec.description.startswith(("Convert a value", "List the units")))
        self.assertIn("list_units", app.plugin.instructions)


if __name__ == "__main__":
    unittest.main()
