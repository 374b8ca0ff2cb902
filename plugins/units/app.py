"""Component glue of the `units` plugin: adapts `units_core` to the WIT world
`wasmhub:plugin/plugin` (componentize-py 0.25.1 bindings). Only this file knows the
generated `wit_world` types; everything it calls is plain Python.
"""

import json

import units_core
from componentize_py_types import Err
from wit_world import exports
from wit_world.imports import types

_HINTS = {
    "read_only": types.Hints.READ_ONLY,
    "destructive": types.Hints.DESTRUCTIVE,
    "idempotent": types.Hints.IDEMPOTENT,
    "open_world": types.Hints.OPEN_WORLD,
}

_ERRORS = {
    "invalid-input": types.Error_InvalidInput,
    "not-found": types.Error_NotFound,
    "forbidden": types.Error_Forbidden,
    "failed": types.Error_Failed,
}


def _hints(names):
    flags = types.Hints(0)
    for name in names:
        flags |= _HINTS[name]
    return flags


class Operations(exports.Operations):
    def list(self):
        return [
            types.OperationSpec(
                name=op["name"],
                description=op["description"],
                input_schema=json.dumps(op["input_schema"]),
                output_schema=json.dumps(op["output_schema"]),
                hints=_hints(op["hints"]),
            )
            for op in units_core.OPERATIONS
        ]

    def call(self, name, input_json):
        try:
            return units_core.call(name, input_json)
        except units_core.UnitsError as e:
            raise Err(_ERRORS[e.kind](e.message))
        except Exception as e:  # a bug here must still reach the model as a typed error
            raise Err(types.Error_Failed(f"{type(e).__name__}: {e}"))
