"""Commands of the TED cross-lingual document classification stage (see docs/ted.md)."""

from __future__ import annotations

import argparse
from pathlib import Path

from mlmm.cli import add_paper_tables, declare_output_dirs, declare_outputs
from mlmm.errors import InputError
from mlmm.io import guard_outputs, read_json_object, table_outputs
from mlmm.records import add_record_option, read_command_record
from mlmm.schema import checked_option
from mlmm.ted import LANGUAGES, PIVOT


def _codes(items: list[str]) -> dict[str, str]:
    """`pt-br=pb` pairs -> {"pt-br": "pb"}."""
    return dict(item.split("=", 1) for item in items)


def _corpus_args(p: argparse.ArgumentParser) -> None:
    p.add_argument(
        "--languages", nargs="+", default=LANGUAGES, help="paired with English (one or more)"
    )
    p.add_argument(
        "--corpus-codes",
        nargs="*",
        default=["pt-br=pb"],
        help="our code=corpus directory code, e.g. pt-br=pb",
    )


def _demo_args(p: argparse.ArgumentParser) -> None:
    checked_option(p, "--seed", "ted.demo.seed", type=int)
    checked_option(
        p,
        "--train-docs",
        "ted.demo.train_docs",
        type=int,
        help="training talks per pair",
    )
    checked_option(
        p, "--test-docs", "ted.demo.test_docs", type=int, help="test talks per pair"
    )


def _settings(command: str, args: argparse.Namespace) -> dict:
    """The settings of a run (its provenance config): ``command``'s record (``--config``),
    the job's lambda and the device it ran on, and the record's path."""
    settings = read_command_record(command, args.config)
    if getattr(args, "lam", None) is not None:
        settings["lambda"] = args.lam
    if getattr(args, "device", None) is not None:
        settings["device"] = args.device
    return settings | {"record": str(args.config)}


