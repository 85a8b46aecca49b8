"""Time per epoch of Bridge CorrNet at the real TED CLDC sizes, on generated sparse data.

The real training set has 12,078 parallel talks over 12 pairs (11 of them used here, about
1,100 talks each) and vocabularies of 31,213 to 60,326 words (Rajendran et al. 2016, Sec. 5.1).
Talks are about 2,000 tokens, ~600 distinct words. This script draws Zipf-distributed binary
bag-of-words of those sizes, trains for one epoch on a fraction of the talks (the time of an
epoch is linear in the number of mini-batches) and writes the measured and the full-epoch
time to results/benchmarks/ted_corrnet.csv (one row appended per run).

    .venv/bin/python benchmarks/ted_corrnet.py --fraction 0.1 --threads 1
"""

from __future__ import annotations

import argparse
import csv
import os
import platform
import time
from pathlib import Path

import numpy as np
import scipy.sparse as sp
import torch

from mlmm.ted import LANGUAGES
from mlmm.ted.corrnet import train


def zipf_bow(rng: np.random.Generator, docs: int, vocab: int, distinct: int) -> sp.csr_matrix:
    """Binary documents x vocabulary with ~`distinct` words each, frequent words likelier."""
    weights = 1.0 / np.arange(1, vocab + 1)
    weights /= weights.sum()
    draws = rng.choice(vocab, size=(docs, distinct * 2), p=weights)
    rows = np.repeat(np.arange(docs), draws.shape[1])
    matrix = sp.csr_matrix((np.ones(rows.size, np.float32), (rows, draws.ravel())), (docs, vocab))
    matrix.data[:] = 1.0
    return matrix


def matmul_gflops(threads: int) -> float:
    """This machine's speed right now on the decoder's matrix product (60 x 128 x 60k)."""
    codes, weight = torch.randn(60, 128), torch.randn(60000, 128)
    codes @ weight.T
    start, repeats = time.perf_counter(), 10
    for _ in range(repeats):
        codes @ weight.T
    return 2 * 60 * 128 * 60000 * repeats / (time.perf_counter() - start) / 1e9


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--docs-per-pair", type=int, default=1100)
    parser.add_argument("--distinct", type=int, default=600, help="distinct words per talk")
    parser.add_argument("--pivot-vocab", type=int, default=60326)
    parser.add_argument("--fraction", type=float, default=0.1, help="of each pair's talks")
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--device", default="cpu")
    parser.add_argument("--out", type=Path, default=Path("results/benchmarks/ted_corrnet.csv"))
    args = parser.parse_args()
    torch.set_num_threads(args.threads)
    rng = np.random.default_rng(0)
    vocabs = np.linspace(31213, 60326, len(LANGUAGES)).astype(int)
    docs = max(2, round(args.docs_per_pair * args.fraction))
    pairs = {}
    for language, vocab in zip(LANGUAGES, vocabs, strict=True):
        base = zipf_bow(rng, docs, args.pivot_vocab, args.distinct)
        pairs[language] = (zipf_bow(rng, docs, int(vocab), args.distinct), base)
    gflops = matmul_gflops(args.threads)
    nnz = np.mean([x.getnnz(axis=1).mean() for x, _ in pairs.values()])
    start = time.perf_counter()
    _, history = train(pairs, args.pivot_vocab, epochs=1, device=args.device, progress=True)
    seconds = history[0]["seconds"]
    # Dense decoding dominates: 3 matrix products (forward, two gradients) per view and batch
    # over 60 codes; with the machine's matmul speed this bounds the epoch time.
    batches_per_pair = np.ceil(args.docs_per_pair / 20)
    widths = sum(x.shape[1] + args.pivot_vocab for x, _ in pairs.values())
    decoder_gflop = float(3 * 2 * 60 * 128 * widths * batches_per_pair / 1e9)
    row = {
        "date": time.strftime("%Y-%m-%dT%H:%M:%S"),
        "host": platform.node(),
        "device": args.device if args.device == "cpu" else torch.cuda.get_device_name(),
        "threads": args.threads,
        "pairs": len(pairs),
        "docs_per_pair_timed": docs,
        "docs_per_pair_full": args.docs_per_pair,
        "vocab_min": int(vocabs.min()),
        "vocab_max": int(vocabs.max()),
        "pivot_vocab": args.pivot_vocab,
        "nonzeros_per_doc": round(float(nnz), 1),
        "batch_size": 20,
        "hidden": 128,
        "seconds_timed": round(seconds, 2),
        "seconds_per_epoch": round(seconds * args.docs_per_pair / docs, 1),
        "seconds_with_setup": round(time.perf_counter() - start, 2),
        "decoder_gflop_per_epoch": round(decoder_gflop, 1),
        "matmul_gflops_now": round(gflops, 1),
        "load_average": round(os.getloadavg()[0], 1),
    }
    args.out.parent.mkdir(parents=True, exist_ok=True)
    new = not args.out.exists()
    with open(args.out, "a", newline="") as handle:
        writer = csv.DictWriter(handle, fieldnames=list(row))
        if new:
            writer.writeheader()
        writer.writerow(row)
    print(row)


if __name__ == "__main__":
    main()
