"""Logging of the `mlmm` commands: timestamped lines, and progress bars fit for log files.

A Snakemake job's stderr is a log file (`results/logs/...`), read hours later: every line says
when it was written (`setup_logging`, called once by `mlmm.cli.main` for every command), every
command's log starts with a line naming the command and ends with one giving its exit status,
wall-clock and CPU time and peak memory (`start_command`, `logged_command`: so a job that logs
nothing else still says when it ran and for how long), and a progress bar written there
refreshes every `FILE_INTERVAL` seconds instead of ten times a second (`progress`), which at
paper sizes would be megabytes of carriage returns.

Snakemake deletes a job's log before it runs the job again (`--retries`, the SLURM profile's
retries after a time limit or a node failure), so a command that fails, or is terminated
(SIGTERM, a scheduler's time limit or preemption), copies its log file beside itself as
``NAME.failed-<UTC time>.log`` (`keep_failed_log`): every failed attempt keeps its own log.
"""

from __future__ import annotations

import functools
import logging
import os
import shlex
import signal
import stat
import sys
import threading
import time
from pathlib import Path

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


log = logging.getLogger("mlmm.command")
_started: dict[str, float] = {}  # the command under way: wall and CPU clocks at its start


def start_command(command: str, argv: list[str] | None = None) -> None:
    """Set up logging for `command` and log its start line (with its arguments)."""
    setup_logging(command)
    args = sys.argv[1:] if argv is None else argv
    _started.update(wall=time.perf_counter(), cpu=time.process_time())
    log.info("start: mlmm %s", shlex.join(map(str, args)))


def _peak_memory_mb() -> float | None:
    try:
        import resource
    except ImportError:  # not on POSIX
        return None
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    return peak / 1024**2 if sys.platform == "darwin" else peak / 1024  # bytes vs KiB


def end_command(outcome: str) -> None:
    """The end line of the command `start_command` started: outcome, times, peak memory."""
    if not _started:
        return  # the arguments did not parse: argparse said why, no command ran
    wall = time.perf_counter() - _started.pop("wall")
    cpu = time.process_time() - _started.pop("cpu")
    peak = _peak_memory_mb()
    memory = "" if peak is None else f", peak memory {peak:.0f} MB"
    log.info("end: %s after %.1f s (CPU %.1f s%s)", outcome, wall, cpu, memory)


class Terminated(BaseException):
    """SIGTERM (a scheduler's time limit or preemption, `kill`): unwinds the command like
    Ctrl-C, so that its partial outputs are removed and its log says how it ended."""


def _terminated(signum, frame) -> None:
    raise Terminated


def logged_command(main):
    """Decorates the `mlmm` main: whatever way it ends (a status, an exception, Ctrl-C,
    SIGTERM), the command it started (`start_command`) gets its end line, and a failed one
    keeps its log (`keep_failed_log`)."""

    @functools.wraps(main)
    def run(*args, **kwargs) -> int:
        _started.clear()
        in_main = threading.current_thread() is threading.main_thread()
        previous = signal.signal(signal.SIGTERM, _terminated) if in_main else None
        try:
            status = main(*args, **kwargs)
        except BaseException as exc:
            end_command(f"failed ({type(exc).__name__})")
            keep_failed_log()
            raise
        finally:
            if in_main and previous is not None:
                signal.signal(signal.SIGTERM, previous)
        end_command("done" if status == 0 else f"failed (exit status {status})")
        if status:
            keep_failed_log()
        return status

    return run


def keep_failed_log() -> Path | None:
    """When stderr is a log file (a workflow job's `log:`), a copy of it beside itself named
    ``NAME.failed-<UTC time>.log``, which the next attempt of the job leaves alone; None where
    stderr is a terminal or a pipe, or the platform cannot name its file (only Linux's
    /proc/self/fd can)."""
    try:
        sys.stderr.flush()
        fd = sys.stderr.fileno()
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            return None
        log = Path(os.readlink(f"/proc/self/fd/{fd}"))
    except (OSError, ValueError, AttributeError):  # no file behind stderr, or not Linux
        return None
    if not log.is_file():  # an unlinked temporary file
        return None
    when = time.strftime("%Y%m%dT%H%M%S", time.gmtime())
    copy = log.with_name(f"{log.stem}.failed-{when}{log.suffix}")
    for n in range(2, 100):
        if not copy.exists():
            break
        copy = log.with_name(f"{log.stem}.failed-{when}-{n}{log.suffix}")
    from mlmm.io import copy_file

    try:
        copy_file(log, copy)
    except OSError:
        return None
    return copy


def on_terminal() -> bool:
    return sys.stderr.isatty()


def progress(iterable=None, **kwargs):
    """tqdm on stderr, refreshed every 0.1 s on a terminal and every 30 s in a file.

    In a file each redraw is a line of its own (`LineWriter`), so a bar of N steps writes its
    first and last state and one line per 30 s, whatever N is. tqdm is imported here, not by
    every command's start-up (it costs 40 ms, a tenth of a short command).
    """
    from tqdm import tqdm

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
