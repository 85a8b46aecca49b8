"""Benchmark the attention NMT on this machine's CPU: training tokens/s, beam-search sentences/s.

Trains the configured-size model for one epoch on the task1 training data, then beam-searches
validation sentences (beam 20) with it. Writes results/benchmarks/nmt.csv.

    python benchmarks/nmt.py [--data results/multi30k/data/task1/tok] [--threads 2]
"""

from __future__ import annotations

import argparse
import platform
import time
from pathlib import Path

import pandas as pd
import torch

from mlmm.io import read_lines, write_text
from mlmm.nmt.model import Sizes
from mlmm.nmt.search import nbest_lists
from mlmm.nmt.train import TrainConfig, train


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--data", type=Path, default=Path("results/multi30k/data/task1/tok"))
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--sentences", type=int, default=50, help="sentences to beam-search")
    parser.add_argument("--beam", type=int, default=20)
    parser.add_argument("--embedding", type=int, default=64)
    parser.add_argument("--hidden", type=int, default=128)
    parser.add_argument("--out", type=Path, default=Path("results/benchmarks/nmt.csv"))
    args = parser.parse_args()
    torch.set_num_threads(args.threads)

    def text(split, lang):
        return [line.split() for line in read_lines(args.data / f"{split}.lc.norm.tok.{lang}")]

    sizes = Sizes(args.embedding, args.hidden, args.hidden, 0.2)
    translator, history = train(
        text("train", "en"), text("train", "de"), text("val", "en"), text("val", "de"),
        TrainConfig(sizes, max_epochs=1), progress=False,
    )
    sources = text("val", "en")[: args.sentences]
    start = time.perf_counter()
    nbest_lists(translator, sources, args.beam, progress=False)
    seconds = time.perf_counter() - start
    common = {"device": "cpu", "threads": args.threads, "embedding": args.embedding,
              "hidden": args.hidden, "host": platform.node(), "torch": torch.__version__}
    frame = pd.DataFrame([
        {"measure": "training tokens per second (target side)",
         "value": history[0]["tokens_per_second"], **common},
        {"measure": f"beam search (beam {args.beam}) sentences per second",
         "value": len(sources) / seconds, **common},
    ])
    write_text(args.out, frame.to_csv(index=False))
    print(frame.to_string(index=False))


if __name__ == "__main__":
    main()
