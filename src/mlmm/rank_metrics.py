"""Numbers from ranks and scores, with numpy only: the tables, intervals and claims recompute
a run's metrics from its per-query outcomes (``mlmm.outcomes``) in environments without torch.
Ranks are 0-based, as ``mlmm.evaluation`` computes them (VSE++'s conventions)."""

from __future__ import annotations

from pathlib import Path

import numpy as np

from mlmm.degenerate import not_constant
from mlmm.errors import InputError

METRICS = ("R@1", "R@5", "R@10", "medr", "meanr")


def summarise_ranks(ranks, ks: tuple[int, ...] = (1, 5, 10)) -> dict[str, float]:
    """R@K for each K of ``ks`` (Rajendran 2016 reports R@50), medr and meanr from 0-based
    ranks, as VSE++ computes them."""
    ranks = np.asarray(ranks.cpu() if hasattr(ranks, "cpu") else ranks, dtype=np.float64)
    out = {f"R@{k}": float(100.0 * np.mean(ranks < k)) for k in ks}
    out["medr"] = float(np.floor(np.median(ranks)) + 1)
    out["meanr"] = float(ranks.mean() + 1)
    return out


def recall_sum(metrics: dict[str, dict[str, float]]) -> float:
    """Sum of R@1, R@5 and R@10 over both directions: the model-selection criterion."""
    return float(sum(metrics[d][f"R@{k}"] for d in ("i2t", "t2i") for k in (1, 5, 10)))


def metrics_of_folds(ranks: np.ndarray, folds: int = 1) -> dict[str, float]:
    """``METRICS`` of ranks cut into ``folds`` consecutive equal folds, each metric the mean
    over the folds (VSE++ ``evalrank(fold5=True)``)."""
    ranks = np.asarray(ranks)
    if folds < 1 or len(ranks) % folds:
        raise ValueError(f"{len(ranks)} ranks cannot be cut into {folds} equal folds")
    per_fold = [summarise_ranks(part) for part in np.split(ranks, folds)]
    return {m: float(np.mean([fold[m] for fold in per_fold])) for m in METRICS}


def pearson_of(predicted, gold, where: str | Path = "STS gold scores") -> float:
    """Pearson r of predicted against gold scores over the pairs with a gold score; constant
    scores on either side (r undefined) are refused naming ``where``."""
    predicted = np.asarray(predicted, dtype=np.float64)
    gold = np.asarray(gold, dtype=np.float64)
    keep = ~np.isnan(gold)
    if keep.sum() < 2:
        raise InputError(where, "at least two pairs with a gold score", f"{int(keep.sum())}")
    not_constant(gold[keep], where, "gold scores")
    not_constant(predicted[keep], where, "similarities of the encoder for its pairs")
    return float(np.corrcoef(predicted[keep], gold[keep])[0, 1])
