"""GPU-hours of the whole paper configuration: each stage's speed measured here, times its work.

For every stage that trains or runs a network, this measures the speed of the project's own
code on the current device (the retrieval training step of each architecture family through
benchmarks/retrieval.py's ``run``, `mlmm.features.extract` per backbone, `mlmm.nmt` training and
beam search, `mlmm.ted.corrnet.train` at TED sizes, a Bridge CorrNet pivot step) and counts the
work of config/paper.yaml merged over config.yaml, resolved with the package's own resolvers:

- retrieval: runs = variants x seeds; steps = epochs x ceil(examples / batch) each, where a
  variant that stops on patience (Kadar: a 1000-epoch cap) counts --patience-epochs epochs
  (default 30,
  an earlier H100 measurement's count) and one without counts all its epochs; examples counted
  with `mlmm.retrieval.data.training_captions` on the
  real Multi30K captions when --multi30k holds them, else from the published sizes
  (29,000 images, 5 comparable captions, 1 translation a language); COCO from Karpathy's
  113,287 training images x 5 captions;
- features: images of every split of every backbone the retrieval runs read (Multi30K
  29,000/1,014/1,000, COCO 113,287/5,000/5,000), and the pivot backbone's COCO training images;
- NMT: max_epochs x target tokens of the training captions; beam search over val + test;
- TED: lambdas x epochs of Bridge CorrNet at the paper's sizes;
- pivot: trained jobs x epochs x (5 captions x 118,000 images + 1,100 talks) / batch;
- the non-network stages (data preparation, vocabularies, caption batching, every evaluation
  protocol, STS, n-best statistics and MIRA, TED bag-of-words and perceptron, pivot data
  assembly): their seconds at the paper's full size from benchmarks/scale.py's
  results/benchmarks/scale.csv (--scale), times how often the configuration runs each
  (`stage_counts`); without that file they are left out, with a line saying so.

Hours = items / (items per second), one job at a time on one device (runs packed several to a
GPU finish sooner; see docs/gpu.md). Writes results/benchmarks/gpu_hours.csv, one row a stage
and a total. On a CPU the figures are CPU-hours and the `device` column says so.

    .venv/bin/python benchmarks/gpu_hours.py [--device auto] [--quick]
"""

from __future__ import annotations

import argparse
import functools
import json
import math
import platform
import random
import sys
import tempfile
import time
from pathlib import Path

import numpy as np
import pandas as pd
import torch
import yaml
from snakemake.utils import update_config

from mlmm.config import validate_config
from mlmm.features import BACKBONES
from mlmm.features.extraction import resolve_device
from mlmm.io import atomic_path
from mlmm.retrieval.config import resolve_variant, run_names, seeds
from mlmm.retrieval.data import c2i_pairs, joint_tuples, training_captions

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "benchmarks"))
import features as features_benchmark  # noqa: E402  (benchmarks/features.py)
import retrieval as retrieval_benchmark  # noqa: E402  (benchmarks/retrieval.py)
import ted_corrnet as ted_benchmark  # noqa: E402  (benchmarks/ted_corrnet.py)

MULTI30K_SPLITS = {"train": 29_000, "val": 1_014, "test_2016_flickr": 1_000}
COCO_SPLITS = {"train": 113_287, "val": 5_000, "test": 5_000}
CAPTIONS_PER_IMAGE = 5
PIVOT_Z1_IMAGES, TED_TALKS_PER_PAIR = 118_000, 1_100


def paper_config() -> dict:
    """config.yaml with config/paper.yaml over it (as Snakemake merges them), defaults filled."""
    config: dict = {}
    sources = [ROOT / "config.yaml", ROOT / "config/paper.yaml"]
    for path in sources:
        update_config(config, yaml.safe_load(path.read_text(encoding="utf-8")) or {})
    return validate_config(config, ROOT / "workflow/schemas/config.schema.yaml", sources)


def device_label(device: torch.device) -> str:
    if device.type == "cuda":
        return torch.cuda.get_device_name(device)
    return f"CPU ({platform.processor() or platform.machine()}, {torch.get_num_threads()} threads)"


# ---------------------------------------------------------------- work of the configuration


@functools.cache
def _multi30k_examples(multi30k: Path, sources: str, subset: str, batching: str) -> int:
    record = {"train_data": json.loads(sources), "image_subset": json.loads(subset)}
    captions = training_captions(multi30k, record, np.random.default_rng(1))
    if batching == "joint":
        return len(joint_tuples(captions))
    return sum(len(pairs) for pairs in c2i_pairs(captions).values())


