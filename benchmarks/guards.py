"""Benchmark: what the write layer's guards cost at paper sizes.

    .venv/bin/python benchmarks/guards.py [--gb 0.9 --dir /tmp --repeats 3] [--stages ...]

A feature array of ``--gb`` gigabytes (float32 rows of 2048, the size of COCO's train
features) goes through what a stage does with it, each step timed with the guards (the
write layer: claim, record, digest; the made-from record checked on read) and without them
(plain ``numpy.save`` / ``numpy.load``):

- ``write``: the extraction stage writes the array (``write_npy`` + ``made_from_record`` in
  its sidecar): the claim of the file it replaces, the one sha256 of the new file, its records;
- ``read``: a training run reads it (``read_npy`` + ``check_feature_record``), as train, val and
  test each do: the digest comes from the record, the file is not read for it;
- ``read_hashing_every_time``: a read that hashed the file again (what a read cost before
  digests were kept), for comparison.

``guard_share`` is the guards' seconds over the step's (plain + guards), an upper bound of
their share of the stage (the stage also computes: a CNN over every image, or training).
Best of ``--repeats``; one CSV row per step in results/benchmarks/guards.csv.

Then each stage of the paper configuration that writes or reads a guarded artefact, one job
of it at the paper's sizes (config.yaml with config/paper.yaml over it), one row per stage in
results/benchmarks/guards_stages.csv:

- ``guard_seconds``: the guards of every artefact the job writes or reads, measured here on
  files of those sizes through the layer's own functions (a file above ``--gb`` is measured
  at ``--gb`` and scaled by its bytes: a sha256 is linear in them): per written file the
  claim, its one sha256 and its records (and its made-from record where the stage writes
  one), per recorded file read its made-from check, the fingerprints a stage takes of arrays
  it holds (``value_digest``) and of files no mlmm command wrote (``files_digest``: the NMT's
  training text; the images of each feature shard, at the 2014 COCO images' mean size, are
  hashed by the loader workers from the bytes they decode, ``file_identity``);
- ``stage_seconds``: the job's time at paper size from a rate measured on the project's CPU
  machine (``stage_time_source`` names it: docs/features.md, docs/workflow.md, docs/ted.md,
  results/benchmarks/pivot.csv) times the configuration's work; empty where no rate of that
  stage was measured. ``gpu_stage_seconds`` likewise where a GPU-machine rate is recorded
  (feature extraction: at least the time PIL decoding takes at the rate measured there);
- ``guard_share`` = guard_seconds / stage_seconds; ``stage_seconds_at_2pct`` =
  guard_seconds / 0.02: a job faster than that (on a GPU) spends over 2 % in its guards;
  ``gpu_guard_seconds`` / ``gpu_guard_share``: the same where a guard's CPU seconds spread
  over the GPU machine's loader workers (the images' digests).

``--quick`` (tests) measures on small files, once, for the stages named by ``--stages``.
"""

from __future__ import annotations

import argparse
import io as bytes_io
import math
import os
import platform
import shutil
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pandas as pd

from mlmm import io
from mlmm.arrays import check_feature_record
from mlmm.fingerprint import (
    check_made_from,
    file_identity,
    files_digest,
    made_from_record,
    record_made_from,
    value_digest,
)

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "benchmarks"))


def best(repeats: int, fn, before=None) -> float:
    """Best time of ``fn`` over ``repeats`` runs (``before`` run untimed ahead of each)."""
    times = []
    for _ in range(repeats):
        if before is not None:
            before()
        start = time.perf_counter()
        fn()
        times.append(time.perf_counter() - start)
    return min(times)


def write_guards(path: Path, made_from: dict | None, sidecar: bool = False) -> None:
    """What the layer adds to a write of ``path``: the claim of the file it replaces, the one
    digest of the new one, its record (twice: before and after the rename), and the made-from
    record where the stage writes one (a feature array's: in its sidecar ``<split>.json``)."""
    io.claim(path)
    io._DIGESTS.clear()
    entry = io._entry(path)
    io._write_record(path, [entry, entry])
    io._write_record(path, [entry])
    if made_from is not None and sidecar:
        io.write_json(path.with_suffix(".json"), made_from_record(path, made_from))
    elif made_from is not None:
        record_made_from(path, made_from)


