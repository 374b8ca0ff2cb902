"""The plugin's configuration: the keys its manifest declares (`[config.NAME]`, with a
type and a default) with the values the operator set (`[plugin.NAME] config` in the
hub's TOML), read through the `wasi:config/store` import. The hub gives a plugin only
its own keys, as text; the typed getters parse one and name the key when it does not.

Outside a component (plain Python, unit tests) there is no configuration: every key is
unset; patch `get` (or the typed getter your module uses) to test with values.

Secrets are not configuration: a secret declared with `inject` is added by the hub to
requests to its declared host and the plugin never holds it; the rare one declared
`reveal = true` is read with `reveal_secret` (host.py).
"""

import re

from .errors import Failed

_INTEGER = re.compile(r"-?(0|[1-9][0-9]*)")
_NUMBER = re.compile(r"-?(0|[1-9][0-9]*)(\.[0-9]+)?([eE][+-]?[0-9]+)?")
_BOOLEAN = re.compile(r"true|false")


def _store():
    try:
        from componentize_py_types import Err
        from wit_world.imports import store
    except ImportError:
        return None, None
    return store, Err


def get(key):
    """The value of `key` as text; None when it has neither a value nor a default."""
    store, err = _store()
    if store is None:
        return None
    try:
        return store.get(key)
    except err as e:
        raise Failed(f"configuration {key}: {_describe(e.value)}") from None


def get_str(key):
    """The value of a `string` key."""
    return get(key)


def get_int(key):
    """The value of an `integer` key, exact at any size."""
    return _parsed(key, _INTEGER, "an integer", int)


def get_float(key):
    """The value of a `number` key."""
    return _parsed(key, _NUMBER, "a number", float)


def get_bool(key):
    """The value of a `boolean` key."""
    return _parsed(key, _BOOLEAN, "a boolean", lambda text: text == "true")


def get_all():
    """Every key with its value as text, as a dict."""
    store, err = _store()
    if store is None:
        return {}
    try:
        return dict(store.get_all())
    except err as e:
        raise Failed(f"configuration: {_describe(e.value)}") from None


def _parsed(key, pattern, kind, convert):
    """The value of `key` converted, when its text is all `pattern`; None when unset."""
    text = get(key)
    if text is None:
        return None
    if not pattern.fullmatch(text):
        raise Failed(f"configuration {key} = {text!r} is not {kind}")
    return convert(text)


def _describe(error):
    """The store's error variant (`Error_Upstream(value=...)`) as `upstream: text`."""
    kind = type(error).__name__.removeprefix("Error_").lower()
    return f"{kind}: {getattr(error, 'value', error)}"