def retrieval_examples(record: dict, multi30k: Path | None) -> tuple[int, str]:
    """Training examples per epoch as the trainer's streams count them, and their source."""
    if record["dataset"] == "coco":
        langs = sum(len(s["languages"]) for s in record["train_data"])
        joint = record["batching"] == "joint"
        return COCO_SPLITS["train"] * CAPTIONS_PER_IMAGE * (1 if joint else langs), "published"
    if multi30k is not None:
        keys = (json.dumps(record[k], sort_keys=True) for k in ("train_data", "image_subset"))
        return _multi30k_examples(multi30k, *keys, record["batching"]), "Multi30K captions"
    total = 0
    for source in record["train_data"]:
        per_image = CAPTIONS_PER_IMAGE if source["portion"] == "comparable" else 1
        fraction = record["image_subset"]["fraction"]
        total += round(MULTI30K_SPLITS["train"] * fraction) * per_image * len(source["languages"])
    return total, "published sizes"


def retrieval_family(record: dict) -> tuple:
    """The settings tuple of benchmarks/retrieval.py that times this record's step."""
    encoders = 2 if record["encoder"] == "per-language" or record["beta"] < 1 else 1
    return (record["embed_dim"], record["hidden"], record["joint"],
            BACKBONES[record["backbone"]].dim, encoders, record["similarity"], record["loss"],
            record["beta"])  # fmt: skip


def counted_epochs(record: dict, patience_epochs: int) -> int:
    """Epochs a run is counted for: all of them without early stopping, else at most
    ``patience_epochs`` (when it stops is known only after the run)."""
    if record["early_stopping"]["patience"] is None:
        return record["epochs"]
    return min(record["epochs"], patience_epochs)


def retrieval_work(
    config: dict, multi30k: Path | None, patience_epochs: int
) -> dict[tuple, dict]:
    """family -> {steps, runs, source} over every run of the configuration."""
    section, families = config["retrieval"], {}
    for name in run_names(section):
        record = resolve_variant(section, name, "config/paper.yaml")
        examples, source = retrieval_examples(record, multi30k)
        steps = counted_epochs(record, patience_epochs) * math.ceil(
            examples / record["batch_size"]
        )
        family = families.setdefault(
            (retrieval_family(record), record["batch_size"], record["precision"]),
            {"steps": 0, "runs": 0, "sources": set()},
        )
        family["sources"].add(source)
        family["steps"] += steps * len(seeds(record))
        family["runs"] += len(seeds(record))
    return families


def feature_work(config: dict) -> dict[str, int]:
    """backbone -> images to extract: every split of each data set a retrieval run reads it
    on, and the COCO training images of the pivot stage (its small MIC test set not counted)."""
    datasets: dict[str, set] = {}
    for name in run_names(config["retrieval"]):
        record = resolve_variant(config["retrieval"], name, "config/paper.yaml")
        datasets.setdefault(record["backbone"], set()).add(record["dataset"])
    sizes = {"multi30k": sum(MULTI30K_SPLITS.values()), "coco": sum(COCO_SPLITS.values()),
             "coco train": COCO_SPLITS["train"]}  # fmt: skip
    datasets.setdefault(config["pivot"]["backbone"], set()).add("coco train")
    if "coco" in datasets[config["pivot"]["backbone"]]:
        datasets[config["pivot"]["backbone"]].discard("coco train")
    return {b: sum(sizes[d] for d in used) for b, used in datasets.items() if b in BACKBONES}


def nmt_target_tokens(multi30k: Path | None, language: str) -> tuple[int, str]:
    path = multi30k / f"data/task1/tok/train.lc.norm.tok.{language}" if multi30k else None
    if path is not None and path.is_file():
        return sum(len(line.split()) for line in path.open(encoding="utf-8")), "Multi30K captions"
    return MULTI30K_SPLITS["train"] * 12, "29,000 x 12 tokens (estimate)"


# ---------------------------------------------------------------- speed on this device


def time_retrieval(
    family: tuple, batch: int, precision: str, steps: int, device: torch.device
) -> float:
    """Training steps per second of one family, through benchmarks/retrieval.py's ``run``."""
    row = retrieval_benchmark.run("family", family, batch, steps, device, torch.Generator(),
                                  precision=precision)  # fmt: skip
    return row["pairs_per_second"] / (batch * family[4])


