"""``mlmm demo-world``: generate the demo world the default configuration runs on."""

from __future__ import annotations

import argparse
import time
from pathlib import Path

from mlmm.cli import declare_output_dirs
from mlmm.schema import checked_option


def register(subparsers: argparse._SubParsersAction) -> None:
    p = subparsers.add_parser(
        "demo-world",
        help="generate the demo world (rendered scenes, en/de/fr/cs captions, STS, MUSE)",
        description=(
            "Write a demo world to OUT in the upstream Multi30K layout: rendered scene images, "
            "one caption per image translated into en/de/fr/cs (task1), five independent en "
            "and de captions per image (task2), train/val/test_2016_flickr splits, SemEval-style "
            "STS pairs and MUSE dictionaries. The same seed gives the same bytes. An unedited "
            "earlier world in OUT is replaced; anything else in OUT needs --force."
        ),
    )
    p.add_argument("out", type=Path, metavar="OUT", help="output directory")
    declare_output_dirs(p, "out")
    checked_option(
        p,
        "--seed",
        "demo_world.seed",
        type=int,
        help="random seed (default: %(default)s)",
    )
    checked_option(
        p,
        "--images",
        "demo_world.images",
        type=int,
        help="number of images, at least 30; 1/12 each go to val and test (default: %(default)s)",
    )
    p.add_argument(
        "--force", action="store_true", help="replace OUT even if it holds other or edited files"
    )
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> None:
    from mlmm.demo import generate_world

    start = time.perf_counter()
    generate_world(args.out, seed=args.seed, images=args.images, force=args.force)
    print(
        f"demo world with {args.images} images in {args.out} ({time.perf_counter() - start:.1f} s)"
    )
