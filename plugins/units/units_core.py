"""Unit conversion logic of the `units` plugin, free of any component glue.

Owns the unit tables (length, mass, temperature, volume, area, speed, time, data
size), unit-name lookup and exact conversion with `fractions.Fraction`. `app.py`
declares the operations over it with the wasmhub_plugin SDK; the tests in
`test_units_core.py` exercise it with plain Python.
"""

import math
from fractions import Fraction

# Exact factors to each dimension's base unit, from the SI and the international
# yard and pound (1959) definitions; as strings so that Fraction keeps them exact.
_INCH = Fraction("0.0254")
_FOOT = 12 * _INCH
_YARD = 3 * _FOOT
_MILE = 1760 * _YARD
_POUND = Fraction("0.45359237")
_US_GALLON = Fraction("0.003785411784")
_UK_GALLON = Fraction("0.00454609")
_DAY = Fraction(86400)
_JULIAN_YEAR = Fraction("365.25") * _DAY

# (symbol, name, factor to base, aliases) per dimension. Temperature is affine and
# handled separately; its entries carry no factor.
DIMENSIONS = {
    "length": ("m", [
        ("m", "metre", 1, ["meter", "meters", "metres"]),
        ("km", "kilometre", 1000, ["kilometer", "kilometers", "kilometres"]),
        ("cm", "centimetre", Fraction(1, 100), ["centimeter", "centimeters", "centimetres"]),
        ("mm", "millimetre", Fraction(1, 1000), ["millimeter", "millimeters", "millimetres"]),
        ("um", "micrometre", Fraction(1, 10**6), ["µm", "micrometer", "micron", "microns"]),
        ("nm", "nanometre", Fraction(1, 10**9), ["nanometer", "nanometers"]),
        ("in", "inch", _INCH, ["inches", '"']),
        ("ft", "foot", _FOOT, ["feet", "'"]),
        ("yd", "yard", _YARD, ["yards"]),
        ("mi", "mile", _MILE, ["miles"]),
        ("nmi", "nautical mile", 1852, ["nautical miles"]),
        ("au", "astronomical unit", 149597870700, ["astronomical units"]),
        ("ly", "light-year", 9460730472580800, ["light year", "light years", "light-years"]),
    ]),
    "mass": ("kg", [
        ("kg", "kilogram", 1, ["kilograms", "kilo", "kilos"]),
        ("g", "gram", Fraction(1, 1000), ["grams"]),
        ("mg", "milligram", Fraction(1, 10**6), ["milligrams"]),
        ("ug", "microgram", Fraction(1, 10**9), ["µg", "mcg", "micrograms"]),
        ("t", "tonne", 1000, ["tonnes", "metric ton", "metric tons"]),
        ("lb", "pound", _POUND, ["lbs", "pounds"]),
        ("oz", "ounce", _POUND / 16, ["ounces"]),
        ("st", "stone", 14 * _POUND, ["stones"]),
        ("short_ton", "short ton (US)", 2000 * _POUND, ["us ton", "us tons", "short tons"]),
        ("long_ton", "long ton (UK)", 2240 * _POUND, ["uk ton", "uk tons", "long tons"]),
    ]),
    "temperature": ("K", [
        ("K", "kelvin", None, ["kelvins", "°k"]),
        ("C", "degree Celsius", None, ["°c", "celsius", "centigrade"]),
        ("F", "degree Fahrenheit", None, ["°f", "fahrenheit"]),
        ("R", "degree Rankine", None, ["°r", "rankine"]),
    ]),
    "volume": ("m3", [
        ("m3", "cubic metre", 1, ["m³", "cubic meter", "cubic meters", "cubic metres"]),
        ("l", "litre", Fraction(1, 1000), ["L", "liter", "liters", "litres"]),
        ("ml", "millilitre", Fraction(1, 10**6), ["mL", "milliliter", "milliliters", "cm3", "cc"]),
        ("cl", "centilitre", Fraction(1, 10**5), ["centiliter", "centiliters"]),
        ("dl", "decilitre", Fraction(1, 10**4), ["deciliter", "deciliters"]),
        ("gal", "US gallon", _US_GALLON, ["gallon", "gallons", "us gallon"]),
        ("qt", "US quart", _US_GALLON / 4, ["quart", "quarts"]),
        ("pt", "US pint", _US_GALLON / 8, ["pint", "pints"]),
        ("cup", "US cup", _US_GALLON / 16, ["cups"]),
        ("fl_oz", "US fluid ounce", _US_GALLON / 128, ["fl oz", "fluid ounce", "fluid ounces"]),
        ("tbsp", "US tablespoon", _US_GALLON / 256, ["tablespoon", "tablespoons"]),
        ("tsp", "US teaspoon", _US_GALLON / 768, ["teaspoon", "teaspoons"]),
        ("gal_uk", "imperial gallon", _UK_GALLON, ["imperial gallon", "imperial gallons", "uk gallon"]),
        ("pt_uk", "imperial pint", _UK_GALLON / 8, ["imperial pint", "imperial pints", "uk pint"]),
        ("ft3", "cubic foot", _FOOT**3, ["ft³", "cubic feet", "cubic foot"]),
        ("in3", "cubic inch", _INCH**3, ["in³", "cubic inch", "cubic inches"]),
    ]),
    "area": ("m2", [
        ("m2", "square metre", 1, ["m²", "square meter", "square meters", "square metres", "sqm"]),
        ("km2", "square kilometre", 10**6, ["km²", "square kilometer", "square kilometers"]),
        ("cm2", "square centimetre", Fraction(1, 10**4), ["cm²", "square centimeter"]),
        ("mm2", "square millimetre", Fraction(1, 10**6), ["mm²", "square millimeter"]),
        ("ha", "hectare", 10**4, ["hectares"]),
        ("acre", "acre", 4840 * _YARD**2, ["acres", "ac"]),
        ("ft2", "square foot", _FOOT**2, ["ft²", "sq ft", "square feet", "square foot"]),
        ("in2", "square inch", _INCH**2, ["in²", "sq in", "square inches"]),
        ("yd2", "square yard", _YARD**2, ["yd²", "square yards"]),
        ("mi2", "square mile", _MILE**2, ["mi²", "sq mi", "square miles"]),
    ]),
    "speed": ("m/s", [
        ("m/s", "metre per second", 1, ["mps", "meters per second", "metres per second"]),
        ("km/h", "kilometre per hour", Fraction(1000, 3600), ["kph", "kmh", "kilometers per hour"]),
        ("mph", "mile per hour", _MILE / 3600, ["mi/h", "miles per hour"]),
        ("kn", "knot", Fraction(1852, 3600), ["knot", "knots", "kt"]),
        ("ft/s", "foot per second", _FOOT, ["fps", "feet per second"]),
    ]),
    "time": ("s", [
        ("s", "second", 1, ["sec", "secs", "seconds"]),
        ("ms", "millisecond", Fraction(1, 1000), ["milliseconds"]),
        ("us", "microsecond", Fraction(1, 10**6), ["µs", "microseconds"]),
        ("ns", "nanosecond", Fraction(1, 10**9), ["nanoseconds"]),
        ("min", "minute", 60, ["minutes", "mins"]),
        ("h", "hour", 3600, ["hr", "hrs", "hours"]),
        ("d", "day", _DAY, ["day", "days"]),
        ("wk", "week", 7 * _DAY, ["week", "weeks"]),
        ("month", "month (1/12 Julian year)", _JULIAN_YEAR / 12, ["months"]),
        ("yr", "Julian year (365.25 days)", _JULIAN_YEAR, ["year", "years", "y"]),
    ]),
    "data": ("B", [
        ("B", "byte", 1, ["byte", "bytes"]),
        ("bit", "bit", Fraction(1, 8), ["bits", "b"]),
        ("kB", "kilobyte", 10**3, ["kilobyte", "kilobytes"]),
        ("MB", "megabyte", 10**6, ["megabyte", "megabytes"]),
        ("GB", "gigabyte", 10**9, ["gigabyte", "gigabytes"]),
        ("TB", "terabyte", 10**12, ["terabyte", "terabytes"]),
        ("PB", "petabyte", 10**15, ["petabyte", "petabytes"]),
        ("KiB", "kibibyte", 2**10, ["kibibyte", "kibibytes"]),
        ("MiB", "mebibyte", 2**20, ["mebibyte", "mebibytes"]),
        ("GiB", "gibibyte", 2**30, ["gibibyte", "gibibytes"]),
        ("TiB", "tebibyte", 2**40, ["tebibyte", "tebibytes"]),
        ("PiB", "pebibyte", 2**50, ["pebibyte", "pebibytes"]),
        ("kbit", "kilobit", Fraction(10**3, 8), ["kb", "kilobit", "kilobits"]),
        ("Mbit", "megabit", Fraction(10**6, 8), ["Mb", "megabit", "megabits"]),
        ("Gbit", "gigabit", Fraction(10**9, 8), ["Gb", "gigabit", "gigabits"]),
    ]),
}

