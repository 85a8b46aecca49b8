"""One exception type for every user-facing input problem.

The command line turns it into a single line on stderr and a non-zero exit, so every message
must say which file (and line or key), what was expected and what was found.
"""

from __future__ import annotations

from pathlib import Path


class InputError(Exception):
    """Bad input: a message that names the place, what was expected and what was found."""

    def __init__(
        self,
        where: str | Path,
        expected: str,
        found: str,
        line: int | None = None,
        key: str | None = None,
    ) -> None:
        place = str(where)
        if line is not None:
            place += f", line {line}"
        if key is not None:
            place += f", key '{key}'"
        super().__init__(f"{place}: expected {expected}, found {found}")
        self.where = str(where)
        self.expected, self.found = expected, found
        self.line = line
        self.key = key
