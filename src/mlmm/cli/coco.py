"""MS-COCO data stage: Karpathy split + Japanese captions + MIC test set, in the Multi30K layout."""

from __future__ import annotations

import argparse
from pathlib import Path

from mlmm.cli import declare_output_dirs
from mlmm.schema import checked_option


def _digest(item: str) -> tuple[str, str]:
    name, sep, digest = item.rpartition("=")  # a URL may hold '=', a hex digest does not
    if not sep or not name or not digest:
        raise argparse.ArgumentTypeError(f"expected NAME=SHA256, found {item!r}")
    return name, digest.lower()


def register(subparsers) -> None:
    p = subparsers.add_parser(
        "prepare-coco",
        help="MS-COCO Karpathy split with en/ja captions and the MIC test set, Multi30K layout",
        description="Read Karpathy's MS-COCO split (English tokens), Japanese captions in the "
        "COCO caption JSON format (STAIR Captions or YJ Captions; MeCab-tokenised) and the MIC "
        "test set (en/fr/de, Moses-tokenised), and write OUT/data/task{1,2}/image_splits and "
        "OUT/data/task2/tok/<split>.lc.norm.tok.<k>.<lang> for the splits train (train+restval; "
        "en, ja), val, test (en, ja), pivot_train (train minus the MIC images; en) and mic (en, "
        "fr, de), plus OUT/provenance.json; OUT is written as a whole and OUT/MANIFEST.sha256 "
        "last. Inputs are local paths or URLs.",
    )
    p.add_argument(
        "--karpathy",
        required=True,
        help="dataset_coco.json or caption_datasets.zip holding it (path or URL)",
    )
    p.add_argument(
        "--japanese",
        required=True,
        nargs="+",
        help="COCO-caption-format JSON files, e.g. stair_captions_v1.2_train.json "
        "stair_captions_v1.2_val.json (paths or URLs)",
    )
    p.add_argument(
        "--mic",
        required=True,
        help="MIC directory (images.txt, captions.en, captions.fr, captions.de) or its base URL",
    )
    p.add_argument(
        "--sha256",
        nargs="*",
        default=[],
        type=_digest,
        metavar="NAME=SHA256",
        help="expected sha256 of an input file, keyed by its location as given or its file "
        "name (e.g. caption_datasets.zip=..., MIC: one per file, captions.fr=...); inputs "
        "without one are hashed, recorded as unverified in provenance.json and warned about",
    )
    p.add_argument("--out", required=True, type=Path, help="output directory (results/coco)")
    declare_output_dirs(p, "out")
    p.add_argument(
        "--download-dir",
        type=Path,
        help="keep downloaded inputs here and re-use those whose configured sha256 matches "
        "(default: a temporary directory)",
    )
    checked_option(
        p, "--retries", "multi30k.retries", type=int, help="download retries per file"
    )
    p.add_argument(
        "--pivot-split",
        choices=["karpathy", "paper"],
        required=True,
        help="Z1 of the pivot experiment: Karpathy train + restval minus MIC (karpathy) or "
        "every train2014/val2014 image minus MIC (paper, Rajendran Section 4.2)",
    )
    p.set_defaults(func=run_prepare)

    f = subparsers.add_parser(
        "fetch-coco-images",
        help="download or copy COCO's image archives, check their sha256, unpack them",
        description="Fetch train2014.zip / val2014.zip (paths or URLs, e.g. "
        "http://images.cocodataset.org/zips/train2014.zip), check each against --sha256 (or "
        "record and warn when none is given), unpack them under OUT as a whole and write "
        "OUT/MANIFEST.sha256 last.",
    )
    f.add_argument("--archives", required=True, nargs="+", help="zip archives (paths or URLs)")
    f.add_argument("--sha256", nargs="*", default=[], type=_digest, metavar="NAME=SHA256")
    f.add_argument("--out", required=True, type=Path, help="image directory to create")
    declare_output_dirs(f, "out")
    f.add_argument("--download-dir", type=Path, help="keep the downloaded archives here")
    checked_option(
        f, "--retries", "multi30k.retries", type=int, help="download retries per file"
    )
    f.set_defaults(func=run_fetch_images)


def run_prepare(args) -> None:
    from mlmm.data.coco import prepare_coco
    from mlmm.io import guard_outputs, local_paths

    guard_outputs(
        [args.out, args.download_dir], local_paths([args.karpathy, *args.japanese, args.mic])
    )
    counts = prepare_coco(
        args.out,
        args.karpathy,
        args.japanese,
        args.mic,
        sha256=_hashes(args.sha256),
        download_dir=args.download_dir,
        retries=args.retries,
        pivot_split=args.pivot_split,
    )
    print(", ".join(f"{split}: {n} images" for split, n in counts.items()))


def _hashes(pairs: list[tuple[str, str]]) -> dict[str, str]:
    from mlmm.errors import InputError

    sha256 = dict(pairs)
    if len(sha256) != len(pairs):
        raise InputError("--sha256", "each file name once", f"{[n for n, _ in pairs]}")
    return sha256


def run_fetch_images(args) -> None:
    from mlmm.data.coco import fetch_images
    from mlmm.io import guard_outputs, local_paths

    guard_outputs([args.out, args.download_dir], local_paths(args.archives))
    sources = fetch_images(
        args.archives,
        args.out,
        sha256=_hashes(args.sha256),
        download_dir=args.download_dir,
        retries=args.retries,
    )
    print(", ".join(f"{s.given}: sha256 {s.sha256}" for s in sources))
