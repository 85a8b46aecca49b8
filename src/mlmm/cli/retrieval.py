"""``mlmm train-retrieval`` (one variant x seed) and ``mlmm retrieval-vectors`` (FME/AME)."""

from __future__ import annotations

import json
from pathlib import Path

from mlmm.cli import declare_output_dirs
from mlmm.schema import checked_option


def register(subparsers) -> None:
    p = subparsers.add_parser(
        "train-retrieval",
        help="train and evaluate one image-sentence ranking variant with one seed",
        description="Resolves the variant from the config's retrieval section (defaults merged), "
        "trains with early stopping (resuming from OUT/checkpoint.pt after a kill), evaluates on "
        "the variant's test split and writes OUT/{model.pt,history.csv,metrics.json}.",
    )
    p.add_argument(
        "--config",
        type=Path,
        action="append",
        required=True,
        help="config YAML or JSON (repeatable; later files override earlier ones; the "
        "workflow passes its record of the run's section)",
    )
    p.add_argument("--variant", required=True)
    checked_option(p, "--seed", "$defs.cli_options.run_seed", type=int, required=True)
    p.add_argument("--out", type=Path, required=True)
    declare_output_dirs(p, "out")
    p.add_argument(
        "--data-root",
        type=Path,
        required=True,
        help="Multi30K layout root (holds data/task1, data/task2)",
    )
    p.add_argument(
        "--features-root", type=Path, required=True, help="directory of <backbone>/<split>.npy"
    )
    p.add_argument("--vectors", type=Path, help="directory of wiki.<lang>.align.vec (FME/AME)")
    p.add_argument("--muse", type=Path, help="directory of MUSE en-<lang>.txt dictionaries")
    p.add_argument("--sts", type=Path, help="directory of <year>/STS.{input,gs}.images.txt")
    p.add_argument("--device", help="override the variant's device (auto, cpu, cuda)")
    checked_option(
        p,
        "--threads",
        "retrieval.threads",
        type=int,
        required=True,
        help="torch CPU threads (config retrieval.threads)",
    )
    p.add_argument("--no-progress", action="store_true", help="no tqdm bar")
    p.set_defaults(func=run_train)

    v = subparsers.add_parser(
        "retrieval-vectors",
        help="aligned word vectors for FME/AME (demo: derived; real: downloaded)",
        description="Writes OUT/wiki.<lang>.align.vec. With --url, downloads fastText's aligned "
        "vectors (URL/wiki.<lang>.align.vec). Otherwise derives demo vectors from the training "
        "captions under --data-root (PPMI+SVD per language, Procrustes onto English on MUSE).",
    )
    v.add_argument("--out", type=Path, required=True)
    declare_output_dirs(v, "out")
    v.add_argument("--languages", nargs="+", required=True)
    v.add_argument("--url", help="e.g. https://dl.fbaipublicfiles.com/fasttext/vectors-aligned")
    v.add_argument("--data-root", type=Path, help="Multi30K/COCO root (demo derivation)")
    v.add_argument("--muse", type=Path, help="directory of MUSE en-<lang>.txt (demo derivation)")
    checked_option(
        v,
        "--dim",
        "retrieval.vectors.dim",
        type=int,
        required=True,
        help="config retrieval.vectors.dim",
    )
    checked_option(
        v,
        "--train-fraction",
        "$defs.variant.alignment.train_fraction",
        type=float,
        required=True,
        help="MUSE split of the demo derivation (config alignment.train_fraction)",
    )
    v.add_argument(
        "--onto",
        type=Path,
        help="English aligned vectors (wiki.en.align.vec): rotate each of --languages onto them "
        "(Procrustes on MUSE en-<lang> training pairs) instead of downloading or deriving English",
    )
    v.add_argument(
        "--vec",
        type=Path,
        help="with --onto: the language's own fastText vectors (e.g. cc.ja.300.vec.gz); "
        "without it, derived from the training captions under --data-root",
    )
    checked_option(
        v,
        "--limit",
        "$defs.cli_options.limit",
        type=int,
        help="with --vec: read only its first LIMIT words",
    )
    v.add_argument(
        "--rotation",
        choices=["procrustes", "rcsls"],
        default="procrustes",
        help="with --onto: Procrustes, or fastText's RCSLS (alignment/align.py)",
    )
    checked_option(v, "--rcsls-knn", "retrieval.vectors.rotation.knn", type=int)
    checked_option(v, "--rcsls-lr", "retrieval.vectors.rotation.lr", type=float)
    checked_option(
        v, "--rcsls-iterations", "retrieval.vectors.rotation.iterations", type=int
    )
    v.add_argument(
        "--rotation-sections",
        nargs="+",
        choices=["full", "0-5000", "5000-6500"],
        help="with --onto: train on these MUSE sections of en-<lang> (default: --train-fraction "
        "of the full dictionary)",
    )
    v.add_argument(
        "--rotation-output",
        choices=["loaded", "all"],
        default="loaded",
        help="with --rotation rcsls and --vec: write the --limit rows it trained on, or every "
        "word of --vec mapped (fastText align.py --output)",
    )
    v.set_defaults(func=run_vectors)

    m = subparsers.add_parser(
        "fetch-muse",
        help="download MUSE bilingual dictionaries en-<lang>.txt (FME/AME alignment)",
        description="Writes OUT/en-<lang>[.<section>].txt for each language and section from "
        "URL, e.g. https://dl.fbaipublicfiles.com/arrival/dictionaries (Conneau et al. 2018).",
    )
    m.add_argument("--url", required=True)
    m.add_argument("--languages", nargs="+", required=True)
    m.add_argument(
        "--sections",
        nargs="+",
        required=True,
        choices=["full", "0-5000", "5000-6500"],
        help="full: en-<lang>.txt; 0-5000 / 5000-6500: MUSE's train / test sections",
    )
    m.add_argument(
        "--reverse",
        action="store_true",
        help="also <lang>-en[.<section>].txt (alignment.mappings: two, AME-CMR's R_deen)",
    )
    m.add_argument("--out", type=Path, required=True)
    declare_output_dirs(m, "out")
    m.set_defaults(func=run_fetch_muse)


