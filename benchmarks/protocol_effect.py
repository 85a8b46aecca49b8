"""The effect of one protocol reading on the demo world: retrieval variants of config.yaml trained
as config.yaml states them and again with an override merged into each record (the reading they
replaced), seeds 1..N each, side by side (the "bring your own" effect a fidelity row moves).

The default is Kádár Figure 3's portions: config.yaml's figure3_* runs select on one
comparable validation caption per image and score the comparable test set with its 5 captions
(the paper's protocol); the override is the earlier reading (validation and test on the
translation portion, one caption). Needs a finished `make demo` in --workdir (its Multi30K
world, features and demo dictionaries). Writes results/benchmarks/protocol_effect.csv: per
variant, language, direction and reading, the mean and std over seeds of the metric, and the
difference of the means with a 95 % percentile-bootstrap interval over seeds. Nothing is asserted.

    .venv/bin/python benchmarks/protocol_effect.py [--seeds 10] [--workdir .]
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

import numpy as np
import pandas as pd
import yaml

from mlmm.io import read_json, write_text
from mlmm.retrieval.config import merge_config, resolve_variant
from mlmm.retrieval.train import Paths, train_variant
from mlmm.uncertainty import percentile_interval

ROOT = Path(__file__).resolve().parents[1]
FIGURE3 = ["figure3_mono_en", "figure3_mono_de", "figure3_bilingual", "figure3_multilingual"]
ROW1_BEFORE = {
    "validation": {"portion": "translation", "captions_per_image": None},
    "test": {"portion": "translation"},
}


def train(paths: Paths, section: dict, variant: str, seed: int, out: Path) -> dict:
    """One run of ``variant`` (the trainer the demo's train_retrieval rule calls); reused when
    ``out`` already holds its metrics."""
    if not (out / "metrics.json").exists():
        record = resolve_variant(section, variant)
        train_variant(record, seed, paths, out, progress=False, threads=1)
    return read_json(out / "metrics.json")["test"]


def seed_bootstrap(a: np.ndarray, b: np.ndarray, rng: np.random.Generator, draws: int = 2000):
    """mean(b) - mean(a) over ``draws`` resamples of each side's seeds (with replacement)."""
    return b[rng.integers(0, len(b), (draws, len(b)))].mean(1) - a[
        rng.integers(0, len(a), (draws, len(a)))
    ].mean(1)


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--workdir", type=Path, default=ROOT)
    parser.add_argument("--variants", nargs="+", default=FIGURE3)
    parser.add_argument("--override", type=json.loads, default=ROW1_BEFORE)
    parser.add_argument("--seeds", type=int, default=10)
    parser.add_argument("--metric", default="R@10")
    parser.add_argument("--runs", type=Path, default=ROOT / "results/benchmarks/protocol_effect")
    parser.add_argument("--out", type=Path, default=ROOT / "results/benchmarks/protocol_effect.csv")
    args = parser.parse_args(argv)
    if not (args.workdir / "results/multi30k/features").is_dir():
        sys.exit(f"{args.workdir}: expected a finished `make demo` (results/multi30k/features)")
    config = yaml.safe_load((ROOT / "config.yaml").read_text(encoding="utf-8"))["retrieval"]
    records = {variant: config["variants"][variant] for variant in args.variants}
    readings = {
        "config.yaml": records,
        "override": {name: merge_config(record, args.override) for name, record in records.items()},
    }
    world, data = args.workdir / "results/demo/world", args.workdir / "results/multi30k"
    paths = Paths(data, data / "features", None, world / "muse", world / "sts")
    scores: dict[tuple, list[float]] = {}
    for variant in args.variants:
        for reading, chosen in readings.items():
            for seed in range(1, args.seeds + 1):
                out = args.runs / reading.replace(".", "_") / variant / f"seed{seed}"
                section = {"defaults": config["defaults"], "variants": chosen}
                test = train(paths, section, variant, seed, out)
                for lang, directions in test.items():
                    for direction in ("i2t", "t2i"):
                        key = (variant, lang, direction, reading)
                        scores.setdefault(key, []).append(directions[direction][args.metric])
            print(variant, reading, f"{args.seeds} seeds done", flush=True)
    rng = np.random.default_rng(0)
    rows = []
    for (variant, lang, direction, reading), values in scores.items():
        if reading != "override":
            continue
        before = np.array(values)
        after = np.array(scores[(variant, lang, direction, "config.yaml")])
        low, high = percentile_interval(seed_bootstrap(before, after, rng))
        rows.append({
            "variant": variant, "language": lang, "direction": direction, "metric": args.metric,
            "seeds": len(after), "override": json.dumps(args.override),
            "override_mean": before.mean(), "override_std": before.std(ddof=1),
            "config_mean": after.mean(), "config_std": after.std(ddof=1),
            "difference": after.mean() - before.mean(), "difference_low": low,
            "difference_high": high,
        })  # fmt: skip
    frame = pd.DataFrame(rows)
    write_text(args.out, frame.to_csv(index=False, float_format="%.2f"))
    print(frame.drop(columns=["override", "metric"]).to_string(index=False))


if __name__ == "__main__":
    main()
