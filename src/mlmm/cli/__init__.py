"""The ``mlmm`` command line: one subcommand per stage.

Every module in this package that defines ``register(subparsers)`` adds its subcommands, so a
stage brings its command along without editing a central list. A subcommand's handler is stored
as ``func`` on its parser; an InputError (or an OSError such as a permission problem) becomes
one line on stderr and exit status 2. Every command logs through `mlmm.logs` (timestamped
lines on stderr, progress bars throttled in log files).
"""

from __future__ import annotations

import argparse
import importlib
import pkgutil
import sys

from mlmm import __version__
from mlmm.errors import InputError
from mlmm.logs import setup_logging


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


def main(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    setup_logging(args.command)
    try:
        args.func(args)
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
