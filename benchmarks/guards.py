"""Benchmark: what the write layer's guards cost at paper sizes.

    .venv/bin/python benchmarks/guards.py [--gb 0.9 --dir /tmp --repeats 3]

A feature array of ``--gb`` gigabytes (float32 rows of 2048, the size of COCO's train
features) goes through what a stage does with it, each step timed with the guards (the
write layer: claim, record, digest; the made-from record in the sidecar, checked on read) and
without them
(plain ``numpy.save`` / ``numpy.load``):

- ``write``: the extraction stage writes the array (``write_npy``, then its sidecar with
  ``made_from_record``): the claim of the file it replaces, the one sha256 of the new file, its
  records;
- ``read``: a training run reads it (``read_npy`` + ``check_feature_record``), as train, val and
  test each do: the digest comes from the record, the file is not read for it;
- ``read_hashing_every_time``: a read that hashed the file again (what a read cost before
  digests were kept), for comparison.

``guard_share`` is the guards' seconds over the step's (plain + guards), an upper bound of
their share of the stage (the stage also computes: a CNN over every image, or training).
Best of ``--repeats``; one CSV row per step in results/benchmarks/guards.csv.
"""

from __future__ import annotations

import argparse
import os
import platform
import shutil
import tempfile
import time
from pathlib import Path

import numpy as np
import pandas as pd

from mlmm import io
from mlmm.arrays import check_feature_record
from mlmm.fingerprint import made_from_record

ROOT = Path(__file__).resolve().parents[1]


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

    def write_guards():
        """What the layer adds to a write: the claim of the old file, the one digest of the
        new one, its record (twice: before and after the rename), the sidecar's made-from
        record."""
        io.claim(guarded)
        io._DIGESTS.clear()
        entry = io._entry(guarded)
        io._write_record(guarded, [entry, entry])
        io._write_record(guarded, [entry])
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
        ("write", write, best(repeats, write_guards)),
        ("read", read, best(repeats, read_guards)),
        ("read_hashing_every_time", read, best(repeats, first_hash)),
    ]
    return [
        dict(step=step, seconds_plain=plain_s, guard_seconds=guard_s,
             guard_share=guard_s / (plain_s + guard_s))
        for step, plain_s, guard_s in rows
    ]  # fmt: skip


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--gb", type=float, default=0.9, help="size of the feature array")
    parser.add_argument("--dir", type=Path, default=None, help="scratch directory (a temp one)")
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--out", type=Path, default=ROOT / "results/benchmarks/guards.csv")
    args = parser.parse_args()

    rows = int(args.gb * 1e9 / (2048 * 4))
    array = np.random.default_rng(0).standard_normal((rows, 2048), dtype=np.float32)
    work = Path(tempfile.mkdtemp(prefix="mlmm-guards-", dir=args.dir))
    try:
        frame = pd.DataFrame(measure(array, work, args.repeats))
    finally:
        shutil.rmtree(work, ignore_errors=True)
    frame = frame.assign(
        bytes=array.nbytes, rows=rows, host=platform.node(), cpus=os.cpu_count(),
        load_average=os.getloadavg()[0], date=time.strftime("%Y-%m-%d"),
    )  # fmt: skip
    io.write_text(args.out, frame.to_csv(index=False))
    print(frame[["step", "seconds_plain", "guard_seconds", "guard_share"]].to_string(index=False))
    print(f"wrote {args.out}")


if __name__ == "__main__":
    main()
