"""Bridge CorrNet training steps at the pivot experiment's paper sizes, and the epoch they imply.

The model of `mlmm.pivot` (Rajendran et al. 2016, Section 6): a dense 4096-d image view (fc6)
and binary bag-of-words English (the pivot) and French views of ~30,000 words each, hidden 200,
mini-batches of 20. A Z1 batch is 20 (image, English caption) pairs, ~10 distinct words per
caption; a Z2 batch 20 English-French talks, ~1,000 distinct words per talk (Zipf-distributed
words, random non-negative features). One step is what `mlmm.ted.corrnet.train` does per
mini-batch: build the batches, loss (Eq. 4, lambda 1), backward, SGD step.

Baseline, side by side in the same run (alternating rounds, median): the same model with the
text encoders as dense `nn.Linear` on the dense bag-of-words rows instead of `nn.EmbeddingBag`
over the CSR rows (the module's design choice); decoders and losses are the same. The epoch
time extrapolates the step times to the paper's 118,000 images x 5 captions / 20 Z1 batches plus
the en-fr TED training talks / 20 Z2 batches. Writes results/benchmarks/pivot.csv.

    .venv/bin/python benchmarks/pivot.py [--steps 20] [--rounds 3] [--threads 1] [--out CSV]
"""

from __future__ import annotations

import argparse
import math
import os
import platform
import statistics
import time
from pathlib import Path

import numpy as np
import pandas as pd
import scipy.sparse as sp
import torch

from mlmm.io import write_text
from mlmm.pivot import IMAGE, PIVOT
from mlmm.ted.corrnet import BridgeCorrNet, make_batch


class DenseTextCorrNet(BridgeCorrNet):
    """The baseline: every encoder an nn.Linear on the batch's dense rows; losses unchanged."""

    def __init__(self, dims: dict[str, int], hidden: int, dense: tuple[str, ...]) -> None:
        super().__init__(dims, hidden, binary=True, dense=tuple(dims))  # Linear encoders
        self.dense = tuple(sorted(dense))  # the loss still treats text views as binary words

    def pre(self, view, batch):
        return self.encoders[view](batch.dense)


def binary_bow(rng: np.random.Generator, docs: int, vocab: int, distinct: int) -> sp.csr_matrix:
    """Binary documents x vocabulary, `distinct` words each, frequent (Zipf) words likelier."""
    p = 1.0 / np.arange(1, vocab + 1)
    p /= p.sum()
    columns = np.concatenate([rng.choice(vocab, distinct, replace=False, p=p) for _ in range(docs)])
    rows = np.repeat(np.arange(docs), distinct)
    return sp.csr_matrix((np.ones(rows.size, np.float32), (rows, columns)), shape=(docs, vocab))


def seconds_per_step(model, pair, batch: int, steps: int, rng: np.random.Generator) -> float:
    """Mean seconds of `steps` training steps on random mini-batches of one pair (view, x, p)."""
    view, x, p = pair
    optimiser = torch.optim.SGD(model.parameters(), lr=0.01)
    start = time.perf_counter()
    for _ in range(steps):
        rows = rng.choice(x.shape[0], batch, replace=False)
        xv, xp = make_batch(x[rows]), make_batch(p[rows])
        optimiser.zero_grad(set_to_none=True)
        total, rec, corr = model.loss(view, PIVOT, xv, xp, 1.0)
        total.backward()
        optimiser.step()
        total.item(), rec.item(), corr.item()
    return (time.perf_counter() - start) / steps


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--image-dim", type=int, default=4096)
    parser.add_argument("--en-vocab", type=int, default=30000)
    parser.add_argument("--fr-vocab", type=int, default=30000)
    parser.add_argument("--hidden", type=int, default=200)
    parser.add_argument("--batch-size", type=int, default=20)
    parser.add_argument("--caption-words", type=int, default=10, help="distinct, Z1 English")
    parser.add_argument("--talk-words", type=int, default=1000, help="distinct, Z2 talks")
    parser.add_argument("--images", type=int, default=118000, help="Z1 images (5 captions each)")
    parser.add_argument("--talks", type=int, default=1100, help="en-fr TED train talks")
    parser.add_argument("--steps", type=int, default=20, help="per model, batch kind and round")
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--threads", type=int, default=1)
    parser.add_argument("--out", type=Path, default=Path("results/benchmarks/pivot.csv"))
    args = parser.parse_args()
    torch.set_num_threads(args.threads)
    torch.manual_seed(0)
    rng = np.random.default_rng(0)
    rows = 10 * args.batch_size  # distinct mini-batches to draw from
    features = np.maximum(rng.normal(size=(rows, args.image_dim)), 0).astype(np.float32)
    pairs = {
        "Z1 (image + en caption)": (
            IMAGE, features, binary_bow(rng, rows, args.en_vocab, args.caption_words)),
        "Z2 (fr + en talk)": (
            "fr",
            binary_bow(rng, rows, args.fr_vocab, args.talk_words),
            binary_bow(rng, rows, args.en_vocab, args.talk_words),
        ),
    }  # fmt: skip
    dims = {IMAGE: args.image_dim, PIVOT: args.en_vocab, "fr": args.fr_vocab}
    models = {
        "EmbeddingBag over CSR rows (mlmm)": BridgeCorrNet(dims, args.hidden, True, (IMAGE,)),
        "nn.Linear on dense rows (baseline)": DenseTextCorrNet(dims, args.hidden, (IMAGE,)),
    }
    times: dict[tuple[str, str], list[float]] = {(m, k): [] for m in models for k in pairs}
    for round_ in range(args.rounds):  # alternate models, so both see the same load
        for (name, kind), seconds in times.items():
            if round_ == 0:  # warm-up: first calls allocate and pick kernels
                seconds_per_step(models[name], pairs[kind], args.batch_size, 2, rng)
            seconds.append(
                seconds_per_step(models[name], pairs[kind], args.batch_size, args.steps, rng)
            )
            print(f"{name:36s} {kind:24s} {1000 * seconds[-1]:8.1f} ms/step", flush=True)
    batches = {
        "Z1 (image + en caption)": math.ceil(5 * args.images / args.batch_size),
        "Z2 (fr + en talk)": math.ceil(args.talks / args.batch_size),
    }
    records = []
    for name in models:
        step = {kind: statistics.median(times[name, kind]) for kind in pairs}
        epoch = sum(batches[kind] * step[kind] for kind in pairs)
        record = {"encoders": name}
        for kind, label in zip(pairs, ("z1", "z2"), strict=True):
            record |= {f"{label}_ms_per_step": 1000 * step[kind],
                       f"{label}_steps_per_s": 1 / step[kind],
                       f"{label}_batches_per_epoch": batches[kind]}  # fmt: skip
        records.append(record | {"epoch_minutes": epoch / 60, "run_hours_20_epochs": epoch / 180})
    frame = pd.DataFrame(records)
    frame["speedup_vs_baseline"] = frame["epoch_minutes"].iloc[1] / frame["epoch_minutes"]
    frame = frame.round(3).assign(
        image_dim=args.image_dim, en_vocab=args.en_vocab, fr_vocab=args.fr_vocab,
        hidden=args.hidden, batch_size=args.batch_size, caption_words=args.caption_words,
        talk_words=args.talk_words, steps=args.steps, rounds=args.rounds, threads=args.threads,
        host=platform.node(), load_average=round(os.getloadavg()[0], 1),
    )  # fmt: skip
    write_text(args.out, frame.to_csv(index=False))
    print(frame.T.to_string(header=False))
    print(f"wrote {args.out}")


if __name__ == "__main__":
    main()