def time_features(backbone: str, images: int, device: str, root: Path) -> float:
    """Images per second of `extract` end to end on generated Flickr30K-sized JPEGs."""
    if not (root / "images").is_dir():
        names = features_benchmark.make_images(root, images)
        (root / f"list{images}.txt").write_text("\n".join(names) + "\n")
    seconds, _ = features_benchmark.ours(backbone, root, images, device)
    return images / seconds


def time_nmt(config: dict, sentences: int, beam_sentences: int, device: torch.device):
    """(target tokens/s of training, sentences/s of beam search) at the configured sizes, on
    random sentences of Multi30K's lengths over a 10,000-word vocabulary a side."""
    from mlmm.nmt.model import Sizes
    from mlmm.nmt.search import nbest_lists
    from mlmm.nmt.train import TrainConfig, train

    nmt, rng = config["nmt"], random.Random(0)
    words = [f"w{i}" for i in range(10_000)]

    def corpus(count):
        return [rng.choices(words, k=rng.randint(8, 20)) for _ in range(count)]

    model = nmt["model"]
    sizes = Sizes(
        model["embedding"], model["hidden"], model["attention"], model["dropout"], model["decoder"]
    )
    settings = TrainConfig(
        sizes, batch_size=nmt["train"]["batch_size"], max_epochs=1, device=str(device)
    )
    translator, history = train(corpus(sentences), corpus(sentences), corpus(4), corpus(4),
                                settings, progress=False)  # fmt: skip
    start = time.perf_counter()
    nbest_lists(translator, corpus(beam_sentences), nmt["beam"], progress=False)
    beam = beam_sentences / (time.perf_counter() - start)
    ran_on = next(translator.model.parameters()).device
    return history[0]["tokens_per_second"], beam, ran_on


def time_ted_epoch(config: dict, fraction: float, device: torch.device) -> float:
    """Seconds of one Bridge CorrNet epoch at the TED sizes (benchmarks/ted_corrnet.py's data)."""
    from mlmm.ted import LANGUAGES
    from mlmm.ted.corrnet import train

    ted, rng = config["ted"], np.random.default_rng(0)
    vocabs = np.linspace(31213, 60326, len(LANGUAGES)).astype(int)
    docs = max(2, round(TED_TALKS_PER_PAIR * fraction))
    pairs = {
        lang: (ted_benchmark.zipf_bow(rng, docs, int(v), 600),
               ted_benchmark.zipf_bow(rng, docs, 60326, 600))
        for lang, v in zip(LANGUAGES, vocabs, strict=True)
    }  # fmt: skip
    _, history = train(pairs, 60326, hidden=ted["hidden"], epochs=1, progress=False,
                       batch_size=ted["batch_size"], device=str(device))  # fmt: skip
    return history[0]["seconds"] * TED_TALKS_PER_PAIR / docs


def time_pivot_step(config: dict, steps: int, device: torch.device) -> float:
    """Seconds of one Bridge CorrNet pivot step (Z1 batch: fc6 image + English caption)."""
    from pivot import binary_bow  # benchmarks/pivot.py

    from mlmm.pivot import IMAGE, PIVOT
    from mlmm.ted.corrnet import BridgeCorrNet, make_batch

    pivot, rng = config["pivot"], np.random.default_rng(0)
    batch = pivot["batch_size"]
    dim = BACKBONES[pivot["backbone"]].dim
    images = np.maximum(rng.normal(size=(10 * batch, dim)), 0).astype(np.float32)
    captions = binary_bow(rng, 10 * batch, 30_000, 10)
    model = BridgeCorrNet({IMAGE: dim, PIVOT: 30_000, "fr": 30_000}, pivot["hidden"], True,
                          (IMAGE,)).to(device)  # fmt: skip
    optimiser = torch.optim.SGD(model.parameters(), lr=pivot["learning_rate"])

    def step():
        rows = rng.choice(len(images), batch, replace=False)
        xv, xp = make_batch(images[rows], device), make_batch(captions[rows], device)
        optimiser.zero_grad(set_to_none=True)
        total, _, _ = model.loss(IMAGE, PIVOT, xv, xp, 1.0)
        total.backward()
        optimiser.step()
        return total

    step().item()  # warm-up
    start = time.perf_counter()
    for _ in range(steps):
        loss = step()
    loss.item()
    return (time.perf_counter() - start) / steps


# ---------------------------------------------------------------- non-network stages


