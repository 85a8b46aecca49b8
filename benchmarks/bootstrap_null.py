"""False-positive rate of the claims' paired bootstrap test (mlmm.uncertainty) over many seeded
null comparisons, and its power on planted effects (docs/tables.md "Claims").

Each trial draws two systems' per-query ranks on the same N queries from one distribution
(a query's difficulty shared by both, so the pair is correlated as real systems are; each
system's own noise per query and seed), runs ``paired_difference`` on R@10 with 1,000 resamples
and counts p < 0.05. Under the null the rate should be near 5 %; with a planted effect (a
share of one system's queries moved to rank 0) near 100 %. Writes
results/benchmarks/bootstrap_null.csv (setting, trials, rate with its 95 % binomial interval,
seconds per test). Nothing is asserted.

    .venv/bin/python benchmarks/bootstrap_null.py [--trials 400] [--queries 500] [--seeds 1 3]
"""

from __future__ import annotations

import argparse
import time
from pathlib import Path

import numpy as np
import pandas as pd
from scipy.stats import binomtest

from mlmm.io import write_text
from mlmm.uncertainty import ALPHA, paired_difference, rank_statistic

ROOT = Path(__file__).resolve().parents[1]


def system_ranks(difficulty: np.ndarray, seeds: int, rng, planted: float = 0.0):
    """Per-seed ranks: a query's shared difficulty plus the system's noise; ``planted``: the
    share of queries a better system ranks first."""
    out = []
    for _ in range(seeds):
        ranks = np.maximum(0, np.round(difficulty + rng.normal(0, 4, len(difficulty))))
        if planted:
            ranks = np.where(rng.random(len(ranks)) < planted, 0, ranks)
        out.append(ranks.astype(np.int64))
    return out


def rate(trials: int, queries: int, seeds: int, planted: float, resamples: int, seed: int):
    rng = np.random.default_rng(seed)
    statistic = rank_statistic("R@10")
    hits, start = 0, time.perf_counter()
    for trial in range(trials):
        difficulty = rng.gamma(1.5, 8.0, size=queries)
        a = system_ranks(difficulty, seeds, rng, planted)
        b = system_ranks(difficulty, seeds, rng)
        test = paired_difference(a, b, statistic, resamples=resamples, seed=trial)
        hits += test.p < ALPHA
    seconds = (time.perf_counter() - start) / trials
    low, high = binomtest(hits, trials).proportion_ci(0.95)
    return {
        "setting": "null" if not planted else f"planted {planted:.0%} of queries at rank 0",
        "queries": queries,
        "seeds": seeds,
        "trials": trials,
        "resamples": resamples,
        "rejected": hits,
        "rate": hits / trials,
        "rate_low": round(low, 4),
        "rate_high": round(high, 4),
        "seconds_per_test": round(seconds, 4),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--trials", type=int, default=400)
    parser.add_argument("--queries", type=int, default=500)
    parser.add_argument("--seeds", type=int, nargs="+", default=[1, 3])
    parser.add_argument("--resamples", type=int, default=1000)
    parser.add_argument("--planted", type=float, default=0.1)
    parser.add_argument("--out", type=Path, default=ROOT / "results/benchmarks/bootstrap_null.csv")
    args = parser.parse_args()
    rows = []
    for seeds in args.seeds:
        for planted in (0.0, args.planted):
            rows.append(rate(args.trials, args.queries, seeds, planted, args.resamples, seeds))
            print(rows[-1])
    args.out.parent.mkdir(parents=True, exist_ok=True)
    write_text(args.out, pd.DataFrame(rows).to_csv(index=False))
    print(args.out)


if __name__ == "__main__":
    main()
