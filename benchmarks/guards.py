"""Benchmark: what the write layer's guards cost at paper sizes.

    .venv/bin/python benchmarks/guards.py [--gb 0.9 --dir /tmp --repeats 3] [--stages ...]

A feature array of ``--gb`` gigabytes (float32 rows of 2048, the size of COCO's train
features) goes through what a stage does with it, each step timed with the guards (the
write layer: claim, record, digest; the made-from record checked on read) and without them
(plain ``numpy.save`` / ``numpy.load``):

- ``write``: an array written (``write_npy`` + ``made_from_record`` in its sidecar): the claim
  of the file it replaces, the one sha256 of the new file, its records (feature extraction
  takes that sha256 on its writer thread as it writes the bytes, ``io.npy_rows``);
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
  hashed by the loader workers from the bytes they decode, ``file_identity``). A feature
  extraction's shards and arrays are written by its writer thread (``ShardWriter``) while the
  loop feeds the model: each shard's write guards and each array's sha256, taken as it is
  written; what the job waits for at its end is counted apart: each split's last shard, its
  rows' share of the array's sha256, the array's records and sidecar, the shards' claims;
- ``stage_seconds``: the job's time at paper size from a rate measured on the project's CPU
  machine (``stage_time_source`` names it: benchmarks/features.py and ted_corrnet.py, whose
  CSVs are on docs/benchmarks.md; docs/workflow.md; results/benchmarks/pivot.csv) times the
  configuration's work; empty where no rate of that stage was measured. ``gpu_stage_seconds``
  likewise where a GPU-machine rate is recorded (feature extraction: at least the time PIL
  decoding takes at the rate measured there);
- ``guard_share`` = guard_seconds / stage_seconds; ``stage_seconds_at_2pct`` =
  guard_seconds / 0.02: a job faster than that (on a GPU) spends over 2 % in its guards;
  ``gpu_guard_seconds`` / ``gpu_guard_share``: the same where the CPU seconds of a guard run
  off the loop feeding the GPU (the loader workers' image digests, the writer thread's work)
  are spread over the cores the decoding uses (15 of the 16): the decode-bound job is slowed
  by the cores' time they take, not by their whole time; the rest counts in full.

Last, the extraction loop itself, side by side, through extraction's own functions
(results/benchmarks/guards_loop.csv): the shards of Multi30K's train split at 4096 dimensions
(float32, the largest of the paper's features) handed over at the GPU machine's decode-bound
rate (one shard every 1024 / 1,598 s: ``time.sleep`` stands for the model), ``saving``
``in the loop`` (each shard saved by the loop, the array assembled and hashed after it, as
extraction did before it had a writer thread) or ``writer thread`` (``ShardWriter``):
``blocked_in_loop_s``, the loop's time beyond the model's (waits for the GIL included);
``blocked_at_end_s``, what the job waits for after the loop (the array in place, with its
record); ``blocked_share``, both over the model's time.

``--quick`` (tests) measures on small files, once, for the stages named by ``--stages``.
"""

from __future__ import annotations

import argparse
import hashlib
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


def write_guards(
    path: Path, made_from: dict | None, sidecar: bool = False, hashed: bool = True
) -> None:
    """What the layer adds to a write of ``path``: the claim of the file it replaces, the one
    digest of the new one (unless ``hashed`` is False: taken as the bytes were written,
    ``io.npy_rows``), its record (twice: before and after the rename), and the made-from
    record where the stage writes one (a feature array's: in its sidecar ``<split>.json``)."""
    io.claim(path)
    io._DIGESTS.clear()
    entry = io._entry(path, None if hashed else hashlib.sha256())
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


