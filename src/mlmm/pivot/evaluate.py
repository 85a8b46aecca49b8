"""Recall@5/10/50 of the pivot experiment, as fractions of 1 (the paper's Table 5 scale).

Scores are `(n_images, n_images * k)` matrices with caption c belonging to image c // k; the
ranks and ties follow mlmm.evaluation (VSE++ i2t / t2i).
"""

from __future__ import annotations

import numpy as np

from mlmm import evaluation
from mlmm.pivot import KS


def _fractions(metrics: dict[str, float]) -> dict[str, float]:
    return {m: v / 100.0 if m.startswith("R@") else v for m, v in metrics.items()}


def recalls(scores: np.ndarray, per_image: int, t2i_scores: np.ndarray | None = None) -> dict:
    """{"i2t": {...}, "t2i": {...}}: R@5/10/50 as fractions of 1, medr and meanr.

    `t2i_scores`, when given, is used for caption-to-image instead of `scores` (2-CorrNet
    scores each direction through a different chain).
    """
    t2i_scores = scores if t2i_scores is None else t2i_scores
    return {
        "i2t": _fractions(evaluation.i2t(scores, per_image, ks=KS)),
        "t2i": _fractions(evaluation.t2i(t2i_scores, per_image, ks=KS)),
    }


def criterion(metrics: dict[str, float]) -> float:
    """What lambda is chosen by: R@5 + R@10 + R@50 of one direction."""
    return float(sum(metrics[f"R@{k}"] for k in KS))