def scale_costs(path: Path) -> dict[str, dict]:
    """stage -> seconds and peak memory at the paper's full size from benchmarks/scale.py's
    CSV: the fraction-1 row, else the largest fraction's seconds scaled up by its own fitted
    exponent (and its peak memory, a lower bound). Seconds are the stage's CPU seconds where
    measured (what a job that has its core to itself takes; the rehearsal's wall time on a
    shared machine is mostly waiting), else wall seconds."""
    if not path.is_file():
        return {}
    frame = pd.read_csv(path)
    fitted = path.with_name(path.stem + "_exponents.csv")
    exps = pd.read_csv(fitted).set_index("stage") if fitted.is_file() else None
    out = {}
    for stage, group in frame.groupby("stage"):
        last = group.sort_values("fraction").iloc[-1]
        cpu = last.get("cpu_seconds", math.nan)
        seconds = float(last["seconds"] if pd.isna(cpu) else cpu)
        note = "measured at full size" + ("" if pd.isna(cpu) else " (CPU seconds)")
        if last["fraction"] < 1:
            exponent = 1.0
            if exps is not None and stage in exps.index:
                exponent = float(exps.loc[stage, "time_exponent"])
            seconds *= (1 / last["fraction"]) ** max(exponent, 0.0)
            note = f"measured at {last['fraction']:g} of full size, scaled by size^{exponent:g}"
        out[stage] = {"seconds": seconds, "peak_mb": float(last["peak_rss_mb"]), "note": note}
    return out


def stage_counts(config: dict, patience_epochs: int) -> dict[str, tuple[int, str]]:
    """How many times each benchmarks/scale.py stage runs in the configuration, and why.
    Validation evaluations are counted once an epoch (of the counted epochs)."""
    section = config["retrieval"]
    runs = {"multi30k": 0, "coco": 0}
    epochs = {"multi30k": 0, "coco": 0}
    for name in run_names(section):
        record = resolve_variant(section, name, "config/paper.yaml")
        n = len(seeds(record))
        runs[record["dataset"]] += n
        epochs[record["dataset"]] += n * counted_epochs(record, patience_epochs)
    ted, pivot = config["ted"], config["pivot"]
    pivot_jobs = len(pivot["lambdas"]) + len(pivot["languages"]) * (1 + 2 * len(pivot["lambdas"]))
    systems = sum(1 for s in config["nmt"]["systems"].values() if s["features"])
    m, c = runs["multi30k"], runs["coco"]
    return {
        "multi30k_validate": (1, "once"),
        "multi30k_vocabularies": (1, "once"),
        "coco_karpathy_read": (1, "once (COCO preparation)"),
        "caption_batches": (m + c, f"{m + c} retrieval runs build and encode their captions"),
        "eval_multi30k_1k": (epochs["multi30k"] + m,
                             f"{m} Multi30K runs: a validation an epoch + the test"),
        "eval_coco_1k_5fold": (epochs["coco"] + c, f"{c} COCO runs: a validation an epoch + test"),
        "eval_coco_5k": (c, f"{c} COCO runs: the 5K test"),
        "sts": (m, f"{m} Multi30K runs"),
        "nbest_mira": (systems, f"{systems} reranked NMT systems"),
        "ted_bow": (1, "once, every pair"),
        "ted_perceptron": (len(ted["lambdas"]), f"{len(ted['lambdas'])} lambdas, every pair"),
        "pivot_assembly": (pivot_jobs, f"{pivot_jobs} pivot jobs load their data"),
    }  # fmt: skip