def assemble_after_the_loop(outputs, n: int, dim: int, shard_rows: int) -> None:
    """How extraction wrote its array before it had a writer thread: read back from the
    shards after the loop, into a file the layer then read again for its sha256."""
    with io.atomic_path(outputs.array) as tmp:
        final = np.lib.format.open_memmap(tmp, mode="w+", dtype=np.float32, shape=(n, dim))
        for k in range(-(-n // shard_rows)):
            final[k * shard_rows : (k + 1) * shard_rows] = io.read_npy(
                outputs.work / f"shard-{k:05d}.npy"
            )
        final.flush()
        del final


def loop_blocking(work: Path, shards: int, shard_rows: int, dim: int, gap: float) -> list[dict]:
    """The seconds the extraction loop is kept from the model by saving, through extraction's
    own functions, side by side: ``shards`` shards of ``shard_rows`` x ``dim`` float32 handed
    over ``gap`` seconds apart (the model's time for a shard), each saved in the loop
    (``_save_shard``) and the array assembled after it, or handed to the writer thread
    (``ShardWriter.put``, then ``finish``)."""
    from mlmm.features.extraction import Outputs, ShardWriter, _save_shard

    block = np.random.default_rng(0).standard_normal((shard_rows, dim), dtype=np.float32)
    n, rows = shards * shard_rows, []
    for saving in ("in the loop", "writer thread"):
        outputs = Outputs(work / saving.replace(" ", "_") / "train.npy")
        outputs.work.mkdir(parents=True)
        writer = None
        if saving == "writer thread":
            writer = ShardWriter(outputs, (n, dim), "float32", shard_rows, ())
        start = time.perf_counter()
        for k in range(shards):
            time.sleep(gap)  # the model computes the shard's features
            if writer is None:
                _save_shard(outputs.work, k, block, [], "0" * 64)
            else:
                writer.put(block, [], "0" * 64)
        in_loop = time.perf_counter() - start - shards * gap  # the GIL's waits included
        start = time.perf_counter()
        if writer is None:
            assemble_after_the_loop(outputs, n, dim, shard_rows)
        else:
            writer.finish()
        at_end = time.perf_counter() - start
        rows.append(dict(
            saving=saving, shards=shards, shard_bytes=block.nbytes, seconds_between_shards=gap,
            blocked_in_loop_s=in_loop, blocked_at_end_s=at_end,
            blocked_share=(in_loop + at_end) / (shards * gap) if gap else None,
        ))  # fmt: skip
        shutil.rmtree(outputs.array.parent)
    return rows


# ---------------------------------------------------------------- stages at paper sizes

SHARD_ROWS = 1024  # mlmm.features.extract's shard_size
IMAGE_BYTES = 19e9 / 123_287  # the 2014 COCO archives (config/paper.yaml) over their images
MIC_IMAGES = 1_000  # the pivot stage's MIC test set (Rajendran et al. 2016, Section 4.2)
# Backbones with more multiply-adds an image than ResNet-50 (4.1 G): VGG19 19.6 G, ResNet-152
# 11.5 G per crop and 10 crops. ResNet-50's images/s bounds their stage time from below.
SLOWER_THAN_RESNET50 = {"vgg19", "vgg19_bn", "resnet152"}

# Rates measured on the project's 2-core CPU machine, restated from the benchmark that measured
# them (its CSV, dated, with the machine, is on docs/benchmarks.md), and the one GPU-machine
# figure that bounds a stage: (rate, its source).
FEATURES_CPU = (5.93, "ResNet-50 `mlmm features` end to end, 5.93 images/s, 2-core CPU "
                "(benchmarks/features.py, docs/benchmarks.md)")  # fmt: skip
GPU_DECODE_WORKERS = 15  # mlmm.features.extraction.default_workers on the 16-core machine
FEATURES_GPU_DECODE = (1598.0, "at most 1,598 images/s: PIL decode+resize on the 16 cores of "
                       "the H100 machine, what decode: pil can feed (the measurement behind "
                       "docs/gpu.md's speed target of 1,500 images/s)")  # fmt: skip
RETRIEVAL_CPU = (0.228, "Kadar-family training step, 0.228 steps/s, 2-core CPU "
                 "(docs/workflow.md, Runtimes)")  # fmt: skip
NMT_CPU = (12.5, "NMT training, 12.5 target tokens/s, 2-core CPU (docs/workflow.md, Runtimes)")
TED_EPOCH_CPU = (123.8, "Bridge CorrNet at TED sizes, 123.8 s an epoch on one thread, 2-core CPU "
                 "(benchmarks/ted_corrnet.py, docs/benchmarks.md)")  # fmt: skip


@dataclass
class Op:
    """One guard a job runs ``count`` times on artefacts of ``size`` bytes each."""

    # write | write+made-from | read | claim | sha256_file | value digest | files digest |
    # bytes digest (a file's identity from bytes a loader worker read anyway) | digest as
    # written (io.npy_rows) | records+made-from (a write's claim and records without its digest)
    kind: str
    size: int
    count: int = 1
    what: str = ""
    # the cores its CPU seconds spread over on the GPU machine (a feature extraction's loader
    # workers and its writer thread run beside the decoding, off the loop feeding the GPU); on
    # the CPU machine they count in full against the stage's time
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
    workers = GPU_DECODE_WORKERS
    for backbone, dataset in used:
        splits, dim = _splits(dataset), BACKBONES[backbone].dim
        images, shards = sum(splits.values()), sum(-(-n // SHARD_ROWS) for n in splits.values())
        # the writer thread saves each shard and writes each array (hashed as written) while
        # the loop runs; the last shard of a split and the array's records are waited for
        shard, last = SHARD_ROWS * dim * itemsize, len(splits)
        ops = [
            Op("bytes digest", round(IMAGE_BYTES), images,
               "images (each shard's fingerprint, by the loader workers)", workers),
            Op("write", shard, shards - last, "shards (writer thread)", workers),
            Op("digest as written", images * dim * itemsize - last * shard, 1,
               "the arrays but each one's last shard (writer thread)", workers),
            Op("write", shard, last, "each split's last shard (waited for)"),
            Op("digest as written", shard, last, "its rows in the array (waited for)"),
            Op("records+made-from", shard, last, "each array's records and sidecar"),
            Op("claim", shard, shards, "shards discarded"),
        ]  # fmt: skip
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
                records = best(self.repeats, lambda: write_guards(path, None, hashed=False))
                made = best(self.repeats, lambda: record_made_from(path, inputs))
                self.file_costs[size] = {
                    "write": write,
                    "write+made-from": write + made,
                    "records+made-from": records + made,
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
        elif op.kind == "digest as written":  # io.npy_rows's sha256 of the bytes it writes
            each = best(self.repeats, lambda: hashlib.sha256(self.bytes[:measured]).digest())
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
    parser.add_argument(
        "--loop-out", type=Path, default=None,
        help="the extraction loop's blocked seconds (default: guards_loop.csv beside --out)",
    )  # fmt: skip
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
        shards, shard_rows = (2, 16) if args.quick else (-(-29_000 // SHARD_ROWS), SHARD_ROWS)
        gap = 0.0 if args.quick else SHARD_ROWS / FEATURES_GPU_DECODE[0]
        loop = pd.DataFrame(loop_blocking(work, shards, shard_rows, 4096, gap))
    finally:
        shutil.rmtree(work, ignore_errors=True)
    frame = frame.assign(bytes=array.nbytes, rows=rows, load_average=os.getloadavg()[0],
                         **machine)[[*frame.columns, "bytes", "rows", "host", "cpus",
                                     "load_average", "date"]]  # fmt: skip
    per_stage = per_stage.assign(**machine, load_average=os.getloadavg()[0],
                                 quick=args.quick)  # fmt: skip
    io.write_text(args.out, frame.to_csv(index=False))
    io.write_text(args.stages_out, per_stage.to_csv(index=False))
    loop_out = args.loop_out or args.out.with_name("guards_loop.csv")
    loop = loop.assign(**machine, load_average=os.getloadavg()[0])
    io.write_text(loop_out, loop.to_csv(index=False))
    print(frame[["step", "seconds_plain", "guard_seconds", "guard_share"]].to_string(index=False))
    print(per_stage[["stage", "guard_seconds", "stage_seconds", "guard_share",
                     "gpu_guard_share"]].to_string(index=False))  # fmt: skip
    print(loop.to_string(index=False))
    print(f"wrote {args.out}, {args.stages_out} and {loop_out}")


if __name__ == "__main__":
    main()
