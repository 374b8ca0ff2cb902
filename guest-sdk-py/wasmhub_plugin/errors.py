"""The exceptions of the SDK: the four an operation raises to report a typed failure
(they map one to one onto the cases of the WIT `error` variant) and `CallError`, the
failure of a nested `call` to another operation through the hub.
"""


class PluginError(Exception):
    """A failure the model reads; `code` is the WIT `error` case it becomes."""

    code = "failed"

    def __init__(self, message):
        super().__init__(message)
        self.message = str(message)


class InvalidInput(PluginError):
    """The input passed the schema but is still unacceptable; say how to fix it."""

    code = "invalid-input"


class NotFound(PluginError):
    """Something the input names does not exist."""

    code = "not-found"


class Forbidden(PluginError):
    """The plugin was not allowed to do what the operation needed."""

    code = "forbidden"


class Failed(PluginError):
    """The operation ran and failed."""

    code = "failed"


class CallError(Exception):
    """A nested `call(tool, input)` failed. `code` is the hub's stable code with
    underscores (`invalid_input`, `not_found`, `forbidden`, `timeout`, `memory_limit`,
    `output_limit`, `trap`, `plugin_error`, `cancelled`, `call_limit`)."""

    def __init__(self, tool, code, message):
        super().__init__(f"{tool} failed ({code}): {message}")
        self.tool = tool
        self.code = code
        self.message = message