def measure(array: np.ndarray, work: Path, repeats: int) -> list[dict]:
    """Each step's plain time (the bytes moved) and its guards' time, each timed on its own
    so that the disk's write-back of one does not land in the other."""
    guarded, plain = work / "guarded" / "train.npy", work / "plain" / "train.npy"
    guarded.parent.mkdir(parents=True)
    plain.parent.mkdir(parents=True)
    inputs = {"image list": "0" * 64}

    def write_plain():
        with open(plain, "wb") as handle:
            np.save(handle, array)

    io.write_npy(guarded, array)
    io.write_json(guarded.with_suffix(".json"), made_from_record(guarded, inputs))

    def read_plain():
        return np.load(plain).sum()

    def read_guards():
        check_feature_record(guarded, inputs)

    def first_hash():
        io._DIGESTS.clear()
        io._hash(guarded, os.stat(guarded))

    write = best(repeats, write_plain, lambda: plain.unlink(missing_ok=True))
    read = best(repeats, read_plain)
    rows = [
        ("write", write, best(repeats, lambda: write_guards(guarded, inputs, sidecar=True))),
        ("read", read, best(repeats, read_guards)),
        ("read_hashing_every_time", read, best(repeats, first_hash)),
    ]
    return [
        dict(step=step, seconds_plain=plain_s, guard_seconds=guard_s,
             guard_share=guard_s / (plain_s + guard_s))
        for step, plain_s, guard_s in rows
    ]  # fmt: skip


# ---------------------------------------------------------------- stages at paper sizes

SHARD_ROWS = 1024  # mlmm.features.extract's shard_size
IMAGE_BYTES = 19e9 / 123_287  # the 2014 COCO archives (config/paper.yaml) over their images
MIC_IMAGES = 1_000  # the pivot stage's MIC test set (Rajendran et al. 2016, Section 4.2)
# Backbones with more multiply-adds an image than ResNet-50 (4.1 G): VGG19 19.6 G, ResNet-152
# 11.5 G per crop and 10 crops. ResNet-50's images/s bounds their stage time from below.
SLOWER_THAN_RESNET50 = {"vgg19", "vgg19_bn", "resnet152"}

# Rates measured on the project's 2-core CPU machine, restated from where they are recorded
# (and the one GPU-machine figure that bounds a stage): (rate, its source).
FEATURES_CPU = (5.48, "ResNet-50 `mlmm features` end to end, 5.48 images/s, 2-core CPU "
                "(docs/features.md)")  # fmt: skip
GPU_DECODE_WORKERS = 15  # mlmm.features.extraction.default_workers on the 16-core machine
FEATURES_GPU_DECODE = (1598.0, "at most 1,598 images/s: PIL decode+resize on the 16 cores of "
                       "the H100 machine, what decode: pil can feed (docs/gpu.md)")  # fmt: skip
RETRIEVAL_CPU = (0.228, "Kadar-family training step, 0.228 steps/s, 2-core CPU "
                 "(docs/workflow.md, Runtimes)")  # fmt: skip
NMT_CPU = (12.5, "NMT training, 12.5 target tokens/s, 2-core CPU (docs/workflow.md, Runtimes)")
TED_EPOCH_CPU = (330.0, "Bridge CorrNet at TED sizes, 330 s an epoch on one thread, 2-core CPU "
                 "(docs/ted.md)")  # fmt: skip


@dataclass
class Op:
    """One guard a job runs ``count`` times on artefacts of ``size`` bytes each."""

    # write | write+made-from | read | claim | sha256_file | value digest | files digest |
    # bytes digest (a file's identity from bytes a loader worker read anyway)
    kind: str
    size: int
    count: int = 1
    what: str = ""
    # the processes its CPU seconds spread over on the GPU machine (a feature extraction's
    # loader workers); on the CPU machine they count in full against the stage's time
    gpu_workers: int = 1


@dataclass
class Stage:
    name: str
    ops: list[Op]
    seconds: float | None  # the job's time at paper size (None: not measured)
    source: str
    gpu_seconds: float | None = None
    gpu_source: str = ""


def _splits(dataset: str) -> dict[str, int]:
    from gpu_hours import COCO_SPLITS, MULTI30K_SPLITS

    if dataset == "coco":
        return dict(COCO_SPLITS)
    if dataset == "coco pivot":  # Z1 from every Karpathy split (pivot_split: paper), and MIC
        return {**COCO_SPLITS, "mic": MIC_IMAGES}
    return dict(MULTI30K_SPLITS)


