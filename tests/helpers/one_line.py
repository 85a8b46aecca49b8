"""The suite's one-line error checker: a command on bad input exits non-zero with exactly one
line on stderr naming the file (and line or key), what was expected and what was found."""

from __future__ import annotations

import re
import sys
from dataclasses import dataclass, field
from pathlib import Path

import pytest

from mlmm.cli import main

REPO = Path(__file__).resolve().parents[2]


BIN = Path(sys.executable).parent


# A tqdm progress bar redrawn on stderr ('fetch:  10%|#  | 9/90 [...]') is not a message
PROGRESS = re.compile(r"^[\w -]*: +\d+%\|")


# the log's information lines: the start and end lines every command logs around its work
# (mlmm.logs.start_command) and what a module notes on the way (the device that ran)
START_END = re.compile(r"^\d{4}-\d\d-\d\d \d\d:\d\d:\d\d mlmm[\w. -]* INFO: ")


@dataclass
class Case:
    argv: list[str]
    says: list[str]  # fragments the one line must hold (file, line/key, expected, found)
    absent: list[Path] = field(default_factory=list)  # outputs that must not exist afterwards
    intact: dict[Path, bytes] = field(default_factory=dict)  # inputs that must be unchanged


def message_lines(err: str) -> list[str]:
    """What a command said on stderr, less progress bars and the log's start and end lines."""
    return [
        line
        for line in err.splitlines()
        if line.strip() and not PROGRESS.match(line) and not START_END.match(line)
    ]


def one_line_error(argv: list[str], capsys: pytest.CaptureFixture[str]) -> str:
    """Run ``mlmm argv``; the exit status must be non-zero and stderr exactly one line."""
    try:
        code = main(argv)
    except SystemExit as exc:  # argparse errors
        code = exc.code
    err = capsys.readouterr().err
    lines = message_lines(err)
    assert code not in (0, None), f"exit 0 for {argv}"
    assert len(lines) == 1, f"expected one line, got:\n{err}"
    assert "expected" in lines[0] and "found" in lines[0], lines[0]
    return lines[0]


def check(case: Case, capsys: pytest.CaptureFixture[str]) -> None:
    line = one_line_error(case.argv, capsys)
    for fragment in case.says:
        assert fragment in line, f"{fragment!r} not in {line!r}"
    for path in case.absent:
        assert not path.exists(), f"{path} written"
    for path, content in case.intact.items():
        assert path.read_bytes() == content, f"{path} changed"
