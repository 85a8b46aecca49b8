"""Logging of the `mlmm` commands: timestamped lines, and progress bars fit for log files.

A Snakemake job's stderr is a log file (`results/logs/...`), read hours later: every line says
when it was written (`setup_logging`, called once by `mlmm.cli.main` for every command), and a
progress bar written there refreshes every `FILE_INTERVAL` seconds instead of ten times a
second (`progress`), which at paper sizes would be megabytes of carriage returns.
"""

from __future__ import annotations

import logging
import sys

from tqdm import tqdm

# Seconds between two refreshes of a progress bar that is not on a terminal.
FILE_INTERVAL = 30.0
TERMINAL_INTERVAL = 0.1
FORMAT = "%(asctime)s %(name)s %(levelname)s: %(message)s"
DATE_FORMAT = "%Y-%m-%d %H:%M:%S"


def setup_logging(command: str, level: int = logging.INFO) -> None:
    """Timestamped lines on stderr for the `mlmm` logger tree (`mlmm.*` modules' loggers).

    Replaces the handlers of an earlier call (tests call `main` many times in one process).
    """
    logger = logging.getLogger("mlmm")
    for handler in list(logger.handlers):
        logger.removeHandler(handler)
    handler = logging.StreamHandler(sys.stderr)
    handler.setFormatter(
        logging.Formatter(FORMAT.replace("%(name)s", f"mlmm {command}"), DATE_FORMAT)
    )
    logger.addHandler(handler)
    logger.setLevel(level)
    logger.propagate = False


def on_terminal() -> bool:
    return sys.stderr.isatty()


def progress(iterable=None, **kwargs) -> tqdm:
    """tqdm on stderr, refreshed every 0.1 s on a terminal and every 30 s in a file.

    In a file each redraw is a line of its own (`LineWriter`), so a bar of N steps writes its
    first and last state and one line per 30 s, whatever N is.
    """
    interval = TERMINAL_INTERVAL if on_terminal() else FILE_INTERVAL
    kwargs.setdefault("mininterval", interval)
    kwargs.setdefault("maxinterval", max(interval, 10.0))  # tqdm's monitor: no extra redraws
    kwargs.setdefault("file", sys.stderr)
    if not on_terminal():
        kwargs["file"] = LineWriter(kwargs["file"])
        kwargs.setdefault("ascii", True)  # no block characters in a log file
        kwargs.setdefault("dynamic_ncols", False)
        kwargs.setdefault("ncols", 100)
    return tqdm(iterable, **kwargs)


class LineWriter:
    """A file for tqdm that turns each redraw (`\\r` + bar) into a line of its own, so that bars
    and log lines never share a line of the log file."""

    def __init__(self, stream) -> None:
        self.stream = stream
        self.encoding = getattr(stream, "encoding", "utf-8")

    def write(self, text: str) -> None:
        line = text.replace("\r", "").rstrip("\n")
        if line.strip():
            self.stream.write(line + "\n")

    def flush(self) -> None:
        self.stream.flush()