def feature_stages(config: dict) -> list[Stage]:
    """One extraction job per backbone and data set the configuration reads: every split's
    shards, the images each shard's fingerprint reads, the arrays and their records."""
    from mlmm.features import BACKBONES
    from mlmm.retrieval.config import resolve_variant, run_names

    used: dict[tuple[str, str], None] = {}
    for name in run_names(config["retrieval"]):
        record = resolve_variant(config["retrieval"], name, "config/paper.yaml")
        used[record["backbone"], record["dataset"]] = None
    used[config["pivot"]["backbone"], "coco pivot"] = None
    itemsize = np.dtype(config["features"]["dtype"]).itemsize
    stages = []
    for backbone, dataset in used:
        splits, dim = _splits(dataset), BACKBONES[backbone].dim
        images, shards = sum(splits.values()), sum(-(-n // SHARD_ROWS) for n in splits.values())
        ops = [
            Op("bytes digest", round(IMAGE_BYTES), images,
               "images (each shard's fingerprint, by the loader workers)", GPU_DECODE_WORKERS),
            Op("write", SHARD_ROWS * dim * itemsize, shards, "shards"),
            Op("claim", SHARD_ROWS * dim * itemsize, shards, "shards discarded"),
        ] + [Op("write+made-from", n * dim * itemsize, 1, f"{split}.npy")
             for split, n in splits.items()]  # fmt: skip
        rate, source = FEATURES_CPU
        if backbone == "resnet50":
            seconds = images / rate
        elif backbone in SLOWER_THAN_RESNET50:
            seconds = images / rate
            source = f"at least: {backbone} is slower than ResNet-50; {source}"
        else:
            seconds, source = None, f"not measured ({backbone} on a CPU)"
        gpu_rate, gpu_source = FEATURES_GPU_DECODE
        stages.append(Stage(
            f"features {backbone}, {dataset} ({images:,} images)", ops, seconds, source,
            images / gpu_rate, f"at least: {gpu_source}",
        ))  # fmt: skip
    return stages


def _tensor_bytes(module) -> int:
    return sum(t.numel() * t.element_size() for t in module.state_dict().values())


def _pickled_bytes(obj) -> int:
    import torch

    buffer = bytes_io.BytesIO()
    torch.save(obj, buffer)
    return buffer.tell()


def retrieval_stage(config: dict, multi30k: Path, patience_epochs: int = 30) -> Stage:
    """One run of the Kadar family (the configuration's first variant): its three feature
    arrays read, their fingerprint, a checkpoint every ``checkpoint_every`` steps (model,
    Adam's two moments, the best state: four copies of the weights), model.pt."""
    import torch
    from gpu_hours import MULTI30K_SPLITS, counted_epochs, retrieval_examples

    from mlmm.features import BACKBONES
    from mlmm.retrieval.api import build_model
    from mlmm.retrieval.config import resolve_variant, run_names
    from mlmm.retrieval.data import Vocabularies, training_captions

    name = run_names(config["retrieval"])[0]
    record = resolve_variant(config["retrieval"], name, "config/paper.yaml")
    dim = BACKBONES[record["backbone"]].dim
    captions = training_captions(multi30k, record, np.random.default_rng(1))
    vocabs = Vocabularies.build(captions, record)
    with torch.device("meta"):
        weights = _tensor_bytes(build_model(record, dim, vocabs))
    extras = _pickled_bytes({"vocabularies": vocabs.state(), "record": record})
    examples, _ = retrieval_examples(record, multi30k)
    steps = counted_epochs(record, patience_epochs) * math.ceil(examples / record["batch_size"])
    itemsize = np.dtype(config["features"]["dtype"]).itemsize
    sizes = {split: n * dim * itemsize for split, n in MULTI30K_SPLITS.items()}
    ops = [Op("read", size, 1, f"{split}.npy") for split, size in sizes.items()] + [
        Op("value digest", sizes["train"], 1, "fingerprint of the train features"),
        Op("value digest", sizes["val"], 1, "fingerprint of the validation features"),
        Op("write", 4 * weights + extras, math.ceil(steps / record["checkpoint_every"]),
           "checkpoint.pt"),
        Op("write+made-from", weights + extras, 1, "model.pt"),
    ]  # fmt: skip
    rate, source = RETRIEVAL_CPU
    return Stage(f"train-retrieval {name} ({steps:,} steps)", ops, steps / rate, source)


def nmt_stage(config: dict, multi30k: Path) -> Stage:
    """One NMT training job: the fingerprint of its four text files, model.pt once."""
    import torch
    from gpu_hours import nmt_target_tokens

    from mlmm.nmt.model import Seq2Seq, Sizes, Tokens

    nmt, tok = config["nmt"], multi30k / "data/task1/tok"
    files = [tok / f"{s}.lc.norm.tok.{lang}" for s in ("train", "val")
             for lang in (nmt["src"], nmt["tgt"])]  # fmt: skip
    min_count = nmt["train"]["min_count"]
    vocab = {lang: len(Tokens.build((line.split() for line in files[i].open(encoding="utf-8")),
                                    min_count))
             for i, lang in enumerate((nmt["src"], nmt["tgt"]))}  # fmt: skip
    with torch.device("meta"):
        model = Seq2Seq(vocab[nmt["src"]], vocab[nmt["tgt"]], Sizes(**nmt["model"]))
    size = _tensor_bytes(model) + 10 * sum(vocab.values())  # the words, about 10 bytes each
    tokens, _ = nmt_target_tokens(multi30k, nmt["tgt"])
    epochs = nmt["train"]["max_epochs"]
    ops = [
        Op("files digest", round(sum(f.stat().st_size for f in files) / 4), 4, "text files"),
        Op("write+made-from", size, 1, "model.pt"),
    ]
    rate, source = NMT_CPU
    return Stage(f"train-nmt {nmt['src']}-{nmt['tgt']} ({epochs} epochs)", ops,
                 epochs * tokens / rate, source)  # fmt: skip


def ted_stage(config: dict) -> Stage:
    """One lambda's ted-train job at the TED CLDC sizes (benchmarks/ted_corrnet.py's
    vocabularies): model.pt, and codes.npz with its record."""
    import torch

    from mlmm.ted import LANGUAGES, PIVOT
    from mlmm.ted.corrnet import BridgeCorrNet

    ted = config["ted"]
    dims = dict(zip(LANGUAGES, np.linspace(31213, 60326, len(LANGUAGES)).astype(int).tolist(),
                    strict=True)) | {PIVOT: 60326}  # fmt: skip
    with torch.device("meta"):
        weights = _tensor_bytes(BridgeCorrNet(dims, ted["hidden"], True))
    codes = len(LANGUAGES) * 2 * 1_100 * ted["hidden"] * 4  # both views, train + test talks
    ops = [Op("write", weights, 1, "model.pt"), Op("write+made-from", codes, 1, "codes.npz")]
    rate, source = TED_EPOCH_CPU
    return Stage(f"ted-train, one lambda ({ted['epochs']} epochs)", ops, ted["epochs"] * rate,
                 source)  # fmt: skip


def pivot_stage(config: dict, pivot_csv: Path) -> Stage:
    """One pivot-train job: its four feature arrays read, test_ranking.npz (MIC codes) written
    and the run directory's record over it."""
    from mlmm.features import BACKBONES

    pivot = config["pivot"]
    dim, itemsize = BACKBONES[pivot["backbone"]].dim, np.dtype(config["features"]["dtype"]).itemsize
    ranking = (MIC_IMAGES + 5 * MIC_IMAGES) * pivot["hidden"] * 4
    ops = [Op("read", n * dim * itemsize, 1, f"{split}.npy")
           for split, n in _splits("coco pivot").items()] + [
        Op("write", ranking, 1, "test_ranking.npz"),
        Op("sha256_file", ranking, 1, "the run directory's record"),
    ]  # fmt: skip
    seconds, source = None, f"not measured ({pivot_csv.name} missing: run benchmarks/pivot.py)"
    if pivot_csv.is_file():
        frame = io.read_csv(
            pivot_csv, "benchmarks/pivot.py's CSV", ("encoders", "run_hours_20_epochs")
        )
        ours = frame[frame["encoders"].str.contains("mlmm")]
        if len(ours):
            seconds = float(ours["run_hours_20_epochs"].iloc[0]) * 3600 * pivot["epochs"] / 20
            source = (f"Bridge CorrNet step of {pivot_csv.name} (benchmarks/pivot.py), "
                      f"{pivot['epochs']} epochs, one thread of the 2-core CPU")  # fmt: skip
    return Stage(f"pivot-train, one job ({pivot['epochs']} epochs)", ops, seconds, source)


class GuardTimer:
    """Seconds of each guard of a ``Op``, measured on files of its size (at most ``cap`` bytes,
    then scaled by the bytes) through the layer's functions; each size measured once."""

    def __init__(self, buffer: np.ndarray, work: Path, repeats: int, sample_files: int):
        self.bytes = buffer.reshape(-1).view(np.uint8)
        self.work, self.repeats, self.sample_files = work, repeats, sample_files
        self.file_costs: dict[int, dict[str, float]] = {}

    @property
    def cap(self) -> int:
        return self.bytes.size

    def _file(self, size: int) -> dict[str, float]:
        """Per-file guards on one file of ``size`` bytes, written through the layer."""
        if size not in self.file_costs:
            folder = Path(tempfile.mkdtemp(dir=self.work))
            path, inputs = folder / "artefact.bin", {"inputs": "0" * 64}
            try:
                io.write_bytes(path, self.bytes[:size].data)
                write = best(self.repeats, lambda: write_guards(path, None))
                made = best(self.repeats, lambda: record_made_from(path, inputs))
                self.file_costs[size] = {
                    "write": write,
                    "write+made-from": write + made,
                    "read": best(self.repeats, lambda: check_made_from(path, inputs)),
                    "claim": best(self.repeats, lambda: io.claim(path)),
                    "sha256_file": best(self.repeats, lambda: io.sha256_file(path)),
                }
            finally:
                shutil.rmtree(folder, ignore_errors=True)
        return self.file_costs[size]

    def _foreign_file(self, size: int) -> float:
        """``files_digest``'s seconds a file of ``size`` bytes that no mlmm command wrote (an
        image), timed over ``sample_files`` of them (fewer of a large size)."""
        key = -size  # apart from the layer's files of the same size
        if key not in self.file_costs:
            folder = Path(tempfile.mkdtemp(dir=self.work))
            try:
                n = max(1, min(self.sample_files, int(3e8 // size)))  # at most 300 MB
                paths = [folder / f"{k}.jpg" for k in range(n)]
                for k, path in enumerate(paths):
                    path.write_bytes(np.roll(self.bytes[:size], k).data)

                def digest():
                    io._DIGESTS.clear()
                    files_digest(paths)

                seconds = best(self.repeats, digest) / len(paths)
                self.file_costs[key] = {"files digest": seconds}
            finally:
                shutil.rmtree(folder, ignore_errors=True)
        return self.file_costs[key]["files digest"]

    def seconds(self, op: Op) -> float:
        """All ``op.count`` guards of ``op``."""
        measured = min(op.size, self.cap)
        if op.kind == "value digest":
            array = self.bytes[: measured - measured % 4].view(np.float32)
            each = best(self.repeats, lambda: value_digest(array))
        elif op.kind == "bytes digest":
            data = self.bytes[:measured].tobytes()
            each = best(self.repeats, lambda: file_identity("image.jpg", data))
        elif op.kind == "files digest":
            each = self._foreign_file(measured)
        else:
            each = self._file(measured)[op.kind]
        return each * op.count * op.size / measured


def _mb(size: int) -> str:
    return f"{size / 1e6:,.0f}" if size >= 1e8 else f"{size / 1e6:.3g}"


def stage_rows(stages: list[Stage], timer: GuardTimer) -> list[dict]:
    rows = []
    for stage in stages:
        seconds = [timer.seconds(op) for op in stage.ops]
        guard = sum(seconds)
        gpu_guard = sum(s / op.gpu_workers for op, s in zip(stage.ops, seconds, strict=True))
        rows.append({
            "stage": stage.name,
            "guarded": "; ".join(
                f"{op.what}: {op.count:,} x {_mb(op.size)} MB {op.kind} {s:.3g} s"
                for op, s in zip(stage.ops, seconds, strict=True)
            ),
            "artefact_bytes": sum(op.size * op.count for op in stage.ops),
            "largest_measured_bytes": max(min(op.size, timer.cap) for op in stage.ops),
            "guard_seconds": guard,
            "stage_seconds": stage.seconds,
            "stage_time_source": stage.source,
            "guard_share": None if stage.seconds is None else guard / stage.seconds,
            "gpu_stage_seconds": stage.gpu_seconds,
            "gpu_stage_time_source": stage.gpu_source or "no GPU rate measured",
            "gpu_guard_seconds": gpu_guard,
            "gpu_guard_share": None if stage.gpu_seconds is None else gpu_guard / stage.gpu_seconds,
            "stage_seconds_at_2pct": guard / 0.02,
        })  # fmt: skip
    return rows


def paper_stages(names: list[str], multi30k: Path, pivot_csv: Path) -> list[Stage]:
    """The stages of config/paper.yaml (over config.yaml) whose names start with one of
    ``names``."""
    from gpu_hours import paper_config

    config = paper_config()
    builders = {
        "features": lambda: feature_stages(config),
        "train-retrieval": lambda: [retrieval_stage(config, multi30k)],
        "train-nmt": lambda: [nmt_stage(config, multi30k)],
        "ted-train": lambda: [ted_stage(config)],
        "pivot-train": lambda: [pivot_stage(config, pivot_csv)],
    }
    needs_data = {"train-retrieval", "train-nmt"}
    chosen = [b for b in builders if any(b.startswith(n) for n in names)]
    if needs_data & set(chosen) and not (multi30k / "data/task1/tok").is_dir():
        raise SystemExit(
            f"--multi30k {multi30k}: expected Multi30K (data/task1/tok) for the "
            "vocabulary sizes of train-retrieval and train-nmt, found none"
        )
    return [stage for b in chosen for stage in builders[b]()]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument(
        "--gb", type=float, default=0.9, help="size of the feature array; the largest file measured"
    )
    parser.add_argument("--dir", type=Path, default=None, help="scratch directory (a temp one)")
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument(
        "--stages",
        nargs="+",
        default=["features", "train", "ted", "pivot"],
        help="stages whose names start with these (features, train-retrieval, "
        "train-nmt, ted-train, pivot-train)",
    )
    parser.add_argument(
        "--quick", action="store_true", help="small files, measured once: that it runs, not figures"
    )
    parser.add_argument(
        "--multi30k",
        type=Path,
        default=ROOT.parent / "shared/data/multi30k",
        help="Multi30K root: the vocabulary sizes of train-retrieval and train-nmt",
    )
    parser.add_argument("--pivot-csv", type=Path, default=ROOT / "results/benchmarks/pivot.csv")
    parser.add_argument("--out", type=Path, default=ROOT / "results/benchmarks/guards.csv")
    parser.add_argument(
        "--stages-out", type=Path, default=ROOT / "results/benchmarks/guards_stages.csv"
    )
    args = parser.parse_args()  # fmt: skip
    if args.quick:
        args.gb, args.repeats = 0.004, 1
    stages = paper_stages(args.stages, args.multi30k, args.pivot_csv)

    rows = int(args.gb * 1e9 / (2048 * 4))
    array = np.random.default_rng(0).standard_normal((rows, 2048), dtype=np.float32)
    machine = dict(host=platform.node(), cpus=os.cpu_count(), date=time.strftime("%Y-%m-%d"))
    work = Path(tempfile.mkdtemp(prefix="mlmm-guards-", dir=args.dir))
    try:
        frame = pd.DataFrame(measure(array, work, args.repeats))
        timer = GuardTimer(array, work, args.repeats, 4 if args.quick else 2000)
        per_stage = pd.DataFrame(stage_rows(stages, timer))
    finally:
        shutil.rmtree(work, ignore_errors=True)
    frame = frame.assign(bytes=array.nbytes, rows=rows, load_average=os.getloadavg()[0],
                         **machine)[[*frame.columns, "bytes", "rows", "host", "cpus",
                                     "load_average", "date"]]  # fmt: skip
    per_stage = per_stage.assign(**machine, load_average=os.getloadavg()[0],
                                 quick=args.quick)  # fmt: skip
    io.write_text(args.out, frame.to_csv(index=False))
    io.write_text(args.stages_out, per_stage.to_csv(index=False))
    print(frame[["step", "seconds_plain", "guard_seconds", "guard_share"]].to_string(index=False))
    print(per_stage[["stage", "guard_seconds", "stage_seconds", "guard_share",
                     "gpu_guard_share"]].to_string(index=False))  # fmt: skip
    print(f"wrote {args.out} and {args.stages_out}")


if __name__ == "__main__":
    main()
