"""NMT n-best reranking (Calixto & Liu 2017, Table 3): train-nmt, nbest, nbest-features, mira,
rerank, mt-score, nmt-table."""

from __future__ import annotations

import json
from pathlib import Path

from mlmm.catalogue import TABLE_SUFFIXES
from mlmm.cli import add_data_sets, add_paper_tables, declare_outputs
from mlmm.errors import InputError
from mlmm.io import guard_outputs, read_npy, refuse_overwrite, table_outputs
from mlmm.schema import checked_option


def register(subparsers) -> None:
    p = subparsers.add_parser(
        "train-nmt", help="train the attention NMT model (early stopping on validation BLEU)",
        description="Train a bidirectional-GRU encoder / GRU decoder with additive attention on "
        "DATA/{train,val}.lc.norm.tok.{SRC,TGT}; keep the epoch with the best validation BLEU.",
    )
    p.add_argument("--data", required=True, type=Path, help="directory of tokenised splits")
    p.add_argument(
        "--config", required=True, type=Path, metavar="RECORD",
        help="JSON record of the run's settings: src, tgt, model{embedding, hidden, attention, "
        "dropout, decoder}, train{min_count, batch_size, learning_rate, optimizer, max_length, "
        "max_epochs, patience, seed}, as the config's nmt section; a key left out takes the "
        "schema's default",
    )  # fmt: skip
    p.add_argument("--device", choices=["auto", "cpu", "cuda"], default="auto")
    checked_option(p, "--threads", "nmt.threads", type=int)
    p.add_argument("--out", required=True, type=Path, help="model checkpoint (.pt)")
    p.add_argument("--history", required=True, type=Path, help="per-epoch CSV")
    p.add_argument("--metrics", required=True, type=Path, help="metrics JSON")
    declare_outputs(p, "out", "history", "metrics")
    add_data_sets(p, "the sentence pairs")
    p.set_defaults(func=run_train)

    p = subparsers.add_parser(
        "nbest", help="beam-search n-best lists (Moses format) with NMT features",
        description="Translate every line of SOURCE with beam search; write the BEAM best per "
        "sentence with features NMT (log p(Y|X)) and WordPenalty (-length).",
    )
    p.add_argument("--model", required=True, type=Path)
    p.add_argument("--source", required=True, type=Path, help="tokenised source sentences")
    p.add_argument(
        "--config", required=True, type=Path, metavar="RECORD",
        help='JSON record of the search\'s settings, {"beam": N} as the config\'s nmt section; '
        "a key left out takes the schema's default",
    )  # fmt: skip
    p.add_argument("--device", choices=["auto", "cpu", "cuda"], default="auto")
    checked_option(p, "--threads", "nmt.threads", type=int)
    p.add_argument("--out", required=True, type=Path)
    p.add_argument("--stats", type=Path, help="JSON with sentences/s of the beam search")
    declare_outputs(p, "out", "stats")
    p.set_defaults(func=run_nbest)

    p = subparsers.add_parser(
        "nbest-features", help="add embedding-similarity features to an n-best list",
        description="Add one feature per --feature NAME=KIND:MODEL, KIND 'image' (s_i(image, "
        "hypothesis), needs --images NAME=NPY) or 'source' (s_s(hypothesis, source)), MODEL a "
        "trained retrieval model. Without --feature the list is copied unchanged.",
    )
    p.add_argument("--nbest", required=True, type=Path)
    p.add_argument("--source", required=True, type=Path, help="tokenised source sentences")
    p.add_argument("--images", action="append", default=[], metavar="NAME=NPY",
                   help="image features of the model of feature NAME (row i = sentence i)")
    p.add_argument("--feature", action="append", default=[], metavar="NAME=KIND:MODEL")
    p.add_argument("--src", default="en")
    p.add_argument("--tgt", default="de")
    p.add_argument("--out", required=True, type=Path)
    declare_outputs(p, "out")
    p.set_defaults(func=run_features)

    p = subparsers.add_parser(
        "mira", help="tune reranking weights with k-best batch MIRA",
        description="k-best batch MIRA (Cherry & Foster 2012, as Moses kbmira) on a Moses "
        "n-best list; writes the averaged weights of the epoch with the best tuning BLEU.",
    )
    p.add_argument("--nbest", required=True, type=Path)
    p.add_argument("--ref", required=True, type=Path, action="append",
                   help="reference file (repeat for several); line id+1 = sentence id")
    p.add_argument("--features", nargs="+", help="tune only these features (default: all)")
    checked_option(p, "--iters", "nmt.mira.iters", type=int)
    checked_option(p, "--c", "nmt.mira.c", type=float)
    checked_option(p, "--decay", "nmt.mira.decay", type=float)
    checked_option(p, "--seed", "nmt.mira.seed", type=int)
    p.add_argument("--out", required=True, type=Path, help="weights file ('Name= w' lines)")
    p.add_argument("--history", type=Path, help="per-epoch CSV")
    declare_outputs(p, "out", "history")
    p.set_defaults(func=run_mira)

    p = subparsers.add_parser(
        "rerank", help="write the 1-best of an n-best list under given weights",
        description="Rerank every sentence's hypotheses by weights . features (first on ties); "
        "without --weights, the first hypothesis of each sentence (the decoder's 1-best).",
    )
    p.add_argument("--nbest", required=True, type=Path)
    p.add_argument("--weights", type=Path)
    p.add_argument("--out", required=True, type=Path)
    declare_outputs(p, "out")
    p.set_defaults(func=run_rerank)

    p = subparsers.add_parser(
        "mt-score", help="BLEU/TER/chrF (and METEOR) of a tokenised 1-best output",
        description="Corpus metrics with sacrebleu (tokenize=none, unsmoothed BLEU) and METEOR "
        "1.5 when --meteor-jar is given and usable; writes a metrics JSON for nmt-table.",
    )
    p.add_argument("--hyp", required=True, type=Path)
    p.add_argument("--ref", required=True, type=Path)
    p.add_argument("--language", default="de")
    p.add_argument("--meteor-jar", help="jar path, or 'pycocoevalcap' for the jar it ships")
    p.add_argument("--system", required=True, help="paper spelling of the system")
    p.add_argument("--variant-note", default="")
    checked_option(p, "--seed", "$defs.cli_options.run_seed", type=int)
    p.add_argument(
        "--out",
        required=True,
        type=Path,
        help="the metrics JSON; the per-sentence BLEU/TER/chrF statistics the corpus scores "
        "are resampled from (mlmm claims, table intervals) go to sentences.npz beside it",
    )
    declare_outputs(p, "out")
    add_data_sets(p, "the translated sentences and their references")
    p.set_defaults(func=run_score)

    p = subparsers.add_parser(
        "nmt-table", help="Calixto 2017 Table 3 from mt-score JSONs, beside the paper",
    )
    p.add_argument("--metrics", required=True, nargs="+", type=Path)
    p.add_argument(
        "--feature-runs", nargs="*", type=Path, default=[],
        help="metrics.json of the retrieval runs whose models gave the image features of the "
        "reranking: the table names the backbone they recorded",
    )  # fmt: skip
    add_paper_tables(p)
    p.add_argument("--out", required=True, type=Path, help="output stem (.csv/.md/.tex added)")
    declare_outputs(p, "out", suffixes=TABLE_SUFFIXES)
    p.set_defaults(func=run_table)


