"""Stand-ins for the modules componentize-py generates (`wit_world`,
`componentize_py_types`), shaped like its 0.25.1 output for wit/plugin.wit (with
`wasi:config/store`, which its world imports), so the
WIT-facing code runs under plain CPython. `installed()` puts them in sys.modules for
the duration of a `with` block."""

import contextlib
import enum
import sys
import types as pytypes
from dataclasses import dataclass
from typing import Optional


@dataclass(frozen=True)
class Err(Exception):
    value: object


class Hints(enum.Flag):
    READ_ONLY = enum.auto()
    DESTRUCTIVE = enum.auto()
    IDEMPOTENT = enum.auto()
    OPEN_WORLD = enum.auto()


@dataclass
class Example:
    description: str
    input: str
    output: Optional[str]


@dataclass
class OperationSpec:
    name: str
    description: str
    input_schema: str
    output_schema: Optional[str]
    hints: Hints
    examples: list


def _case(name):
    return dataclass(type(name, (), {"__annotations__": {"value": str}}))


class LogLevel(enum.Enum):
    TRACE = 0
    DEBUG = 1
    INFO = 2
    WARN = 3
    ERROR = 4


class CallErrorCode(enum.Enum):
    INVALID_INPUT = 0
    NOT_FOUND = 1
    FORBIDDEN = 2
    TIMEOUT = 3
    PLUGIN_ERROR = 7


@dataclass
class CallError:
    code: CallErrorCode
    message: str


class ExportsBase:
    """Plays `wit_world.exports.Operations`."""


class Host:
    """Plays `wit_world.imports.host`: records logs, answers calls from a table."""

    def __init__(self):
        self.logs = []
        self.answers = {}
        self.secrets = {}

    def log(self, level, message):
        self.logs.append((level, message))

    def call(self, tool, input_json):
        answer = self.answers[tool]
        if isinstance(answer, CallError):
            raise Err(answer)
        return answer(input_json)

    def reveal_secret(self, name):
        if name not in self.secrets:
            raise Err(f"{name} is not declared with reveal = true")
        return self.secrets[name]


@dataclass
class Error_Upstream:
    value: str


class Store:
    """Plays `wit_world.imports.store` (`wasi:config/store`): answers from `values`;
    a key in `failing` raises the store's error."""

    def __init__(self):
        self.values = {}
        self.failing = set()

    def get(self, key):
        if key in self.failing:
            raise Err(Error_Upstream("the store is down"))
        return self.values.get(key)

    def get_all(self):
        return list(self.values.items())


@contextlib.contextmanager
def installed():
    host = Host()
    store = Store()
    types = pytypes.SimpleNamespace(
        Hints=Hints,
        Example=Example,
        OperationSpec=OperationSpec,
        LogLevel=LogLevel,
        CallErrorCode=CallErrorCode,
        CallError=CallError,
        **{n: _case(n) for n in ("Error_InvalidInput", "Error_NotFound", "Error_Forbidden", "Error_Failed")},
    )
    modules = {
        "componentize_py_types": pytypes.SimpleNamespace(Err=Err),
        "wit_world": pytypes.SimpleNamespace(),
        "wit_world.imports": pytypes.SimpleNamespace(types=types, host=host, store=store),
        "wit_world.imports.types": types,
        "wit_world.imports.host": host,
        "wit_world.imports.store": store,
        "wit_world.exports": pytypes.SimpleNamespace(Operations=ExportsBase),
    }
    saved = {k: sys.modules.get(k) for k in modules}
    sys.modules.update(modules)
    try:
        yield types, host, store
    finally:
        for k, v in saved.items():
            if v is None:
                sys.modules.pop(k, None)
            else:
                sys.modules[k] = v
