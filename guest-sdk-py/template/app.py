"""The `{{name}}` plugin: its operations, as type-hinted functions.

The wasmhub_plugin SDK derives each operation's JSON Schema from the hints, decodes
the input into them and encodes the result; the docstring is what a model reads.
`Operations` at the end is the class componentize-py binds to the component export.
"""

from dataclasses import dataclass
from typing import Annotated

from wasmhub_plugin import InvalidInput, Plugin, example

plugin = Plugin()

MAX_OUTPUT_CHARS = 10_000


@dataclass
class Repeated:
    text: Annotated[str, "The input repeated, joined by the separator."]
    length: Annotated[int, "Characters in `text`."]


@plugin.operation(
    hints=["read_only", "idempotent"],
    examples=[
        example("Repeats a word three times", {"text": "hi", "times": 3}, {"text": "hi hi hi", "length": 8}),
        example("Joins with a custom separator", {"text": "ab", "times": 2, "separator": "-"}, {"text": "ab-ab", "length": 5}),
    ],
)
def repeat(
    text: Annotated[str, "The text to repeat."],
    times: Annotated[int, "How many copies (1 to 100).", {"minimum": 1, "maximum": 100}] = 2,
    separator: Annotated[str, "Put between copies."] = " ",
) -> Repeated:
    """Repeat a text a number of times, joined by a separator (a space by default)."""
    out = separator.join([text] * times)
    if len(out) > MAX_OUTPUT_CHARS:
        raise InvalidInput(f"the result would be {len(out)} characters; the limit is {MAX_OUTPUT_CHARS}: use a shorter text or fewer times")
    return Repeated(out, len(out))


Operations = plugin.exports()