# Offsets of temperature scales: kelvin = (value + offset) * scale.
_TEMPERATURE = {
    "K": (Fraction(0), Fraction(1)),
    "C": (Fraction("273.15"), Fraction(1)),
    "F": (Fraction("459.67"), Fraction(5, 9)),
    "R": (Fraction(0), Fraction(5, 9)),
}

MAX_UNIT_NAME = 64


class UnitsError(Exception):
    """A failure with the WIT error case it maps to (`invalid-input`, `not-found`, ...)."""

    def __init__(self, kind, message):
        super().__init__(message)
        self.kind = kind
        self.message = message


class Unit:
    __slots__ = ("symbol", "name", "factor", "aliases", "dimension")

    def __init__(self, symbol, name, factor, aliases, dimension):
        self.symbol = symbol
        self.name = name
        self.factor = None if factor is None else Fraction(factor)
        self.aliases = aliases
        self.dimension = dimension


def _build_index():
    units, exact, folded = [], {}, {}
    for dimension, (_, entries) in DIMENSIONS.items():
        for symbol, name, factor, aliases in entries:
            unit = Unit(symbol, name, factor, aliases, dimension)
            units.append(unit)
            for key in [symbol, name, *aliases]:
                exact.setdefault(key, unit)
                folded.setdefault(key.casefold(), []).append(unit)
    return units, exact, folded


