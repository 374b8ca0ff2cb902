"""The `{{name}}` plugin: its operations, as type-hinted functions.

The wasmhub_plugin SDK derives each operation's JSON Schema from the hints, decodes
the input into them and encodes the result; the docstring is what a model reads.
`Operations` at the end is the class componentize-py binds to the component export.
"""

from dataclasses import dataclass
from typing import Annotated, Optional

from wasmhub_plugin import InvalidInput, Plugin, config, example

plugin = Plugin()

MAX_OUTPUT_CHARS = 10_000


@dataclass
class Repeated:
    text: Annotated[str, "The input repeated, joined by the separator."]
    length: Annotated[int, "Characters in `text`."]


@plugin.operation(
    hints=["read_only", "idempotent"],
    # Examples give every input that configuration could change: the hub runs them
    # at load with the operator's configuration.
    examples=[
        example("Repeats a word three times", {"text": "hi", "times": 3, "separator": " "}, {"text": "hi hi hi", "length": 8}),
        example("Joins with a custom separator", {"text": "ab", "times": 2, "separator": "-"}, {"text": "ab-ab", "length": 5}),
    ],
)
def repeat(
    text: Annotated[str, "The text to repeat."],
    times: Annotated[int, "How many copies (1 to 100).", {"minimum": 1, "maximum": 100}] = 2,
    separator: Annotated[Optional[str], "Put between copies (default: the operator's `separator`, else nothing)."] = None,
) -> Repeated:
    """Repeat a text a number of times, joined by a separator."""
    if separator is None:
        # The operator's `separator` ([config.separator] in {{name}}.toml); in plain
        # Python nothing is configured.
        separator = config.get_str("separator") or ""
    out = separator.join([text] * times)
    if len(out) > MAX_OUTPUT_CHARS:
        raise InvalidInput(f"the result would be {len(out)} characters; the limit is {MAX_OUTPUT_CHARS}: use a shorter text or fewer times")
    return Repeated(out, len(out))


Operations = plugin.exports()
