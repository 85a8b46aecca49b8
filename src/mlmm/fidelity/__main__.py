"""``python -m mlmm.fidelity [--check]``: write docs/fidelity.md from the registry and the values of
the resolved paper configuration, or (--check) exit 1 naming each registry problem and whether the
page differs from what they give."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from mlmm.fidelity import check, paper_config, protocol_leaves, render
from mlmm.io import forcing, write_text


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m mlmm.fidelity", description=__doc__)
    parser.add_argument("--repo", type=Path, default=Path("."), help="repository root")
    parser.add_argument("--check", action="store_true", help="check only, write nothing")
    args = parser.parse_args(argv)
    leaves = protocol_leaves(paper_config(args.repo))
    problems = check(leaves)
    page = render(leaves) + "\n"
    target = args.repo / "docs" / "fidelity.md"
    if args.check:
        if target.read_text(encoding="utf-8") != page:
            problems.append(
                f"{target}: differs from the registry and config/paper.yaml "
                "(python -m mlmm.fidelity)"
            )
        for line in problems:
            print(line, file=sys.stderr)
        return 1 if problems else 0
    for line in problems:
        print(line, file=sys.stderr)
    with forcing(True):  # the page is this command's to rewrite (a tracked file)
        write_text(target, page)
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
