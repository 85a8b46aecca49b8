"""Benchmark k-best batch MIRA: 100 sentences x 100-best x 300 epochs.

Moses' C++ kbmira (the reference) is not available on this machine, so the vectorised
`mlmm.rerank.mira` is compared with `loop_mira` below: the same algorithm written the
straightforward way, one Python loop iteration per hypothesis (as kbmira's C++ loop), on the
same synthetic lists. Both must reach the same best tuning BLEU. Writes
results/benchmarks/mira.csv.

    python benchmarks/mira.py [--sentences 100] [--kbest 100] [--epochs 300] [--out CSV]
"""

from __future__ import annotations

import argparse
import math
import platform
import time
from pathlib import Path

import numpy as np
import pandas as pd

from mlmm.io import write_text
from mlmm.rerank import N_STATS, ORDER, REFLEN, corpus_bleu, mira


def synthetic_lists(sentences: int, kbest: int, features: int, seed: int = 0):
    """Random n-best lists whose BLEU statistics correlate with the features."""
    rng = np.random.default_rng(seed)
    truth = rng.normal(size=features)
    feats, stats = [], []
    for _ in range(sentences):
        f = rng.normal(size=(kbest, features))
        quality = 0.8 / (1 + np.exp(-(f @ truth + rng.normal(scale=2.0, size=kbest))))
        length = rng.integers(8, 20, size=kbest).astype(float)
        s = np.zeros((kbest, N_STATS))
        for n in range(ORDER):
            s[:, ORDER + n] = np.maximum(length - n, 0)
            s[:, n] = np.floor(s[:, ORDER + n] * quality ** (n + 1))
        s[:, REFLEN] = rng.integers(8, 20)
        feats.append(f)
        stats.append(s)
    return feats, stats


def loop_mira(features, stats, iters, c=0.01, decay=0.999, seed=1):
    """Per-hypothesis Python loops; same arithmetic and shuffling as `mlmm.rerank.mira`."""
    kept = [np.sort(np.unique(f, axis=0, return_index=True)[1]) for f in features]
    feats = [[list(f[i]) for i in k] for f, k in zip(features, kept, strict=True)]
    stat = [[list(s[i]) for i in k] for s, k in zip(stats, kept, strict=True)]
    d = len(feats[0][0])
    w, totals, updates = [0.0] * d, [0.0] * d, 0
    bg = [1.0] * N_STATS
    rng = np.random.default_rng(seed)

    def dot(a, b):
        return sum(x * y for x, y in zip(a, b, strict=True))

    def sbleu(s):
        t = [a + b for a, b in zip(s, bg, strict=True)]
        logp = sum(math.log(t[n]) - math.log(t[ORDER + n]) for n in range(ORDER)) / ORDER
        return math.exp(logp + min(0.0, 1 - t[REFLEN] / t[ORDER])) * t[REFLEN]

    def evaluate(weights):
        total = np.zeros(N_STATS)
        for fs, ss in zip(feats, stat, strict=True):
            scores = [dot(f, weights) for f in fs]
            total += ss[scores.index(max(scores))]
        return corpus_bleu(total)

    best = -math.inf
    for _ in range(iters):
        for i in rng.permutation(len(feats)):
            hope = fear = None
            for j, (f, s) in enumerate(zip(feats[i], stat[i], strict=True)):
                score, b = dot(f, w), sbleu(s)
                if hope is None or score + b > hope[0]:
                    hope = (score + b, j, b)
                if fear is None or score - b > fear[0]:
                    fear = (score - b, j, b)
            if hope[1] == fear[1] or hope[2] <= fear[2]:
                continue
            diff = [a - b for a, b in zip(feats[i][hope[1]], feats[i][fear[1]], strict=True)]
            loss = hope[2] - fear[2] - dot(diff, w)
            if loss > 0:
                eta = min(c, loss / dot(diff, diff))
                w = [a + eta * b for a, b in zip(w, diff, strict=True)]
                totals = [a + b for a, b in zip(totals, w, strict=True)]
                updates += 1
            bg = [decay * a + b for a, b in zip(bg, stat[i][hope[1]], strict=True)]
        avg = [t / updates for t in totals] if updates else list(w)
        best = max(best, evaluate(avg))
    return best


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sentences", type=int, default=100)
    parser.add_argument("--kbest", type=int, default=100)
    parser.add_argument("--epochs", type=int, default=300)
    parser.add_argument("--features", type=int, default=10)
    parser.add_argument("--out", type=Path, default=Path("results/benchmarks/mira.csv"))
    args = parser.parse_args()
    feats, stats = synthetic_lists(args.sentences, args.kbest, args.features)
    rows = []
    for name, run in [
        (
            "mlmm.rerank.mira (vectorised per sentence)",
            lambda: mira(feats, stats, args.epochs).best_bleu,
        ),
        ("per-hypothesis Python loops", lambda: loop_mira(feats, stats, args.epochs)),
    ]:
        start = time.perf_counter()
        bleu = run()
        rows.append(
            {
                "implementation": name,
                "seconds": time.perf_counter() - start,
                "best_tuning_bleu": bleu,
            }
        )
        print(rows[-1], flush=True)
    frame = pd.DataFrame(rows).assign(
        sentences=args.sentences,
        kbest=args.kbest,
        epochs=args.epochs,
        features=args.features,
        host=platform.node(),
        moses_kbmira="not available on this machine (no Moses build); not measured",
    )
    frame["speedup_vs_loop"] = frame["seconds"].iloc[1] / frame["seconds"]
    write_text(args.out, frame.to_csv(index=False))
    print(frame.to_string(index=False))


if __name__ == "__main__":
    main()