def register(subparsers) -> None:
    p = subparsers.add_parser(
        "demo-ted",
        help="write a TED-like corpus in the TED CLDC layout",
        description="Write a deterministic TED-like corpus (12 languages, 15 topics) to OUT, "
        "laid out like ted-cldc/: OUT/<X>-en and OUT/en-<X>.",
    )
    p.add_argument("out", type=Path)
    declare_output_dirs(p, "out")
    p.add_argument("--languages", nargs="+", default=LANGUAGES, help="paired with English")
    p.add_argument("--force", action="store_true", help="replace an OUT that is not our demo")
    _demo_args(p)
    p.set_defaults(func=run_demo)

    p = subparsers.add_parser(
        "ted-fetch",
        help="make the TED CLDC corpus available (demo, local path or URL)",
        description="Generate, locate or download+unpack the corpus; writes OUT_DIR/index.json "
        "naming its root.",
    )
    p.add_argument("--source", choices=["demo", "path", "url"], required=True)
    p.add_argument("--path", help="local ted-cldc directory (source path)")
    p.add_argument("--url", help=".tar.gz/.zip of ted-cldc (source url); file:// works too")
    p.add_argument("--out-dir", type=Path, required=True)
    declare_output_dirs(p, "out_dir")
    p.add_argument(
        "--force", action="store_true", help="replace an OUT_DIR/ted-cldc that is not our demo"
    )
    _corpus_args(p)
    _demo_args(p)
    p.set_defaults(func=run_fetch)

    p = subparsers.add_parser("ted-bow", help="bag-of-words matrices per language")
    p.add_argument("--index", type=Path, required=True, help="index.json of ted-fetch")
    p.add_argument("--out-dir", type=Path, required=True)
    declare_output_dirs(p, "out_dir")
    add_record_option(p, "ted-bow")
    p.set_defaults(func=run_bow)

    p = subparsers.add_parser("ted-train", help="train Bridge CorrNet with one lambda")
    p.add_argument("--bow", type=Path, required=True)
    p.add_argument("--out-dir", type=Path, required=True)
    declare_output_dirs(p, "out_dir")
    checked_option(p, "--lambda", "ted.lambdas[]", dest="lam", type=float, required=True)
    add_record_option(p, "ted-train")
    p.add_argument("--device", choices=["auto", "cpu", "cuda"], default="auto")
    checked_option(p, "--threads", "ted.threads", type=int)
    p.set_defaults(func=run_train)

    p = subparsers.add_parser("ted-tune", help="choose lambda per source language")
    p.add_argument("--bow", type=Path, required=True)
    p.add_argument("--runs", type=Path, nargs="+", required=True, help="ted-train directories")
    p.add_argument("--out", type=Path, required=True)
    add_record_option(p, "ted-tune")
    checked_option(p, "--jobs", "$defs.cli_options.jobs", type=int, default=1)
    declare_outputs(p, "out")
    p.set_defaults(func=run_tune)

    p = subparsers.add_parser("ted-classify", help="perceptrons of one training language")
    p.add_argument("--bow", type=Path, required=True)
    p.add_argument("--tuning", type=Path, required=True)
    p.add_argument("--source", required=True)
    p.add_argument("--out", type=Path, required=True)
    add_record_option(p, "ted-classify")
    declare_outputs(p, "out")
    p.set_defaults(func=run_classify)

    p = subparsers.add_parser("ted-nb", help="monolingual Naive Bayes baseline (Table 3)")
    p.add_argument("--bow", type=Path, required=True)
    p.add_argument("--out", type=Path, required=True)
    checked_option(p, "--jobs", "$defs.cli_options.jobs", type=int, default=1)
    declare_outputs(p, "out")
    p.set_defaults(func=run_nb)

    p = subparsers.add_parser("ted-tables", help="Rajendran 2016 Tables 1 and 3")
    p.add_argument("--cldc", type=Path, nargs="+", required=True)
    p.add_argument("--nb", type=Path, required=True)
    add_paper_tables(p)
    p.add_argument("--out-dir", type=Path, required=True)
    declare_output_dirs(p, "out_dir")
    p.set_defaults(func=run_tables)

    p = subparsers.add_parser("ted-heatmap", help="heatmap of Table 1 (PNG and PDF)")
    p.add_argument("--table", type=Path, required=True, help="rajendran2016_table1.csv")
    p.add_argument("--out", type=Path, required=True, help="output stem (no suffix)")
    declare_outputs(p, "out", suffixes=(".png", ".pdf"))
    p.set_defaults(func=run_heatmap)

    p = subparsers.add_parser("ted-neighbours", help="Table 4: nearest words of English words")
    p.add_argument("--bow", type=Path, required=True)
    p.add_argument("--tuning", type=Path, required=True)
    add_record_option(p, "ted-neighbours")
    add_paper_tables(p)
    p.add_argument(
        "--demo", action="store_true", help="the corpus is the generated demo (says so in notes)"
    )
    p.add_argument("--out-dir", type=Path, required=True)
    declare_output_dirs(p, "out_dir")
    p.set_defaults(func=run_neighbours)


def run_demo(args: argparse.Namespace) -> None:
    from mlmm.ted.demo import generate_demo

    _check_languages(args.languages)
    demo = {"seed": args.seed, "train_docs": args.train_docs, "test_docs": args.test_docs}
    generate_demo(args.out, args.languages, None, demo, args.force)


def _check_languages(languages: list[str]) -> None:
    if PIVOT in languages:
        raise InputError("--languages", f"languages paired with {PIVOT} (not {PIVOT})", PIVOT)


def run_fetch(args: argparse.Namespace) -> None:
    _check_languages(args.languages)
    codes = _codes(args.corpus_codes)
    if args.source == "demo":
        from mlmm.ted.demo import fetch_demo

        demo = {"seed": args.seed, "train_docs": args.train_docs, "test_docs": args.test_docs}
        root = fetch_demo(args.out_dir, args.languages, codes, demo, force=args.force)
    else:
        from mlmm.ted.corpus import fetch

        root = fetch(
            args.source,
            args.out_dir,
            args.languages,
            codes,
            path=args.path,
            url=args.url,
            force=args.force,
        )
    print(f"ted-cldc root: {root}")