def _tokenised(path: Path) -> list[list[str]]:
    from mlmm.io import read_lines

    return [line.split() for line in read_lines(path)]


def run_train(args) -> None:
    import pandas as pd
    import torch

    from mlmm.io import write_json, write_text
    from mlmm.nmt import TRAIN_RECORD_KEYS
    from mlmm.nmt.model import Sizes
    from mlmm.nmt.train import TrainConfig, train
    from mlmm.provenance import Timer, provenance
    from mlmm.schema import read_record

    guard_outputs([args.out, args.history, args.metrics], [args.data, args.config], args.force)
    record = read_record(args.config, "nmt", TRAIN_RECORD_KEYS)
    src, tgt, settings = record["src"], record["tgt"], record["train"]
    torch.set_num_threads(args.threads)
    files = [args.data / f"{s}.lc.norm.tok.{lang}" for s in ("train", "val") for lang in (src, tgt)]
    split = {s: {lang: _tokenised(args.data / f"{s}.lc.norm.tok.{lang}")
                 for lang in (src, tgt)} for s in ("train", "val")}
    config = TrainConfig(Sizes(**record["model"]), device=args.device, **settings)
    timer = Timer()
    with timer("train"):
        translator, history = train(
            split["train"][src], split["train"][tgt], split["val"][src], split["val"][tgt],
            config, (src, tgt), files=files,
        )
    from mlmm.fingerprint import files_digest, value_digest

    run = {"seed": settings["seed"], "config": value_digest(record)}
    translator.save(args.out, {"training data": files_digest(files)}, run)
    write_text(args.history, pd.DataFrame(history).to_csv(index=False))
    best = max(history, key=lambda h: h["val_bleu"])
    # the record's settings, and what else the run was given (data, throughput)
    given = {"record": args.config, "data": args.data, "device": args.device,
             "threads": args.threads}
    write_json(args.metrics, {
        "provenance": provenance({**record, **given}, settings["seed"], data=args.data_sets),
        "timings": timer.seconds, "best_epoch": best["epoch"], "val_bleu": best["val_bleu"],
        "epochs": len(history),
        "train_tokens_per_second": sum(h["tokens_per_second"] for h in history) / len(history),
        "src_vocabulary": len(translator.src), "tgt_vocabulary": len(translator.tgt),
    })
    print(f"best validation BLEU {best['val_bleu']:.2f} at epoch {best['epoch']}")