UNITS, _EXACT, _FOLDED = _build_index()


def lookup(text):
    """The unit named `text`: exact spelling first (so `Mb` is a megabit and `MB` a
    megabyte), then case-insensitively when that is unambiguous."""
    key = text.strip()
    if not key or len(key) > MAX_UNIT_NAME:
        raise UnitsError("invalid-input", f"unit name must be 1 to {MAX_UNIT_NAME} characters")
    if key in _EXACT:
        return _EXACT[key]
    candidates = {id(u): u for u in _FOLDED.get(key.casefold(), [])}
    if len(candidates) == 1:
        return next(iter(candidates.values()))
    if len(candidates) > 1:
        options = ", ".join(sorted(u.symbol for u in candidates.values()))
        raise UnitsError("invalid-input", f"unit `{text}` is ambiguous: did you mean one of {options}?")
    raise UnitsError(
        "not-found",
        f"unknown unit `{text}`; call list_units to see the supported units "
        f"(dimensions: {', '.join(DIMENSIONS)})",
    )


def _exact(value):
    # Go through repr so 0.1 means one tenth, as written, not its binary approximation.
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise UnitsError("invalid-input", "value must be a number")
    if isinstance(value, float) and not math.isfinite(value):
        raise UnitsError("invalid-input", "value must be a finite number")
    return Fraction(value) if isinstance(value, int) else Fraction(repr(value))


def convert(value, from_unit, to_unit):
    """Converts `value` from one unit to another of the same dimension."""
    source, target = lookup(from_unit), lookup(to_unit)
    if source.dimension != target.dimension:
        raise UnitsError(
            "invalid-input",
            f"cannot convert {source.dimension} ({source.symbol}) to {target.dimension} ({target.symbol})",
        )
    x = _exact(value)
    if source.dimension == "temperature":
        offset, scale = _TEMPERATURE[source.symbol]
        kelvin = (x + offset) * scale
        if kelvin < 0:
            raise UnitsError("invalid-input", f"{value} {source.symbol} is below absolute zero")
        offset, scale = _TEMPERATURE[target.symbol]
        result, factor = kelvin / scale - offset, None
    else:
        factor = source.factor / target.factor
        result = x * factor
    try:
        as_float = float(result)
    except OverflowError:
        raise UnitsError("invalid-input", "the result is too large to represent") from None
    return {
        "value": as_float,
        "from": source.symbol,
        "to": target.symbol,
        "dimension": source.dimension,
        "factor": None if factor is None else float(factor),
    }


def list_units(dimension=None):
    """The supported units, for one dimension or all."""
    if dimension is not None and dimension not in DIMENSIONS:
        raise UnitsError("not-found", f"unknown dimension `{dimension}`; known: {', '.join(DIMENSIONS)}")
    names = [dimension] if dimension else list(DIMENSIONS)
    return {
        "dimensions": [
            {
                "dimension": d,
                "base": DIMENSIONS[d][0],
                "units": [
                    {"symbol": u.symbol, "name": u.name, "aliases": list(u.aliases)}
                    for u in UNITS
                    if u.dimension == d
                ],
            }
            for d in names
        ]
    }
