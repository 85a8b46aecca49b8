"""``mlmm demo-paper-layouts``: the demo worlds in every real layout config/paper.yaml reads."""

from __future__ import annotations

import argparse
import time
from pathlib import Path

from mlmm.cli import declare_output_dirs
from mlmm.schema import checked_option


def register(subparsers: argparse._SubParsersAction) -> None:
    p = subparsers.add_parser(
        "demo-paper-layouts",
        help="a miniature of the paper configuration's real data (offline end-to-end runs)",
        description=(
            "Write to OUT (new or empty) the demo worlds in the real layouts config/paper.yaml "
            "reads: flickr30k-images/, semeval-sts/, mic-test/, ted-cldc/ at the paper config's "
            "default paths, the downloads (Multi30K tree and manifest, MUSE sections, "
            "fastText-style .vec vectors, caption_datasets.zip, STAIR Captions' tar.gz, "
            "train2014.zip/val2014.zip) under sources/, and OUT/locations.yaml pointing the "
            "location keys at them. Run: snakemake -d OUT --configfile config/paper.yaml "
            "config/paper_miniature.yaml OUT/locations.yaml (docs/workflow.md)."
        ),
    )
    p.add_argument("out", type=Path, metavar="OUT", help="output directory (new or empty)")
    declare_output_dirs(p, "out")
    checked_option(p, "--seed", "demo_world.seed", type=int,
                   help="random seed (default: %(default)s)")
    # The sizes default to the paper miniature's (config/paper_miniature.yaml), not to the
    # config's demo world: this tool writes the miniature's layouts.
    checked_option(p, "--images", "demo_world.images", type=int, own_default=260,
                   help="Multi30K-world images (min 30; default, the miniature's: %(default)s)")
    checked_option(p, "--coco-images", "$defs.cli_options.coco_demo_images", type=int,
                   default=180,
                   help="COCO-world images (min 60; default, the miniature's: %(default)s)")
    checked_option(p, "--coco-test-images", "$defs.cli_options.coco_test_images", type=int,
                   default=130,
                   help="of which test images, a multiple of the 5 folds (default, the "
                   "miniature's: %(default)s; the others split as in mlmm demo-coco)")
    checked_option(p, "--ted-train", "$defs.cli_options.talks", type=int, default=30,
                   help="TED talks per language, train")
    checked_option(p, "--ted-test", "$defs.cli_options.talks", type=int, default=10,
                   help="TED talks per language, test")
    checked_option(p, "--vector-dim", "retrieval.vectors.dim", type=int, own_default=16,
                   help="word vector size (config retrieval.vectors.dim)")
    p.add_argument(
        "--torch-home",
        type=Path,
        help="also write RANDOM ResNet-50/VGG-19/ResNet-152/AlexNet weights under the names "
        "of torchvision's IMAGENET1K_V1 into this TORCH_HOME (tests only; refuses to replace "
        "a file)",
    )
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> None:
    from mlmm.demo.paper_layouts import write_paper_layouts, write_random_backbone_weights

    start = time.perf_counter()
    write_paper_layouts(
        args.out,
        seed=args.seed,
        images=args.images,
        coco_images=args.coco_images,
        coco_test_images=args.coco_test_images,
        ted_train=args.ted_train,
        ted_test=args.ted_test,
        vector_dim=args.vector_dim,
    )
    if args.torch_home:
        write_random_backbone_weights(args.torch_home)
    print(f"paper layouts in {args.out} ({time.perf_counter() - start:.1f} s)")