def run_nbest(args) -> None:
    import time

    import torch

    from mlmm.io import write_json
    from mlmm.nbest import write_nbest
    from mlmm.nmt import NBEST_RECORD_KEYS
    from mlmm.nmt.model import load_translator
    from mlmm.nmt.search import nbest_lists
    from mlmm.schema import read_record

    guard_outputs([args.out, args.stats], [args.model, args.source, args.config], args.force)
    beam = read_record(args.config, "nmt", NBEST_RECORD_KEYS)["beam"]
    torch.set_num_threads(args.threads)
    from mlmm.features.extraction import resolve_device

    translator = load_translator(args.model)
    translator.model.to(resolve_device(args.device))
    sources = _tokenised(args.source)
    start = time.perf_counter()
    nbest = nbest_lists(translator, sources, beam)
    seconds = time.perf_counter() - start
    write_nbest(args.out, nbest, args.source)
    if args.stats:
        write_json(args.stats, {"sentences": len(sources), "beam": beam,
                                "seconds": seconds, "sentences_per_second": len(sources) / seconds})
    print(f"{len(sources)} sentences, {len(sources) / seconds:.1f} sentences/s")


def parse_feature_spec(spec: str) -> tuple[str, str, Path]:
    """``NAME=KIND:MODEL`` -> (name, kind, model path)."""
    name, eq, rest = spec.partition("=")
    kind, colon, model = rest.partition(":")
    if not (eq and colon and name and model) or kind not in ("image", "source"):
        raise InputError("--feature", "NAME=image:MODEL or NAME=source:MODEL", repr(spec))
    return name, kind, Path(model)


def run_features(args) -> None:

    from mlmm.arrays import check_feature_record, check_feature_rows
    from mlmm.nbest import check_feature_name, check_parallel, read_nbest, write_nbest
    from mlmm.nmt.features import EmbeddingScorer, add_features

    specs = [parse_feature_spec(s) for s in args.feature]
    image_paths = [spec.partition("=")[2] or None for spec in args.images]
    inputs = [args.nbest, args.source, *image_paths, *(m for *_, m in specs)]
    guard_outputs([args.out], inputs, args.force)
    for name, _, _ in specs:
        check_feature_name(name)
    nbest, sources = read_nbest(args.nbest, args.source), _tokenised(args.source)
    check_parallel(args.source, sources, nbest.ids)
    images = {}
    for spec in args.images:
        name, eq, path = spec.partition("=")
        if not (eq and name and path):
            raise InputError("--images", "NAME=NPY", repr(spec))
        images[name] = check_feature_rows(
            read_npy(path, "a .npy array of image features (--images NAME=NPY)"), path
        )
        check_feature_record(path, _source_split(args.source))
        if len(images[name]) != len(sources):  # row i is the image of sentence i
            raise InputError(
                path, f"{len(sources)} rows, one per sentence of {args.nbest}",
                f"{len(images[name])} rows",
            )  # fmt: skip
    scorers = [
        (name, EmbeddingScorer(model, kind, args.tgt, args.src, images.get(name)))
        for name, kind, model in specs
    ]
    nbest = add_features(nbest, sources, scorers)
    write_nbest(args.out, nbest, args.source)
    print(f"features: {nbest.columns}")


