"""Unit tests of the `{{name}}` plugin with plain Python: `python3 -m unittest`.
No component and no hub needed; `plugin.invoke` runs an operation the way the hub's
call does (JSON in, decoded into the type hints, JSON out)."""

import unittest
from unittest import mock

import app
from wasmhub_plugin import InvalidInput


class RepeatTest(unittest.TestCase):
    def test_examples_pass(self):
        self.assertEqual(app.plugin.check_examples(), 2)

    def test_defaults(self):
        self.assertEqual(app.plugin.invoke("repeat", {"text": "ok"}), {"text": "okok", "length": 4})

    def test_the_operators_separator_when_the_input_gives_none(self):
        with mock.patch.object(app.config, "get_str", lambda key: {"separator": "+"}[key]):
            self.assertEqual(app.plugin.invoke("repeat", {"text": "ok"}), {"text": "ok+ok", "length": 5})

    def test_the_function_is_plain_python(self):
        self.assertEqual(app.repeat("x", 3, ""), app.Repeated("xxx", 3))

    def test_bad_input_names_the_field(self):
        with self.assertRaises(InvalidInput) as e:
            app.plugin.invoke("repeat", {"text": "x", "times": "3"})
        self.assertEqual(e.exception.message, 'input.times: expected an integer, got "3"')
        with self.assertRaises(InvalidInput) as e:
            app.plugin.invoke("repeat", {"text": "x", "times": 0})
        self.assertEqual(e.exception.message, "input.times: 0 is less than the minimum 1")

    def test_output_is_bounded(self):
        with self.assertRaises(InvalidInput):
            app.plugin.invoke("repeat", {"text": "x" * 1000, "times": 100})


if __name__ == "__main__":
    unittest.main()