def run_bow(args: argparse.Namespace) -> None:
    guard_outputs([args.out_dir], [args.index, args.config])
    record = read_command_record("ted-bow", args.config)

    from mlmm.ted.bow import build

    _check_languages(record["languages"])
    root = Path(
        read_json_object(args.index, ("root",), "the JSON of ted-fetch with a 'root'")["root"]
    )
    meta = build(
        root, args.out_dir, record["languages"], record["topics"], record["corpus_codes"],
        record["min_count"],
    )
    print("vocabulary sizes:", meta["vocabulary"])


def run_train(args: argparse.Namespace) -> None:
    guard_outputs([args.out_dir], [args.bow, args.config])
    from mlmm.ted.experiment import train_stage

    settings = _settings("ted-train", args)
    metrics = train_stage(args.bow, args.out_dir, settings, threads=args.threads)
    print(f"seconds per epoch: {metrics['seconds_per_epoch']:.2f}")


def run_tune(args: argparse.Namespace) -> None:
    guard_outputs([args.out], [args.bow, *args.runs, args.config], args.force)
    tune_settings = _settings("ted-tune", args)

    from mlmm.ted.experiment import tune_stage

    runs = {}
    for run in args.runs:
        metrics = run / "metrics.json"
        settings = read_json_object(metrics, ("provenance",), "a metrics.json of ted-train")
        config = settings["provenance"].get("config") if isinstance(settings["provenance"],
                                                                      dict) else None  # fmt: skip
        try:
            runs[float(config["lambda"])] = run, config
        except (KeyError, TypeError, ValueError):
            raise InputError(metrics, "a number", "none", key="provenance.config.lambda") from None
    result = tune_stage(args.bow, runs, args.out, tune_settings, jobs=args.jobs)
    print({lang: c["lambda"] for lang, c in result["chosen"].items()})


def run_classify(args: argparse.Namespace) -> None:
    guard_outputs([args.out], [args.bow, args.tuning, args.config], args.force)
    from mlmm.ted.experiment import classify_stage

    settings = _settings("ted-classify", args)
    result = classify_stage(args.bow, args.tuning, args.source, args.out, settings)
    print({lang: round(f1, 3) for lang, f1 in result["f1"].items()})


def run_nb(args: argparse.Namespace) -> None:
    guard_outputs([args.out], [args.bow], args.force)
    from mlmm.ted.experiment import nb_stage

    result = nb_stage(args.bow, args.out, jobs=args.jobs)
    print({lang: round(f1, 3) for lang, f1 in result["f1"].items()})


def run_tables(args: argparse.Namespace) -> None:
    from mlmm.results.ted_tables import table1, table3
    from mlmm.tables import check_paper_tables, paper_tables_option, paper_tables_paths

    paper_tables = paper_tables_option(args.paper_tables)
    table_outputs(args.out_dir, [*args.cldc, args.nb, *paper_tables_paths(paper_tables)])
    check_paper_tables(paper_tables)

    table1(args.cldc, paper_tables, args.out_dir)
    table3(args.cldc, args.nb, paper_tables, args.out_dir)


def run_heatmap(args: argparse.Namespace) -> None:
    guard_outputs(
        [args.out.with_suffix(".png"), args.out.with_suffix(".pdf")], [args.table], args.force
    )
    from mlmm.results.ted_tables import heatmap

    heatmap(args.table, args.out)


def run_neighbours(args: argparse.Namespace) -> None:
    from mlmm.tables import check_paper_tables, paper_tables_option, paper_tables_paths

    paper_tables = paper_tables_option(args.paper_tables)
    guard_outputs(
        [args.out_dir], [args.bow, args.tuning, args.config, *paper_tables_paths(paper_tables)]
    )
    check_paper_tables(paper_tables)
    record = read_command_record("ted-neighbours", args.config)

    from mlmm.results.ted_tables import neighbours
    from mlmm.ted.experiment import bow_digest, chosen_model

    tuning = read_json_object(args.tuning, ("overall",), "the tuning JSON of ted-tune")
    if not isinstance(tuning["overall"], dict) or "run" not in tuning["overall"]:
        raise InputError(args.tuning, "a run directory", "none", key="overall.run")
    model, expect = chosen_model(args.tuning, tuning["overall"], bow_digest(args.bow))
    neighbours(
        model, args.bow, record["table4_words"], record["table4_k"], args.out_dir,
        paper_tables, args.demo, expect,
    )
