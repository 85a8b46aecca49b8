"""Commands of the pivot image-caption retrieval stage (Rajendran et al. 2016, Table 5)."""

from __future__ import annotations

import argparse
import json
from pathlib import Path

from mlmm.catalogue import TABLE_SUFFIXES
from mlmm.cli import add_data_sets, add_paper_tables, declare_output_dirs, declare_outputs
from mlmm.pivot import LANGUAGES, MODELS
from mlmm.records import add_record_option, read_command_record
from mlmm.schema import checked_option


def register(subparsers) -> None:
    p = subparsers.add_parser(
        "pivot-train",
        help="train and evaluate one pivot model (one language and lambda)",
        description="Train one model of Rajendran 2016 Table 5 on Z1 (COCO images with English "
        "captions) and, for bridge/mae/two, Z2 (English-X TED talks); evaluate on the MIC "
        "test set and on held-out validation data; write OUT/metrics.json.",
    )
    p.add_argument("--coco-root", type=Path, required=True, help="prepared COCO (Multi30K layout)")
    p.add_argument("--features", type=Path, required=True, help="FEATURES/<backbone>/<split>.npy")
    add_record_option(p, "pivot-train")
    p.add_argument(
        "--ted-root",
        type=Path,
        default=None,
        help="ted-cldc root, or the TED stage's index.json naming it (bridge, mae, two)",
    )
    p.add_argument("--language", choices=LANGUAGES, default=None, help="caption language X")
    p.add_argument("--model", choices=MODELS, required=True)
    checked_option(
        p,
        "--lambda",
        "pivot.lambdas[]",
        dest="lam",
        type=float,
        default=0.0,
        help="correlation weight",
    )
    checked_option(p, "--threads", "pivot.threads", type=int)
    p.add_argument("--device", choices=["auto", "cpu", "cuda"], default="auto")
    p.add_argument("--out", type=Path, required=True, help="run directory")
    add_data_sets(p, "the captions, features or talks")
    declare_output_dirs(p, "out")
    p.set_defaults(func=run_train)

    p = subparsers.add_parser(
        "pivot-mt-data",
        help="X-en sentence pairs of the Z2 talks, for the CorrNet + MT rows' NMT",
        description="Write OUT/{train,val}.lc.norm.tok.{X,en} (what `mlmm train-nmt --data OUT` "
        "reads) from the sentence-aligned TED train talks of the X-en pair; validation = the "
        "talks pivot-train holds out of Z2 (same fraction, cap and seed).",
    )
    p.add_argument("--ted-root", type=Path, required=True, help="ted-cldc root or index.json")
    p.add_argument("--language", choices=LANGUAGES, required=True, help="source language X")
    add_record_option(p, "pivot-mt-data")
    p.add_argument("--out", type=Path, required=True, help="output directory")
    declare_output_dirs(p, "out")
    p.set_defaults(func=run_mt_data)

    p = subparsers.add_parser(
        "pivot-translate", help="translate the MIC captions in X to English with an NMT model",
        description="Beam-search 1-best of every MIC caption file mic.lc.norm.tok.<k>.X into "
        "OUT/mic.lc.norm.tok.<k>.en (line i = image i); OUT/stats.json with BLEU against the "
        "English MIC captions.",
    )
    p.add_argument("--model", type=Path, required=True, help="X -> en model of train-nmt")
    p.add_argument("--coco-root", type=Path, required=True)
    p.add_argument("--language", choices=LANGUAGES, required=True)
    add_record_option(p, "pivot-translate")
    checked_option(p, "--threads", "pivot.threads", type=int)
    p.add_argument("--out", type=Path, required=True, help="output directory")
    add_data_sets(p, "the MIC captions or the model's training talks")
    declare_output_dirs(p, "out")
    p.set_defaults(func=run_translate)

    p = subparsers.add_parser(
        "pivot-mt", help="CorrNet + MT: the En-Image CorrNet on translated MIC captions",
        description="Rank the MIC images against the translated captions with the network of a "
        "`pivot-train --model direct` run; write OUT/metrics.json (model mt) for pivot-table.",
    )
    p.add_argument("--direct-run", type=Path, required=True, help="a direct run's directory")
    p.add_argument("--translations", type=Path, required=True, help="pivot-translate output")
    p.add_argument("--coco-root", type=Path, required=True)
    p.add_argument("--features", type=Path, required=True)
    add_record_option(p, "pivot-mt")
    p.add_argument("--language", choices=LANGUAGES, required=True)
    p.add_argument("--out", type=Path, required=True, help="run directory")
    add_data_sets(p, "the MIC captions, features or the translating model's talks")
    declare_output_dirs(p, "out")
    p.set_defaults(func=run_mt)

    p = subparsers.add_parser("pivot-table", help="Rajendran 2016 Table 5 beside the paper")
    p.add_argument("--runs", type=Path, nargs="+", required=True, help="pivot-train outputs")
    add_paper_tables(p)
    p.add_argument("--out", type=Path, required=True, help="output stem (no suffix)")
    declare_outputs(p, "out", suffixes=TABLE_SUFFIXES)
    p.set_defaults(func=run_table)

    p = subparsers.add_parser(
        "pivot-examples",
        help="Rajendran 2016 Tables 6 and 7: top-5 captions of images, top-5 images of captions",
        description="From Bridge CorrNet runs (their test_ranking.npz, lambda chosen per "
        "direction as in Table 5): MIC images with their 5 nearest French/German captions "
        "(Table 6) and captions with their 5 nearest images (Table 7), as PNG/PDF figures and "
        "CSVs of ids and ranks.",
    )
    p.add_argument("--runs", type=Path, nargs="+", required=True, help="bridge metrics.json")
    p.add_argument("--coco-root", type=Path, required=True, help="prepared COCO (Multi30K layout)")
    p.add_argument("--images", type=Path, required=True, help="directory the MIC paths are under")
    add_record_option(p, "pivot-examples")
    p.add_argument("--figures", type=Path, required=True, help="output directory of the figures")
    p.add_argument("--tables", type=Path, required=True, help="output directory of the CSVs")
    declare_output_dirs(p, "figures", "tables")
    p.set_defaults(func=run_examples)


