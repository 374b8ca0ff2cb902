"""The `units` plugin: its two operations declared with the wasmhub_plugin SDK over
the conversion logic in `units_core`. Schemas come from the type hints below; this
file holds no WIT types (`plugin.exports()` is the only bridge to the component).
"""

from dataclasses import dataclass, field
from typing import Annotated, Literal, Optional

import units_core
from wasmhub_plugin import InvalidInput, NotFound, Plugin, example

Dimension = Literal[tuple(units_core.DIMENSIONS)]

_UNIT_NAME = {"minLength": 1, "maxLength": units_core.MAX_UNIT_NAME}

plugin = Plugin(
    instructions=(
        "Units are given by symbol or name (`km`, `kilometres`). Spelling is matched exactly "
        "first, then case-insensitively when that is unambiguous: `MB` is a megabyte, `Mb` a "
        "megabit, `mb` is refused as ambiguous. Call `units.list_units` to see every unit of a "
        "dimension; `convert` only converts within one dimension. Factors are exact, and the "
        "result is the nearest double to the exact value."
    )
)


@dataclass
class Conversion:
    value: Annotated[float, "The converted quantity (nearest double to the exact result)."]
    from_: Annotated[str, "Canonical symbol of the source unit."]
    to: Annotated[str, "Canonical symbol of the target unit."]
    dimension: Annotated[str, "What both units measure."]
    factor: Annotated[Optional[float], "Multiply by this to convert; null for temperatures, which have offsets."]


@dataclass
class UnitInfo:
    symbol: str
    name: str
    aliases: list[str]


@dataclass
class DimensionUnits:
    dimension: str
    base: Annotated[str, "Symbol of the unit factors refer to."]
    units: list[UnitInfo]


@dataclass
class UnitList:
    dimensions: list[DimensionUnits] = field(default_factory=list)


_ERRORS = {"invalid-input": InvalidInput, "not-found": NotFound}


def _core(fn, *args):
    """Runs a units_core function, its UnitsError raised as the SDK error of its kind."""
    try:
        return fn(*args)
    except units_core.UnitsError as e:
        raise _ERRORS[e.kind](e.message) from None


@plugin.operation(
    hints=["read_only", "idempotent"],
    examples=[
        example(
            "Converts miles to kilometres",
            {"value": 5, "from": "mi", "to": "km"},
            {"value": 8.04672, "from": "mi", "to": "km", "dimension": "length", "factor": 1.609344},
        ),
        example(
            "Converts a temperature (affine: no factor)",
            {"value": 100, "from": "celsius", "to": "F"},
            {"value": 212.0, "from": "C", "to": "F", "dimension": "temperature", "factor": None},
        ),
        example(
            "Converts binary to decimal data sizes",
            {"value": 3, "from": "GiB", "to": "MB"},
            {"value": 3221.225472, "from": "GiB", "to": "MB", "dimension": "data", "factor": 1073.741824},
        ),
    ],
)
def convert(
    value: Annotated[float, "The quantity to convert."],
    from_: Annotated[str, "The unit of `value` (symbol or name, e.g. `mi`, `miles`).", _UNIT_NAME],
    to: Annotated[str, "The unit to convert to, of the same dimension.", _UNIT_NAME],
) -> Conversion:
    """Convert a value between units of length, mass, temperature, volume, area, speed, time or data size, using exact factors (e.g. 5 mi to km, 100 F to C, 3 GiB to MB).

    Units are symbols or names: m, km, mi, ft, kg, lb, C, F, l, gal, m2, acre, km/h, mph, h, yr, MB, GiB.
    """
    out = _core(units_core.convert, value, from_, to)
    return Conversion(out["value"], out["from"], out["to"], out["dimension"], out["factor"])


@plugin.operation(
    hints=["read_only", "idempotent"],
    examples=[
        example(
            "Lists the temperature units",
            {"dimension": "temperature"},
            {
                "dimensions": [
                    {
                        "dimension": "temperature",
                        "base": "K",
                        "units": [
                            {"symbol": "K", "name": "kelvin", "aliases": ["kelvins", "°k"]},
                            {"symbol": "C", "name": "degree Celsius", "aliases": ["°c", "celsius", "centigrade"]},
                            {"symbol": "F", "name": "degree Fahrenheit", "aliases": ["°f", "fahrenheit"]},
                            {"symbol": "R", "name": "degree Rankine", "aliases": ["°r", "rankine"]},
                        ],
                    }
                ]
            },
        ),
    ],
)
def list_units(dimension: Annotated[Optional[Dimension], "Only this dimension (default: all)."] = None) -> UnitList:
    """List the units `convert` understands, with their symbols, names and aliases, for one dimension or all of them."""
    out = _core(units_core.list_units, dimension)
    return UnitList(
        [
            DimensionUnits(d["dimension"], d["base"], [UnitInfo(**u) for u in d["units"]])
            for d in out["dimensions"]
        ]
    )


Operations = plugin.exports()
