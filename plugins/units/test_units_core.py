"""Tests of the `units` plugin's logic (`units_core`), runnable with plain Python:
`cd plugins/units && python3 -m unittest`."""

import unittest

import units_core as u


def conv(value, src, dst):
    return u.convert(value, src, dst)["value"]


class ConvertTest(unittest.TestCase):
    def test_exact_factors(self):
        self.assertEqual(conv(1, "mi", "km"), 1.609344)
        self.assertEqual(conv(1, "in", "cm"), 2.54)
        self.assertEqual(conv(0.1, "km", "m"), 100.0)
        self.assertEqual(conv(1, "lb", "kg"), 0.45359237)
        self.assertEqual(conv(1, "gal", "l"), 3.785411784)
        self.assertEqual(conv(1, "acre", "m2"), 4046.8564224)
        self.assertAlmostEqual(conv(1, "ha", "acre"), 2.47105381467165, places=13)
        self.assertEqual(conv(100, "km/h", "m/s"), 27.77777777777778)
        self.assertEqual(conv(1, "kn", "km/h"), 1.852)
        self.assertEqual(conv(1, "d", "h"), 24.0)
        self.assertEqual(conv(1, "yr", "d"), 365.25)
        self.assertEqual(conv(1, "GiB", "MB"), 1073.741824)
        self.assertEqual(conv(8, "bit", "B"), 1.0)
        self.assertEqual(conv(1, "Gbit", "MB"), 125.0)
        self.assertEqual(conv(10**30, "B", "B"), 1e30)

    def test_temperatures_are_affine(self):
        self.assertEqual(conv(100, "C", "F"), 212.0)
        self.assertEqual(conv(32, "F", "C"), 0.0)
        self.assertEqual(conv(-40, "C", "F"), -40.0)
        self.assertEqual(conv(0, "K", "C"), -273.15)
        self.assertEqual(conv(491.67, "R", "F"), 32.0)
        out = u.convert(20, "celsius", "kelvin")
        self.assertEqual(out, {"value": 293.15, "from": "C", "to": "K", "dimension": "temperature", "factor": None})
        with self.assertRaises(u.UnitsError) as e:
            u.convert(-500, "F", "C")
        self.assertIn("absolute zero", e.exception.message)

    def test_output_names_canonical_units_and_factor(self):
        out = u.convert(3, "Miles", "kilometres")
        self.assertEqual(out["from"], "mi")
        self.assertEqual(out["to"], "km")
        self.assertEqual(out["dimension"], "length")
        self.assertEqual(out["factor"], 1.609344)

    def test_errors(self):
        with self.assertRaises(u.UnitsError) as e:
            u.convert(1, "kg", "m")
        self.assertEqual(e.exception.kind, "invalid-input")
        self.assertIn("cannot convert mass (kg) to length (m)", e.exception.message)
        with self.assertRaises(u.UnitsError) as e:
            u.convert(1, "furlongs", "m")
        self.assertEqual(e.exception.kind, "not-found")
        self.assertIn("list_units", e.exception.message)
        with self.assertRaises(u.UnitsError) as e:
            u.convert(float("nan"), "m", "km")
        self.assertEqual(e.exception.kind, "invalid-input")
        with self.assertRaises(u.UnitsError) as e:
            u.convert(True, "m", "km")
        self.assertEqual(e.exception.kind, "invalid-input")
        with self.assertRaises(u.UnitsError) as e:
            u.convert(10**400, "ly", "nm")
        self.assertIn("too large", e.exception.message)


class LookupTest(unittest.TestCase):
    def test_exact_spelling_wins_then_case_insensitive(self):
        self.assertEqual(u.lookup("MB").symbol, "MB")
        self.assertEqual(u.lookup("Mb").symbol, "Mbit")
        self.assertEqual(u.lookup("KILOGRAMS").symbol, "kg")
        self.assertEqual(u.lookup(" µm ").symbol, "um")
        with self.assertRaises(u.UnitsError) as e:
            u.lookup("mb")
        self.assertEqual(e.exception.kind, "invalid-input")
        self.assertIn("MB, Mbit", e.exception.message)
        with self.assertRaises(u.UnitsError):
            u.lookup("")

    def test_no_name_means_two_units(self):
        seen = {}
        for unit in u.UNITS:
            for key in {unit.symbol, unit.name, *unit.aliases}:
                other = seen.setdefault(key, unit)
                self.assertIs(other, unit, f"`{key}` names both {other.symbol} and {unit.symbol}")

    def test_every_dimension_has_its_base_with_factor_one(self):
        for dimension, (base, _) in u.DIMENSIONS.items():
            unit = u.lookup(base)
            self.assertEqual(unit.dimension, dimension)
            if dimension != "temperature":
                self.assertEqual(unit.factor, 1)


class OperationsTest(unittest.TestCase):
    def test_list_units(self):
        out = u.list_units("temperature")
        self.assertEqual([d["dimension"] for d in out["dimensions"]], ["temperature"])
        self.assertEqual([x["symbol"] for x in out["dimensions"][0]["units"]], ["K", "C", "F", "R"])
        everything = u.list_units()
        self.assertEqual(len(everything["dimensions"]), 8)
        with self.assertRaises(u.UnitsError) as e:
            u.list_units("colour")
        self.assertEqual(e.exception.kind, "not-found")


if __name__ == "__main__":
    unittest.main()
