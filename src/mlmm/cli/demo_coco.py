"""``mlmm demo-coco``: generate the COCO demo world (AME Tables 3-4, Bridge CorrNet Table 5)."""

from __future__ import annotations

import argparse
import time
from pathlib import Path

from mlmm.cli import declare_output_dirs
from mlmm.schema import checked_option


def register(subparsers: argparse._SubParsersAction) -> None:
    p = subparsers.add_parser(
        "demo-coco",
        help="generate the COCO demo world (Karpathy split, STAIR ja captions, MIC, TED en-fr/de)",
        description=(
            "Write a demo world to OUT in the MS-COCO layouts: rendered scenes as "
            "images/{train2014,val2014}/COCO_*.jpg, Karpathy's annotations/dataset_coco.json "
            "(5 English captions per image; test/val/restval/train), STAIR Captions "
            "annotations/stair_captions_v1.2_{train,val}.json (5 Japanese captions per image), "
            "the MIC test set mic/ (English captions with French and German translations), "
            "English-French/German talks in the TED CLDC layout under ted/, and a MUSE en-ja "
            "dictionary. The same seed gives the same bytes. An unedited earlier COCO world in "
            "OUT is replaced; anything else in OUT needs --force."
        ),
    )
    p.add_argument("out", type=Path, metavar="OUT", help="output directory")
    declare_output_dirs(p, "out")
    checked_option(
        p,
        "--seed",
        "coco.demo.seed",
        type=int,
        help="random seed (default: %(default)s)",
    )
    checked_option(
        p,
        "--images",
        "$defs.cli_options.coco_demo_images",
        type=int,
        default=1500,
        help="number of images, at least 60; 1/6 test (5 folds), 1/15 val, 1/10 restval "
        "(default: %(default)s)",
    )
    checked_option(
        p,
        "--ted-train",
        "$defs.cli_options.talks",
        type=int,
        default=150,
        help="TED training talks per pair (default: %(default)s)",
    )
    checked_option(
        p,
        "--ted-test",
        "$defs.cli_options.talks",
        type=int,
        default=30,
        help="TED test talks per pair (default: %(default)s)",
    )
    p.add_argument(
        "--force", action="store_true", help="replace OUT even if it holds other or edited files"
    )
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> None:
    from mlmm.demo.coco import generate_coco_world

    start = time.perf_counter()
    generate_coco_world(
        args.out,
        seed=args.seed,
        images=args.images,
        ted_train=args.ted_train,
        ted_test=args.ted_test,
        force=args.force,
    )
    print(
        f"COCO demo world with {args.images} images in {args.out} "
        f"({time.perf_counter() - start:.1f} s)"
    )
