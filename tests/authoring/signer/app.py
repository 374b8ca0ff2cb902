"""The authoring suite's signer (Python): `sign` reads the secret it declares with
`reveal = true` through the SDK (`reveal_secret`) and answers what the suite checks:
the value's length and last 4 characters, and the value itself, which the hub must
scrub."""

from dataclasses import dataclass
from typing import Annotated

from wasmhub_plugin import Plugin, reveal_secret

plugin = Plugin()


@dataclass
class Signed:
    length: Annotated[int, "Characters in the key."]
    last4: Annotated[str, "Its last 4 characters."]
    echo: Annotated[str, "The key itself (the hub replaces it)."]


@plugin.operation(hints=["read_only"])
def sign() -> Signed:
    """Read the revealed signing key."""
    key = reveal_secret("SIGNING_KEY")
    return Signed(len(key), key[-4:], key)


Operations = plugin.exports()
