"""Model selection on validation: the score of one validation point and the patience bookkeeping.

The papers' authors select differently, and the variant record says which:

- Kádár (mulisera ``train.py``): the recall sum R@1+R@5+R@10 of i2t and t2i, summed over every
  training language (``select_language`` a list), or over one (``--primary``).
- AME (AME-CMR ``train.py``): the recall sums of English and German (Japanese) added.
- Calixto (``train_multilingual.py``): the lowest sum over languages of the i2t and t2i mean
  ranks; a tie goes to the higher recall sum (``select_by: mean_rank``).

A score is a tuple compared lexicographically, larger is better.
"""

from __future__ import annotations

import math

from mlmm import rank_metrics


def selection_score(metrics: dict[str, dict], langs: list[str], select_by: str) -> tuple:
    """The comparable score of one validation point over ``langs`` (per-language retrieval
    metrics as ``mlmm.evaluation.retrieval_metrics`` returns them)."""
    rsum = sum(rank_metrics.recall_sum(metrics[lang]) for lang in langs)
    if select_by == "rsum":
        return (rsum,)
    if select_by == "mean_rank":
        ranks = sum(metrics[lang][d]["meanr"] for lang in langs for d in ("i2t", "t2i"))
        return (-ranks, rsum)
    raise ValueError(f"unknown select_by {select_by!r}")


class Selector:
    """Best score so far, its step, validations since the last improvement.

    ``patience`` None: never stop early (AME runs every epoch and keeps the best point).
    """

    def __init__(self, patience: int | None) -> None:
        self.patience = patience
        self.score: tuple = (-math.inf,)
        self.step = 0
        self.bad = 0
        self.points = 0

    def update(self, score: tuple, step: int) -> bool:
        """Record one validation point; True when it is the new best."""
        self.points += 1
        if score > self.score:
            self.score, self.step, self.bad = tuple(score), step, 0
            return True
        self.bad += 1
        return False

    @property
    def exhausted(self) -> bool:
        return self.patience is not None and self.bad >= self.patience

    def outcome(self) -> dict:
        """How training ended: ``stopped_by`` patience or cap (the epoch/step limit), and
        ``still_improving`` when the cap stopped a run whose last validation was its best."""
        stopped_by = "patience" if self.exhausted else "cap"
        return {
            "stopped_by": stopped_by,
            "still_improving": stopped_by == "cap" and self.points > 0 and self.bad == 0,
        }

    def state(self) -> dict:
        return {
            "score": list(self.score),
            "step": self.step,
            "bad": self.bad,
            "points": self.points,
        }

    def load(self, state: dict) -> None:
        self.score, self.step = tuple(state["score"]), state["step"]
        self.bad, self.points = state["bad"], state["points"]