# ---------------------------------------------------------------- the table


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--device", default="auto", choices=("auto", "cpu", "cuda"))
    parser.add_argument("--quick", action="store_true", help="few steps/images per measurement")
    parser.add_argument("--multi30k", type=Path, default=ROOT.parent / "shared/data/multi30k",
                        help="Multi30K root (data/task1, data/task2) for the real caption counts")
    parser.add_argument("--patience-epochs", type=int, default=30,
                        help="epochs counted for a retrieval run that stops on patience")
    parser.add_argument("--scale", type=Path, default=ROOT / "results/benchmarks/scale.csv",
                        help="benchmarks/scale.py's figures for the non-network stages")
    parser.add_argument("--out", type=Path, default=ROOT / "results/benchmarks/gpu_hours.csv")
    args = parser.parse_args()  # fmt: skip
    device = resolve_device(args.device)
    label = device_label(device)
    multi30k = args.multi30k if (args.multi30k / "data/task1/tok").is_dir() else None
    config = paper_config()
    quick = args.quick
    rows = []

    def add(stage, unit, items, per_second, note, measured_on=label):
        rows.append({"stage": stage, "device": measured_on, "unit": unit, "items": int(items),
                     "items_per_s": round(per_second, 3),
                     "hours": round(items / per_second / 3600, 3), "note": note})  # fmt: skip
        print(rows[-1], flush=True)

    work_of = retrieval_work(config, multi30k, args.patience_epochs)
    for (family, batch, precision), work in work_of.items():
        speed = time_retrieval(family, batch, precision, 2 if quick else 20, device)
        sources = " and ".join(sorted(work["sources"]))
        embed, hidden, joint, feat_dim, encoders, similarity, loss, beta = family
        add(f"retrieval {embed}/{hidden}->{joint}, {feat_dim}-d images, {encoders} encoder(s), "
            f"{similarity}, {loss}, beta {beta}, batch {batch}, {precision}", "training steps",
            work["steps"], speed, f"{work['runs']} runs; examples from {sources}; "
            f"step benchmark speed; patience runs as {args.patience_epochs} epochs")  # fmt: skip
    with tempfile.TemporaryDirectory() as tmp:
        for backbone, images in feature_work(config).items():
            timed = (4 if BACKBONES[backbone].crops > 1 else 16) if quick else 2048
            speed = time_features(backbone, timed, args.device, Path(tmp) / backbone)
            add(f"features {backbone}", "images", images, speed,
                f"extract end to end, {timed} generated 500x375 JPEGs")  # fmt: skip
    tokens, source = nmt_target_tokens(multi30k, config["nmt"]["tgt"])
    epochs = config["nmt"]["train"]["max_epochs"]
    per_token, beam, nmt_device = time_nmt(config, 64 if quick else 4000, 2 if quick else 50,
                                           device)  # fmt: skip
    nmt_label = label if nmt_device.type == device.type else device_label(nmt_device)
    add("nmt training", "target tokens", epochs * tokens, per_token,
        f"{epochs} epochs (max_epochs, no early stop) x {tokens} tokens ({source})",
        nmt_label)  # fmt: skip
    beam_sentences = MULTI30K_SPLITS["val"] + MULTI30K_SPLITS["test_2016_flickr"]
    add(f"nmt {config['nmt']['beam']}-best beam search", "sentences", beam_sentences, beam,
        "val + test_2016_flickr", nmt_label)  # fmt: skip
    ted = config["ted"]
    epoch = time_ted_epoch(config, 0.01 if quick else 0.1, device)
    ted_epochs = len(ted["lambdas"]) * ted["epochs"]
    add("ted bridge corrnet", "epochs", ted_epochs, 1 / epoch,
        f"{len(ted['lambdas'])} lambdas x {ted['epochs']} epochs, 11 pairs x 1,100 talks")
    pivot = config["pivot"]
    jobs = len(pivot["lambdas"]) + len(pivot["languages"]) * (1 + 2 * len(pivot["lambdas"]))
    per_epoch = math.ceil(CAPTIONS_PER_IMAGE * PIVOT_Z1_IMAGES / pivot["batch_size"]) + math.ceil(
        TED_TALKS_PER_PAIR / pivot["batch_size"]
    )
    step = time_pivot_step(config, 3 if quick else 50, device)
    add("pivot bridge corrnet", "training steps", jobs * pivot["epochs"] * per_epoch, 1 / step,
        f"{jobs} trained jobs x {pivot['epochs']} epochs x {per_epoch} steps, timed as Z1 steps")
    costs = scale_costs(args.scale)
    for stage, (count, why) in stage_counts(config, args.patience_epochs).items():
        if stage not in costs:
            print(f"no {stage} figure in {args.scale}: run benchmarks/scale.py", flush=True)
            continue
        cost = costs[stage]
        add(f"{stage} (non-network, benchmarks/scale.py)", "runs", count, 1 / cost["seconds"],
            f"{why}; {cost['seconds']:.1f} s and peak {cost['peak_mb']:.0f} MB a run, "
            f"{cost['note']}", "CPU (benchmarks/scale.py, this machine)")  # fmt: skip
    table = pd.DataFrame(rows)
    total = {"stage": "total", "device": label, "unit": "", "items": None, "items_per_s": None,
             "hours": round(table["hours"].sum(), 3),
             "note": ("quick measurement; " if quick else "") + "one job at a time"}  # fmt: skip
    table = pd.concat([table, pd.DataFrame([total])], ignore_index=True)
    args.out.parent.mkdir(parents=True, exist_ok=True)
    with atomic_path(args.out) as tmp_csv:
        table.to_csv(tmp_csv, index=False)
    print(table.to_string(index=False))
    print(f"wrote {args.out}")


if __name__ == "__main__":
    main()
