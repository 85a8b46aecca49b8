"""The ``mlmm`` command line: one subcommand per stage.

Every module in this package that defines ``register(subparsers)`` adds its subcommands, so a
stage brings its command along without editing a central list. A subcommand's handler is stored
as ``func`` on its parser; an InputError (or an OSError such as a permission problem) becomes
one line on stderr and exit status 2, Ctrl-C one line and exit status 130. Every command logs
through `mlmm.logs` (timestamped lines on stderr, a start and an end line with timings,
progress bars throttled in log files).

Every subcommand gets ``--force`` here, and ``main`` hands it to the write layer
(``mlmm.io.set_force``): without it, no output replaces a file or directory that no mlmm
command wrote, whichever command writes it.

Any other exception is a bug, not a bad input (every reader turns what it parses into an
InputError): it becomes one line naming its type (exit status 1) for a user, but keeps its
traceback where one is wanted, under pytest (``PYTEST_CURRENT_TEST``, inherited by the
subprocesses tests start, so a test fails loudly instead of passing on a one-line message) or
with ``MLMM_TRACEBACK=1``.
"""

from __future__ import annotations

import argparse
import importlib
import os
import pkgutil
import sys

from mlmm import __version__
from mlmm.errors import InputError
from mlmm.io import command, error_place, set_force
from mlmm.logs import Terminated, logged_command, start_command
from mlmm.schema import check_options

OUTPUTS = "_declared_outputs"  # the parser default holding [(dest, suffixes)]
OUTPUT_DIRS = "_declared_output_dirs"  # the parser default holding [dest]


def declare_outputs(parser: argparse.ArgumentParser, *dests: str, suffixes=("",)) -> None:
    """The options ``dests`` name files the command writes (with each of ``suffixes`` added
    to a stem). The write layer protects every output whether declared or not; the declaration
    is what tests/test_write_layer.py reads to put a user's file at each output of each
    command (``declared_outputs``)."""
    declared = list(parser.get_default(OUTPUTS) or [])
    declared += [(dest, tuple(suffixes)) for dest in dests]
    parser.set_defaults(**{OUTPUTS: declared})


def add_paper_tables(parser: argparse.ArgumentParser) -> None:
    """``--paper-tables`` of a table command: where it reads the papers' own numbers
    (``mlmm.tables.paper_tables_option``). Not given, the tables the package ships: the
    workflow passes nothing unless config ``paper_tables`` names a directory, whose CSV files
    it passes (its table rules' inputs), so a moved checkout changes no job's command."""
    from pathlib import Path

    parser.add_argument(
        "--paper-tables",
        nargs="*",
        type=Path,
        default=None,
        metavar="PATH",
        help="the papers' tables: a directory of <paper>_table<N>.csv, or such files "
        "(default: the tables the package ships; the option alone: none, empty paper columns)",
    )


def add_data_sets(parser: argparse.ArgumentParser, what: str) -> None:
    """``--dataset`` of a command whose data set depends on what it is given (``what``): the
    data sets its result is made from, recorded in its provenance so that the tables built
    from it say demo or real data from those sources only (``mlmm.origin``). The workflow
    names them; left out, the result's origin is unrecorded."""
    from mlmm.origin import RECORDED

    parser.add_argument(
        "--dataset",
        dest="data_sets",
        action="append",
        default=[],
        choices=RECORDED,
        metavar="NAME",
        help=f"a data set {what} comes from (%(choices)s; repeat for several): recorded in the "
        "result's provenance, so that tables say demo or real data (default: none, origin "
        "unrecorded)",
    )


def declare_output_dirs(parser: argparse.ArgumentParser, *dests: str) -> None:
    """The options ``dests`` name directories the command writes (or writes into): like
    ``declare_outputs``, for the test that puts a user's files there."""
    parser.set_defaults(**{OUTPUT_DIRS: [*(parser.get_default(OUTPUT_DIRS) or []), *dests]})


def declared_outputs(args: argparse.Namespace) -> list:
    """The output paths ``args`` names through options given to ``declare_outputs``."""
    from pathlib import Path

    paths = []
    for dest, suffixes in getattr(args, OUTPUTS, None) or []:
        value = getattr(args, dest, None)
        if value is not None:
            paths += [Path(value).with_suffix(s) if s else Path(value) for s in suffixes]
    return paths


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="mlmm",
        description="Multilingual multimodal embeddings: data, features, training, evaluation.",
    )
    parser.add_argument("--version", action="version", version=f"mlmm {__version__}")
    subparsers = parser.add_subparsers(dest="command", metavar="COMMAND", required=True)
    for module_info in sorted(pkgutil.iter_modules(__path__), key=lambda m: m.name):
        module = importlib.import_module(f"{__name__}.{module_info.name}")
        module.register(subparsers)
    for subparser in subparsers.choices.values():
        if "--force" not in subparser._option_string_actions:
            subparser.add_argument(
                "--force",
                action="store_true",
                help="replace output files and directories that no mlmm command wrote",
            )
    return parser


@logged_command
def main(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    start_command(args.command, argv)
    set_force(args.force)
    try:
        with command():
            check_options(args)
            args.func(args)
    except InputError as exc:
        return _fail(args.command, exc, 2)
    except OSError as exc:  # permissions, a full disk, a network failure
        if exc.filename:
            error = InputError(exc.filename, "an accessible path", exc.strerror or str(exc))
        else:
            error = InputError("input/output", "no system error", f"{type(exc).__name__}: {exc}")
        return _fail(args.command, error, 2)
    except KeyboardInterrupt:
        print(f"mlmm {args.command}: interrupted (Ctrl-C); no output replaced", file=sys.stderr)
        return 130
    except Terminated:
        print(f"mlmm {args.command}: terminated (SIGTERM: a time limit, preemption or kill); "
              "no output replaced", file=sys.stderr)  # fmt: skip
        return 143
    except Exception as exc:  # a bug: one line for a user, the traceback for a test or on request
        if os.environ.get("MLMM_TRACEBACK") or os.environ.get("PYTEST_CURRENT_TEST"):
            raise
        place = error_place()  # the file being read or written, or the last one
        message = (
            f"internal error {type(exc).__name__}: {exc} ({place + '; ' if place else ''}"
            "MLMM_TRACEBACK=1 shows where)"
        )
        return _fail(args.command, message, 1)
    finally:
        set_force(False)
    return 0


def _fail(command: str, error: Exception | str, status: int) -> int:
    print(f"mlmm {command}: error: " + str(error).replace("\n", " "), file=sys.stderr)
    return status


if __name__ == "__main__":
    sys.exit(main())
