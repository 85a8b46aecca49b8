"""``mlmm features``: extract image features for one split list outside Snakemake."""

from __future__ import annotations

import argparse
from collections.abc import Iterator
from pathlib import Path

from mlmm.cli import add_data_sets, declare_outputs
from mlmm.schema import checked_option


class BackboneNames:
    """The names of ``mlmm.features.backbones.BACKBONES``, as argparse ``choices``.

    The registry is the one list of backbones (a copy here once refused the paper's
    alexnet_fc6); it imports torch, so it is read only when a choice is checked or shown,
    not for every ``mlmm`` command.
    """

    @staticmethod
    def _names() -> list[str]:
        from mlmm.features.backbones import BACKBONES

        return list(BACKBONES)

    def __contains__(self, name: object) -> bool:
        return name in self._names()

    def __iter__(self) -> Iterator[str]:
        return iter(self._names())


def _weights(value: str) -> str | None:
    return None if value.lower() == "none" else value


def register(subparsers) -> None:
    p = subparsers.add_parser(
        "features",
        help="extract CNN image features for a split list",
        description=(
            "Write OUT (.npy, row i = image i of LIST) with OUT.json (backbone, dim, dtype, "
            "preprocessing, skipped rows, provenance, timings) and OUT.txt (copy of LIST). "
            "Finished shards are kept in OUT.work/ so a killed run resumes."
        ),
    )
    p.add_argument(
        "--backbone",
        required=True,
        choices=BackboneNames(),
        metavar="NAME",  # argparse would list the choices (import torch) while registering
        help="one of %(choices)s",
    )
    p.add_argument("--images", required=True, metavar="DIR", help="directory of the images")
    p.add_argument("--split", required=True, metavar="LIST", help="file with one image name a line")
    p.add_argument("--out", required=True, metavar="PATH", help="output array (.npy)")
    declare_outputs(p, "out", suffixes=(".npy", ".json", ".txt"))
    add_data_sets(p, "the images")
    p.add_argument("--device", default="auto", choices=("auto", "cpu", "cuda"))
    checked_option(
        p,
        "--batch-size",
        "features.batch_size",
        type=int,
        help="images per batch (default: 256 GPU, 32 CPU; /10 for ten-crop)",
    )
    p.add_argument("--dtype", default="float32", choices=("float32", "float16"),
                   help="stored array type")
    p.add_argument("--precision", default="float32", choices=("float32", "float16"),
                   help="model arithmetic (float32: TF32 on a GPU, as the papers' features)")
    p.add_argument("--decode", default="pil", choices=("pil", "torchvision"),
                   help="torchvision: batched JPEG decoding and resizing on the device (nvJPEG)")
    checked_option(
        p,
        "--workers",
        "features.workers",
        type=int,
        help="image-decoding processes (default: cores - 1 on a GPU, up to 2 on CPU)",
    )
    # Run by hand, torch's own thread count; the workflow passes features.threads.
    checked_option(p, "--threads", "features.threads", type=int, own_default=None,
                   help="torch CPU threads (default: torch's)")
    checked_option(p, "--shard-size", "features.shard_size", type=int,
                   help="rows per resumable shard")
    p.add_argument(
        "--on-bad-image",
        default="error",
        choices=("error", "skip"),
        help="skip: NaN rows, listed in the sidecar and OUT.skipped.tsv; training and "
        "evaluation refuse NaN rows, so fix or drop those images before using OUT",
    )
    p.add_argument(
        "--weights",
        type=_weights,
        default="DEFAULT",
        help="torchvision weights name (DEFAULT, IMAGENET1K_V1, ...) or 'none' "
        "for random init; efficientnet_lite0: DEFAULT = the packaged weights",
    )
    p.add_argument("--no-progress", action="store_true", help="no progress bar")
    p.set_defaults(func=run)

    p = subparsers.add_parser(
        "published-features",
        help="read a release's precomputed features for a split list (no images)",
        description=(
            "Read DIR/<split>-resnet50-avgpool.npy (the Multi30K release's features; <split> "
            "= the stem of LIST), check it (float16/float32, one row per image of LIST, the "
            "backbone's width, finite rows) and write OUT as `mlmm features` does, with OUT.json "
            "recording the origin and OUT.txt (copy of LIST)."
        ),
    )
    p.add_argument("--backbone", required=True, choices=["resnet50"])
    p.add_argument("--published", required=True, metavar="DIR", help="directory of the arrays")
    p.add_argument("--split", required=True, metavar="LIST", help="file with one image name a line")
    p.add_argument("--out", required=True, metavar="PATH", help="output array (.npy)")
    declare_outputs(p, "out", suffixes=(".npy", ".json", ".txt"))
    p.set_defaults(func=run_published)


def run(args: argparse.Namespace) -> None:
    from mlmm.errors import InputError
    from mlmm.features import extract  # torch is heavy: import only when the command runs
    from mlmm.features.extraction import Outputs
    from mlmm.io import guard_outputs, read_lines

    outputs = Outputs(Path(args.out))
    written = [outputs.array, outputs.sidecar, outputs.image_list, outputs.skipped, outputs.work]
    guard_outputs(written, [args.split, args.images])
    if not read_lines(args.split):
        raise InputError(args.split, "at least one image name", "an empty list")

    sidecar = extract(
        args.images,
        args.split,
        args.out,
        args.backbone,
        weights=args.weights,
        device=args.device,
        batch_size=args.batch_size,
        dtype=args.dtype,
        precision=args.precision,
        decode=args.decode,
        workers=args.workers,
        threads=args.threads,
        shard_size=args.shard_size,
        on_bad_image=args.on_bad_image,
        progress=not args.no_progress,
        data_sets=args.data_sets,
    )
    print(
        f"{args.out}: {sidecar['n']} x {sidecar['dim']} {sidecar['dtype']} "
        f"({sidecar['weights']}), {len(sidecar['skipped'])} skipped"
    )
    if sidecar["skipped"]:
        print(
            f"{len(sidecar['skipped'])} NaN row(s), listed in {outputs.skipped}: training and "
            "evaluation refuse them; fix those images or remove them from the split list"
        )


def run_published(args: argparse.Namespace) -> None:
    from mlmm.features.extraction import Outputs
    from mlmm.features.published import import_published
    from mlmm.io import guard_outputs

    outputs = Outputs(Path(args.out))
    guard_outputs([outputs.array, outputs.sidecar, outputs.image_list],
                  [args.published, args.split])  # fmt: skip
    sidecar = import_published(args.published, args.backbone, args.split, args.out)
    print(f"{args.out}: {sidecar['n']} rows, {sidecar['origin']} ({sidecar['published_file']})")