def _section(args) -> dict:
    """The retrieval section of the merged --config files, checked against
    the workflow's schema like a Snakemake run (a one-line error naming the file and key)."""
    from mlmm.config import read_sources, validate_config
    from mlmm.errors import InputError
    from mlmm.retrieval.config import merge_config
    from mlmm.schema import SCHEMA_PATH

    merged: dict = {}
    for path in args.config:
        if not path.is_file():
            raise InputError(path, "a config file", "no such file")
    for _, data in read_sources(args.config):
        merged = merge_config(merged, data)
    validate_config(merged, SCHEMA_PATH, sources=args.config)
    return merged.get("retrieval") or {}


def run_train(args) -> None:
    from mlmm.io import guard_outputs, lock_output_dir
    from mlmm.retrieval.config import resolve_variant
    from mlmm.retrieval.train import Paths, train_variant

    inputs = [args.data_root, args.features_root, args.vectors, args.muse, args.sts]
    guard_outputs([args.out], [*inputs, *(args.config or [])])
    lock_output_dir(args.out)  # the run's own directory: one training run writes it
    record = resolve_variant(_section(args), args.variant)
    if args.device:
        record["device"] = args.device
    paths = Paths(args.data_root, args.features_root, args.vectors, args.muse, args.sts)
    metrics = train_variant(
        record, args.seed, paths, args.out, progress=not args.no_progress, threads=args.threads
    )
    for lang, m in metrics["test"].items():
        print(lang, json.dumps({d: {k: round(v, 1) for k, v in m[d].items()} for d in m}))


def run_vectors(args) -> None:
    from mlmm.demo.word_vectors import derive_demo, derive_demo_onto_english
    from mlmm.io import guard_outputs
    from mlmm.retrieval.word_vector_files import derive_onto_english, download

    written = [args.out / f"wiki.{lang}.align.vec" for lang in args.languages]
    guard_outputs(written, [args.data_root, args.muse, args.onto, args.vec])
    if args.onto:
        rotation = {
            "method": args.rotation,
            "knn": args.rcsls_knn,
            "lr": args.rcsls_lr,
            "iterations": args.rcsls_iterations,
            "sections": args.rotation_sections,
            "output": args.rotation_output,
        }
        for lang in args.languages:
            common = (lang, args.onto, args.muse, args.out, args.train_fraction)
            if args.vec:
                derive_onto_english(*common, vec=args.vec, limit=args.limit, rotation=rotation)
            else:  # the demo: the language's own vectors from its training captions
                derive_demo_onto_english(*common, args.data_root, args.limit, rotation)
    elif args.url:
        download(args.url, args.languages, args.out)
    else:
        derive_demo(
            args.data_root, args.muse, args.languages, args.dim, args.train_fraction, args.out
        )


def run_fetch_muse(args) -> None:
    from mlmm.retrieval.word_vector_files import download_lexicons

    download_lexicons(args.url, args.languages, args.out, tuple(args.sections), args.reverse)