def _source_split(source: Path) -> dict[str, str]:
    """The split a source text in the Multi30K layout (``val.lc.norm.tok.en``) belongs to, as
    a feature array's record names it; nothing for a file named otherwise."""
    from mlmm.fingerprint import value_digest

    split, dot, rest = Path(source).name.partition(".")
    return {"split": value_digest(split)} if dot and rest.startswith("lc.norm.tok.") else {}


def run_mira(args) -> None:
    import csv
    import io

    from mlmm.fingerprint import files_digest
    from mlmm.io import sha256_file, write_text
    from mlmm.nbest import read_nbest, read_references, write_weights
    from mlmm.rerank import mira, nbest_stats

    guard_outputs([args.out, args.history], [args.nbest, *args.ref], args.force)
    nbest = read_nbest(args.nbest)
    if args.features:
        nbest = nbest.select(args.features)
    refs = read_references(args.ref, nbest.ids)
    result = mira(nbest.features, nbest_stats(nbest.texts, refs), args.iters, args.c,
                  args.decay, args.seed, where=args.nbest)
    made_from = {"n-best list": sha256_file(args.nbest), "references": files_digest(args.ref)}
    write_weights(args.out, nbest.layout, result.weights, made_from)
    if args.history:  # the csv module, not pandas: its import was a third of a MIRA job
        text = io.StringIO()
        writer = csv.DictWriter(text, list(result.history[0]), lineterminator="\n")
        writer.writeheader()
        writer.writerows(result.history)
        write_text(args.history, text.getvalue())
    print(f"initial BLEU {result.initial_bleu:.2f}; best tuning BLEU {result.best_bleu:.2f} "
          f"at epoch {result.best_epoch} ({result.epoch_loop} epoch loop)")


def run_rerank(args) -> None:
    import numpy as np

    from mlmm.io import write_text
    from mlmm.nbest import read_nbest, read_weights, weight_vector
    from mlmm.rerank import rerank

    refuse_overwrite(args.out, [args.nbest, args.weights], args.force)
    nbest = read_nbest(args.nbest)
    if args.weights:
        weights = read_weights(args.weights)
        unknown = sorted(set(weights) - set(dict(nbest.layout)))
        if unknown:
            raise InputError(args.weights, f"features of {args.nbest}", f"{unknown}")
        best = rerank(nbest.features, weight_vector(nbest.layout, weights, args.weights))
    else:
        best = np.zeros(len(nbest), dtype=int)
    write_text(args.out, "".join(t[b] + "\n" for t, b in zip(nbest.texts, best, strict=True)))


def run_score(args) -> None:
    from mlmm.io import read_lines
    from mlmm.nmt.metrics import meteor_modules, mt_metrics, resolve_meteor_jar, sentence_statistics
    from mlmm.outcomes import sentences_path, write_result
    from mlmm.provenance import provenance

    # the per-sentence statistics always lie beside the metrics (mlmm.outcomes' contract), so
    # that no earlier system's statistics stay beside new scores
    guard_outputs([args.out, sentences_path(args.out)], [args.hyp, args.ref], args.force)
    hyps = read_lines(args.hyp, allow_empty_lines=True)
    refs = read_lines(args.ref)
    jar, meteor_note = resolve_meteor_jar(args.meteor_jar)
    scores = mt_metrics(hyps, refs, args.language, jar, where=(args.hyp, args.ref))
    if jar is not None:
        meteor_note = meteor_modules(jar, args.language)[1]
    settings = {k: str(v) for k, v in vars(args).items() if k != "func"}
    metrics = {
        "provenance": provenance(settings, args.seed, data=args.data_sets), "system": args.system,
        "variant_note": args.variant_note, "scores": scores, "meteor": meteor_note,
    }  # fmt: skip
    write_result(args.out, metrics, "sentences", sentence_statistics(hyps, refs))
    print(json.dumps(scores))


def run_table(args) -> None:
    from mlmm.results.nmt_table import table3
    from mlmm.tables import check_paper_tables, paper_tables_option, paper_tables_paths

    paper_tables = paper_tables_option(args.paper_tables)
    inputs = [*args.metrics, *args.feature_runs, *paper_tables_paths(paper_tables)]
    table_outputs(args.out, inputs, stem=True, force=args.force)
    check_paper_tables(paper_tables)
    notes = table3(args.metrics, paper_tables, args.out, args.feature_runs)
    print("\n".join(notes))
