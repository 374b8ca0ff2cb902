"""The checks of the Python MCP client scripts: one `ok`/`not ok` line per check
(which tests/mcp/run.sh counts), a summary line, and the text of a tool result."""

import traceback


class Checks:
    """Runs named checks, reports each, and counts them."""

    def __init__(self, label):
        self.label = label
        self.passed = 0
        self.failed = 0

    async def __call__(self, name, fn):
        try:
            await fn()
            self.passed += 1
            print(f"ok - {self.label}: {name}", flush=True)
        except Exception:  # noqa: BLE001 - every failure is reported, none stops the run
            self.failed += 1
            print(f"not ok - {self.label}: {name}: {traceback.format_exc()}", flush=True)

    def summary(self):
        """Prints the totals; the exit code: 0 when every check passed."""
        print(f"{self.label}: {self.passed} passed, {self.failed} failed", flush=True)
        return 0 if self.failed == 0 else 1


def text(result):
    """The text blocks of a tool result, joined."""
    return "".join(getattr(c, "text", "") for c in result.content)