def run_train(args: argparse.Namespace) -> None:
    from mlmm.pivot.experiment import SETTINGS, mean_epoch_seconds, train_stage

    record = read_command_record("pivot-train", args.config)
    settings = {key: record[key] for key in SETTINGS}
    result = train_stage(
        args.coco_root,
        args.features,
        record["backbone"],
        args.ted_root,
        args.language,
        args.model,
        args.lam,
        settings,
        args.out,
        threads=args.threads,
        device=args.device,
        data_sets=args.data_sets,
    )
    seconds = mean_epoch_seconds(result)
    print(f"test: {result['test']}" + (f"; seconds per epoch {seconds:.2f}" if seconds else ""))


def run_mt_data(args: argparse.Namespace) -> None:
    from mlmm.pivot.data import ted_corpus_root
    from mlmm.pivot.mt import parallel_corpus, write_parallel

    record = read_command_record("pivot-mt-data", args.config)
    corpus, stats = parallel_corpus(
        ted_corpus_root(args.ted_root), args.language, record["validation_fraction"],
        record["validation_max"], record["seed"], record["mt"]["max_length"],
    )
    write_parallel(args.out, args.language, corpus, stats)
    print(f"{stats['train_pairs']} training and {stats['val_pairs']} validation sentence pairs; "
          f"{len(stats['unaligned_talks'])} of {stats['talks']} talks unaligned")


def run_translate(args: argparse.Namespace) -> None:
    import torch

    from mlmm.io import write_json
    from mlmm.pivot.mt import translate_mic
    from mlmm.provenance import provenance

    beam = read_command_record("pivot-translate", args.config)["mt"]["beam"]
    torch.set_num_threads(args.threads)
    stats = translate_mic(args.model, args.coco_root, args.language, beam, args.out)
    settings = {k: str(v) for k, v in vars(args).items() if k != "func"} | {"beam": str(beam)}
    made_from = provenance(settings, data=args.data_sets)
    write_json(args.out / "stats.json", stats | {"provenance": made_from})
    print(json.dumps(stats))


def run_mt(args: argparse.Namespace) -> None:
    from mlmm.fingerprint import record_directory
    from mlmm.pivot.experiment import write_test_ranks
    from mlmm.pivot.mt import evaluate_translations
    from mlmm.provenance import provenance

    backbone = read_command_record("pivot-mt", args.config)["backbone"]
    result = evaluate_translations(
        args.direct_run, args.translations, args.coco_root, args.features, backbone,
        args.language,
    )
    settings = {k: str(v) for k, v in vars(args).items() if k != "func"} | {"backbone": backbone}
    result["provenance"] = provenance(settings, data=args.data_sets)
    ranks = result.pop("ranks")
    write_test_ranks(args.out / "metrics.json", result["language"], ranks, result)
    record_directory(args.out, "metrics.json")
    print(f"test: {result['test']}")


def run_table(args: argparse.Namespace) -> None:
    from mlmm.io import table_outputs
    from mlmm.results.pivot_table import table5
    from mlmm.tables import check_paper_tables, paper_tables_option, paper_tables_paths

    paper_tables = paper_tables_option(args.paper_tables)
    inputs = [*args.runs, *paper_tables_paths(paper_tables)]
    table_outputs(args.out, inputs, stem=True, force=args.force)
    check_paper_tables(paper_tables)
    table5(args.runs, paper_tables, args.out)
    print(f"wrote {args.out}.csv/.md/.tex/.html and the LaTeX companions")


def run_examples(args: argparse.Namespace) -> None:
    from mlmm.results.pivot_examples import tables6_7

    # per_language, seed, paper_queries: {"table6": {lang: [a caption of the image]}, ...}
    examples = read_command_record("pivot-examples", args.config)["examples"]

    frames = tables6_7(
        args.runs,
        args.coco_root,
        args.images,
        examples["per_language"],
        examples["seed"],
        examples["paper_queries"],
        args.figures,
        args.tables,
    )
    for table, frame in frames.items():
        choice = frame.drop_duplicates(["language", "query_number"])["query_choice"]
        counts = ", ".join(f"{n} {kind}" for kind, n in choice.value_counts().items())
        print(f"Table {table}: {counts} queries (paper: the paper's, found in MIC)")
