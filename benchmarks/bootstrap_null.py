"""False-positive rate and power of the claims' paired bootstrap test (mlmm.uncertainty) per
number of seeds, on simulated retrieval runs with image clustering and seed-level effects
(docs/tables.md "Claims").

A trial simulates two methods, each trained ``seeds`` times, scored on the same test set of
``images`` images with five captions each (text-to-image ranks, R@10). A query's latent rank
is the image's difficulty (shared by every model), plus the trained model's own affinity for
that image (shared by the image's five captions: image clustering), plus a seed-level shift
of the whole trained model (one seed luckier than another, ``--seed-sd``), plus caption noise;
a better method (``--planted``) lowers every latent rank of its models. The test is run as the
claims run it (``paired_difference``: images drawn with all their captions, the seeds drawn
too) and, for comparison, with captions drawn one at a time. Under the null the rejection
rate should be 5 %; with a planted effect it is the power. Writes
results/benchmarks/bootstrap_null.csv (one row per setting, unit, seed-level spread and seed
count: trials, rate with its 95 % binomial interval, seconds per test). Nothing is asserted.

    .venv/bin/python benchmarks/bootstrap_null.py [--trials 200] [--images 100]
        [--seeds 1 3 5 10] [--seed-sd 0 2]
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
CAPTIONS = 5


def trained_models(difficulty, seeds: int, rng, seed_sd: float, shift: float = 0.0):
    """Per-seed t2i ranks of one method: difficulty + the model's image affinity (shared by
    an image's captions) + the model's seed-level shift + caption noise - ``shift``."""
    images = len(difficulty)
    out = []
    for _ in range(seeds):
        affinity = rng.normal(0, 6, images)
        level = rng.normal(0, seed_sd) if seed_sd else 0.0
        latent = np.repeat(difficulty + affinity, CAPTIONS) + level - shift
        latent += rng.normal(0, 3, images * CAPTIONS)
        out.append(np.maximum(0, np.round(latent)).astype(np.int64))
    return out


def rates(args, seeds: int, seed_sd: float) -> list[dict]:
    """Null and planted rejection rates, image-level and caption-level, for one setting."""
    rng = np.random.default_rng(1000 * seeds + int(10 * seed_sd))
    statistic = rank_statistic("R@10")
    groups = np.repeat(np.arange(args.images), CAPTIONS)
    hits = {(s, u): 0 for s in ("null", "planted") for u in ("image", "caption")}
    start = time.perf_counter()
    for trial in range(args.trials):
        difficulty = rng.gamma(1.5, 8.0, size=args.images)
        b = trained_models(difficulty, seeds, rng, seed_sd)
        for setting, shift in (("null", 0.0), ("planted", args.planted)):
            a = trained_models(difficulty, seeds, rng, seed_sd, shift)
            for unit, g in (("image", groups), ("caption", None)):
                test = paired_difference(a, b, statistic, resamples=args.resamples, seed=trial,
                                         groups=g)  # fmt: skip
                hits[(setting, unit)] += test.p < ALPHA
    seconds = (time.perf_counter() - start) / (4 * args.trials)
    rows = []
    for (setting, unit), count in hits.items():
        low, high = binomtest(count, args.trials).proportion_ci(0.95)
        rows.append({
            "setting": "null" if setting == "null" else f"planted: ranks {args.planted:g} lower",
            "resampling_unit": unit,
            "seed_sd": seed_sd,
            "seeds": seeds,
            "images": args.images,
            "captions_per_image": CAPTIONS,
            "trials": args.trials,
            "resamples": args.resamples,
            "rejected": count,
            "rate": count / args.trials,
            "rate_low": round(low, 4),
            "rate_high": round(high, 4),
            "seconds_per_test": round(seconds, 4),
        })  # fmt: skip
    return rows


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--trials", type=int, default=200)
    parser.add_argument("--images", type=int, default=100)
    parser.add_argument("--seeds", type=int, nargs="+", default=[1, 3, 5, 10])
    parser.add_argument("--seed-sd", type=float, nargs="+", default=[0.0, 2.0],
                        help="spread of the seed-level shift of a trained model (rank units)")
    parser.add_argument("--resamples", type=int, default=400)
    parser.add_argument("--planted", type=float, default=3.0,
                        help="how much lower a better method puts every latent rank")
    parser.add_argument("--out", type=Path, default=ROOT / "results/benchmarks/bootstrap_null.csv")
    args = parser.parse_args()
    rows = []
    for seed_sd in args.seed_sd:
        for seeds in args.seeds:
            found = rates(args, seeds, seed_sd)
            rows += found
            for row in found:
                print({k: row[k] for k in ("setting", "resampling_unit", "seed_sd", "seeds",
                                           "rate", "rate_low", "rate_high")})  # fmt: skip
    args.out.parent.mkdir(parents=True, exist_ok=True)
    write_text(args.out, pd.DataFrame(rows).to_csv(index=False))
    print(args.out)


if __name__ == "__main__":
    main()
