"""The `mlmm` subcommands as the CLI's own parser declares them, and argv that fills their
required options (the bad-input suites that walk every subcommand)."""

from __future__ import annotations

import argparse

from mlmm.cli import build_parser


def _subparsers() -> dict[str, argparse.ArgumentParser]:
    action = next(a for a in build_parser()._actions if isinstance(a, argparse._SubParsersAction))
    return dict(action.choices)


SUBCOMMANDS = _subparsers()


def fill_required(parser: argparse.ArgumentParser, tmp_path) -> list[str]:
    """Argv giving every required option a path of an existing small file (or directory)."""
    argv = []
    for action in parser._actions:
        if not action.option_strings and action.nargs not in ("?", "*", argparse.SUPPRESS):
            value = tmp_path / f"in-{action.dest}"
            value.write_text("x\n", encoding="utf-8")
            argv += [str(value)]
        elif action.required:
            argv += [action.option_strings[0]]
            if action.choices:
                argv += [str(list(action.choices)[-1])]  # demo generation is the slow first
            elif action.type in (int, float):
                argv += ["1"]
            else:
                value = tmp_path / f"in-{action.dest}"
                value.write_text("x\n", encoding="utf-8")
                argv += [str(value)]
    for group in parser._mutually_exclusive_groups:
        if group.required:  # the first of a required choice
            action = group._group_actions[0]
            value = tmp_path / f"in-{action.dest}"
            value.write_text("x\n", encoding="utf-8")
            argv += [action.option_strings[0], str(value)]
    return argv
