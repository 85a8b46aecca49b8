"""Recall@5/10/50 of the pivot experiment, as fractions of 1 (the paper's Table 5 scale).

Scores are `(n_images, n_images * k)` matrices with caption c belonging to image c // k; the
ranks and ties follow mlmm.evaluation (VSE++ i2t / t2i).
"""

from __future__ import annotations

import numpy as np

from mlmm import evaluation, rank_metrics
from mlmm.pivot import KS


def _fractions(metrics: dict[str, float]) -> dict[str, float]:
    return {m: v / 100.0 if m.startswith("R@") else v for m, v in metrics.items()}


def ranks(scores: np.ndarray, per_image: int, t2i_scores: np.ndarray | None = None) -> dict:
    """{"i2t": 0-based rank of each image's first caption, "t2i": of each caption's image}:
    the per-query outcomes ``recalls`` summarises (kept as queries.npz, mlmm.outcomes)."""
    t2i_scores = scores if t2i_scores is None else t2i_scores
    return {
        "i2t": np.asarray(evaluation._score_matrix_ranks(scores, per_image, ("i2t",), None)["i2t"]),
        "t2i": np.asarray(
            evaluation._score_matrix_ranks(t2i_scores, per_image, ("t2i",), None)["t2i"]
        ),
    }


def recalls_of_ranks(test_ranks: dict) -> dict:
    """R@5/10/50 as fractions of 1, medr and meanr of ``ranks``' per-query ranks."""
    return {d: _fractions(rank_metrics.summarise_ranks(r, ks=KS)) for d, r in test_ranks.items()}


def recalls(scores: np.ndarray, per_image: int, t2i_scores: np.ndarray | None = None) -> dict:
    """{"i2t": {...}, "t2i": {...}}: R@5/10/50 as fractions of 1, medr and meanr.

    `t2i_scores`, when given, is used for caption-to-image instead of `scores` (2-CorrNet
    scores each direction through a different chain).
    """
    return recalls_of_ranks(ranks(scores, per_image, t2i_scores))


def criterion(metrics: dict[str, float]) -> float:
    """What lambda is chosen by: R@5 + R@10 + R@50 of one direction."""
    return float(sum(metrics[f"R@{k}"] for k in KS))
