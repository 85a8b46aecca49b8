"""The ``mlmm`` command line: one subcommand per stage.

Every module in this package that defines ``register(subparsers)`` adds its subcommands, so a
stage brings its command along without editing a central list. A subcommand's handler is stored
as ``func`` on its parser; an InputError (or an OSError such as a permission problem) becomes
one line on stderr and exit status 2. Every command logs through `mlmm.logs` (timestamped
lines on stderr, a start and an end line with timings, progress bars throttled in log files).
"""

from __future__ import annotations

import argparse
import importlib
import pkgutil
import sys

from mlmm import __version__
from mlmm.errors import InputError
from mlmm.io import mark_written
from mlmm.logs import logged_command, start_command
from mlmm.schema import check_options

OUTPUTS = "_declared_outputs"  # the parser default holding [(dest, suffixes)]


def declare_outputs(parser: argparse.ArgumentParser, *dests: str, suffixes=("",)) -> None:
    """The options ``dests`` name files the command writes (with each of ``suffixes`` added
    to a stem): ``main`` records them after the command succeeds (``mlmm.io.mark_written``),
    and the command's ``guard_outputs(..., force=args.force)`` refuses to replace an existing
    one that no mlmm command wrote unless ``--force`` (added here)."""
    declared = list(parser.get_default(OUTPUTS) or [])
    declared += [(dest, tuple(suffixes)) for dest in dests]
    if not declared[: -len(dests)]:
        parser.add_argument(
            "--force", action="store_true", help="replace output files no mlmm command wrote"
        )
    parser.set_defaults(**{OUTPUTS: declared})


def _declared_paths(args: argparse.Namespace) -> list:
    from pathlib import Path

    declared = getattr(args, OUTPUTS, None) or []
    if hasattr(args, OUTPUTS):
        delattr(args, OUTPUTS)
    paths = []
    for dest, suffixes in declared:
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
    return parser


@logged_command
def main(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    start_command(args.command, argv)
    try:
        check_options(args)
        outputs = _declared_paths(args)
        args.func(args)
        mark_written(outputs)
    except InputError as exc:
        print(f"mlmm {args.command}: error: " + str(exc).replace("\n", " "), file=sys.stderr)
        return 2
    except OSError as exc:  # permissions, a full disk, a network failure
        if exc.filename:
            error = InputError(exc.filename, "an accessible path", exc.strerror or str(exc))
        else:
            error = InputError("input/output", "no system error", f"{type(exc).__name__}: {exc}")
        print(f"mlmm {args.command}: error: " + str(error).replace("\n", " "), file=sys.stderr)
        return 2
    return 0


if __name__ == "__main__":
    sys.exit(main())
