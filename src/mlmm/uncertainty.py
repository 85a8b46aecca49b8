"""Bootstrap intervals for a table cell and for the difference of two systems: pure numpy.

A cell of ours is the mean over seeds of a metric of per-query outcomes (``mlmm.outcomes``);
its uncertainty has two sources, the test set drawn and the seeds run. One bootstrap replicate
(``replicates``) draws both:

1. the test images, with replacement, each drawn image bringing all of its queries (an image
   and its five captions; ``groups``: each query's image id, kept in queries.npz), within
   each fold when the metric is a mean over folds, so every fold keeps its size; one draw
   shared by every seed and every system compared on the same queries (paired). Captions of
   one image share the image's difficulty: drawn one at a time they would pass for
   independent evidence and the interval would be too narrow (docs/tables.md, "What a null
   simulation found");
2. the seeds, ``S`` of them with replacement from the ``S`` run (a two-level bootstrap; with
   one seed only the test set varies, and a seed-level effect is invisible),

and averages the metric of the drawn queries over the drawn seeds. The 95 % interval is the
2.5th and 97.5th percentile of 1,000 replicates (percentile bootstrap, Efron & Tibshirani 1993,
ch. 13); numpy's ``default_rng(seed)`` makes it deterministic.

The difference of two systems on the same queries (``paired_difference``) uses the same draw
of images for both and their own seed draws. Its two-sided p-value is the recentred paired
bootstrap test (Efron & Tibshirani 1993, ch. 16; Berg-Kirkpatrick et al. 2012):
``(1 + #{|d* - mean d*| >= |d|}) / (B + 1)``, the share of replicates, shifted to mean 0, at
least as far from zero as the observed difference ``d`` (sacrebleu's
``sacrebleu.significance`` draws the same sentences for the same seed, tests/test_uncertainty.py,
but centres the absolute differences, ``|d*| - mean |d*| > |d|``; ours keeps the sign so
that the interval and the test use one distribution). A parity claim ("competitive", "no
detrimental effect") is a one-sided non-inferiority test with a margin ``M``:
``(1 + #{d* - mean d* >= d + M}) / (B + 1)``, small when ``d`` is well above ``-M``.
``minimal_detectable_effect`` is the effect the test finds with 80 % power, from the
bootstrap standard error of the difference. ``holm`` adjusts a paper's p-values together
(Holm 1979) and ``holm_levels`` gives the interval levels that go with them.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field

import numpy as np

RESAMPLES = 1000
LEVEL = 0.95
ALPHA = 0.05
POWER = 0.8
# A statistic maps outcomes with the queries on axis 1, shape (replicates, n, ...), to one
# number per replicate.
Statistic = Callable[[np.ndarray], np.ndarray]


# ----------------------------------------------------------------------------------------
# statistics of per-query outcomes, vectorised over replicates


def _per_fold(values: np.ndarray, folds: int, summary: Callable) -> np.ndarray:
    """``summary`` over each of ``folds`` equal consecutive parts of axis 1, then the mean."""
    b, n = values.shape[:2]
    parts = values.reshape(b, folds, n // folds, *values.shape[2:])
    return summary(parts).mean(axis=1)


def rank_statistic(metric: str, folds: int = 1) -> Statistic:
    """The retrieval ``metric`` (R@K, medr, meanr; ``rank_metrics.summarise_ranks``) of 0-based
    ranks, the mean over ``folds`` equal folds (``rank_metrics.metrics_of_folds``)."""
    if metric.startswith("R@"):
        k = int(metric[2:])
        summary = lambda r: 100.0 * (r < k).mean(axis=-1)  # noqa: E731
    elif metric == "medr":
        summary = lambda r: np.floor(np.median(r, axis=-1)) + 1  # noqa: E731
    elif metric == "meanr":
        summary = lambda r: r.mean(axis=-1) + 1  # noqa: E731
    else:
        raise ValueError(f"no per-query statistic for retrieval metric {metric!r}")
    return lambda ranks: _per_fold(np.asarray(ranks, dtype=np.float64), folds, summary)


def pearson_statistic(pairs: np.ndarray) -> np.ndarray:
    """Pearson r of (predicted, gold) pairs, shape (replicates, n, 2), over the pairs with a
    gold score (``rank_metrics.pearson_of``)."""
    x, y = pairs[..., 0], pairs[..., 1]
    keep = ~np.isnan(y)
    count = keep.sum(axis=1)
    x, y = np.where(keep, x, 0.0), np.where(keep, y, 0.0)
    mx, my = x.sum(axis=1) / count, y.sum(axis=1) / count
    dx, dy = np.where(keep, x - mx[:, None], 0.0), np.where(keep, y - my[:, None], 0.0)
    with np.errstate(invalid="ignore", divide="ignore"):
        return (dx * dy).sum(axis=1) / np.sqrt((dx * dx).sum(axis=1) * (dy * dy).sum(axis=1))


def macro_f1_statistic(decisions: np.ndarray) -> np.ndarray:
    """The classifier's F1 (``ted.classify.topic_f1`` averaged over the topics, Rajendran et
    al. 2016 Tables 1, 3) of per-document (predicted, gold) topic decisions, shape
    (replicates, documents, topics, 2): the one F1 definition, on every replicate at once."""
    from mlmm.ted.classify import topic_f1

    b, n, topics = decisions.shape[:3]
    # every replicate's topics as columns of one (documents, replicates x topics) matrix
    columns = decisions.transpose(1, 0, 2, 3).reshape(n, b * topics, 2)
    f1 = np.ascontiguousarray(topic_f1(columns[..., 1], columns[..., 0]).reshape(b, topics))
    # a topic that a replicate draws no positive talk of is left out, as ted.classify.macro_f1
    # leaves it out of the reported F1
    defined = ~np.isnan(f1)
    return np.where(defined, f1, 0.0).sum(axis=1) / np.maximum(defined.sum(axis=1), 1)


# ----------------------------------------------------------------------------------------
# resampling


def image_members(groups: np.ndarray, folds: int = 1) -> np.ndarray:
    """``(images, k)`` query indices of every image (``groups``: each query's image id), the
    images in order of first appearance; ValueError unless every image has the same number
    of queries and lies in one of ``folds`` equal consecutive folds."""
    groups = np.asarray(groups)
    n = len(groups)
    if n < 1 or folds < 1 or n % folds:
        raise ValueError(f"{n} queries cannot be cut into {folds} equal folds")
    _, first, inverse, counts = np.unique(
        groups, return_index=True, return_inverse=True, return_counts=True
    )
    if len(set(counts.tolist())) != 1:
        raise ValueError(f"images hold unequal numbers of queries: {sorted(set(counts))}")
    position = np.empty(len(first), dtype=np.int64)
    position[np.argsort(first, kind="stable")] = np.arange(len(first))
    members = np.argsort(position[inverse.ravel()], kind="stable").reshape(len(first), -1)
    fold_of = members // (n // folds)
    if (fold_of != fold_of[:, :1]).any():
        raise ValueError("an image's queries fall in more than one fold")
    return members


def query_draws(
    n: int,
    resamples: int,
    rng: np.random.Generator,
    folds: int = 1,
    groups: np.ndarray | None = None,
) -> np.ndarray:
    """``(resamples, n)`` query indices: images drawn with replacement within each of
    ``folds`` equal consecutive folds, each drawn image bringing all its queries (``groups``:
    each query's image id; None: every query its own image)."""
    if n < 1 or folds < 1 or n % folds:
        raise ValueError(f"{n} queries cannot be cut into {folds} equal folds")
    if groups is None:
        members = np.arange(n)[:, None]
    else:
        if len(groups) != n:
            raise ValueError(f"{len(groups)} image ids for {n} queries")
        members = image_members(groups, folds)
    images = len(members)
    if images % folds:
        raise ValueError(f"{images} images cannot be cut into {folds} equal folds")
    size = images // folds
    picks = rng.integers(0, size, size=(resamples, images))
    picks += np.repeat(np.arange(folds) * size, size)[None, :]
    return members[picks].reshape(resamples, n)


def _stacked(per_seed: Sequence[np.ndarray]) -> np.ndarray:
    arrays = [np.asarray(a) for a in per_seed]
    if not arrays:
        raise ValueError("no seeds")
    if len({a.shape for a in arrays}) != 1:
        raise ValueError(f"seeds differ in their queries: shapes {[a.shape for a in arrays]}")
    return np.stack(arrays)


def _seed_values(outcomes: np.ndarray, statistic: Statistic, draws: np.ndarray) -> np.ndarray:
    """``(seeds, replicates)``: the statistic of every seed on every query draw, in blocks of
    replicates so that memory stays bounded on large test sets."""
    step = max(1, (1 << 22) // max(1, draws.shape[1]))
    return np.stack(
        [
            np.concatenate(
                [statistic(seed[draws[a : a + step]]) for a in range(0, len(draws), step)]
            )
            for seed in outcomes
        ]
    )


def replicates(
    per_seed: Sequence[np.ndarray],
    statistic: Statistic,
    draws: np.ndarray,
    rng: np.random.Generator,
) -> np.ndarray:
    """One value per query draw: the statistic averaged over a draw of the seeds (with
    replacement; all of them, once, when there is one)."""
    outcomes = _stacked(per_seed)
    values = _seed_values(outcomes, statistic, draws)
    seeds = len(outcomes)
    if seeds == 1:
        return values[0]
    chosen = rng.integers(0, seeds, size=(draws.shape[0], seeds))
    return values[chosen, np.arange(draws.shape[0])[:, None]].mean(axis=1)


def point(per_seed: Sequence[np.ndarray], statistic: Statistic) -> float:
    """The cell itself: the statistic of every seed's queries, averaged over the seeds."""
    outcomes = _stacked(per_seed)
    return float(statistic(outcomes).mean())


def percentile_interval(values: np.ndarray, level: float = LEVEL) -> tuple[float, float]:
    tail = 100 * (1 - level) / 2
    low, high = np.nanpercentile(values, [tail, 100 - tail])
    return float(low), float(high)


@dataclass(frozen=True)
class Interval:
    value: float
    low: float
    high: float

    def contains(self, x: float) -> bool:
        return bool(self.low <= x <= self.high)


def cell_interval(
    per_seed: Sequence[np.ndarray],
    statistic: Statistic,
    folds: int = 1,
    resamples: int = RESAMPLES,
    seed: int = 0,
    level: float = LEVEL,
    groups: np.ndarray | None = None,
) -> Interval:
    """A cell's value (mean over seeds) and its percentile interval over test images and
    seeds (module docstring)."""
    rng = np.random.default_rng(seed)
    n = _stacked(per_seed).shape[1]
    draws = query_draws(n, resamples, rng, folds, groups)
    values = replicates(per_seed, statistic, draws, rng)
    return Interval(point(per_seed, statistic), *percentile_interval(values, level))


@dataclass(frozen=True)
class Difference:
    """System A minus system B on the same queries: the observed difference, its percentile
    interval, the p-value (two-sided; one-sided non-inferiority where a margin was given),
    the bootstrap standard error and the replicates themselves (for intervals at other
    levels, ``percentile_interval``)."""

    value: float
    low: float
    high: float
    p: float
    se: float = np.nan
    replicates: np.ndarray | None = field(default=None, compare=False, repr=False)


def paired_replicates(
    a: Sequence[np.ndarray],
    b: Sequence[np.ndarray],
    statistic: Statistic,
    folds: int = 1,
    resamples: int = RESAMPLES,
    seed: int = 0,
    groups: np.ndarray | None = None,
) -> tuple[float, np.ndarray]:
    """A minus B (each the mean over its seeds) and its ``resamples`` bootstrap replicates,
    one draw of images for both. The same ``seed`` draws the same images for every cell with
    the same number of images and folds (an image's i2t and t2i queries, or its captions in
    several languages), so replicates of several cells can be averaged into one claim's."""
    n = _stacked(a).shape[1]
    if _stacked(b).shape[1:] != _stacked(a).shape[1:]:
        raise ValueError("the two systems were not scored on the same queries")
    rng = np.random.default_rng(seed)
    draws = query_draws(n, resamples, rng, folds, groups)
    diffs = replicates(a, statistic, draws, rng) - replicates(b, statistic, draws, rng)
    return point(a, statistic) - point(b, statistic), diffs


def replicates_against(
    a: Sequence[np.ndarray],
    published: float,
    statistic: Statistic,
    folds: int = 1,
    resamples: int = RESAMPLES,
    seed: int = 0,
    groups: np.ndarray | None = None,
) -> tuple[float, np.ndarray]:
    """A (the mean over its seeds) minus a ``published`` number that has no queries of ours
    (a paper's quoted baseline), and its replicates: A's images drawn as ``paired_replicates``
    draws them, the published number held fixed (its own noise is unknown, so the interval is
    ours only)."""
    rng = np.random.default_rng(seed)
    draws = query_draws(_stacked(a).shape[1], resamples, rng, folds, groups)
    return point(a, statistic) - published, replicates(a, statistic, draws, rng) - published


def difference_of(
    observed: float, diffs: np.ndarray, level: float = LEVEL, margin: float | None = None
) -> Difference:
    """The interval, p-value and standard error of an observed difference from its bootstrap
    replicates (module docstring: two-sided, or non-inferiority with ``margin``)."""
    diffs = np.asarray(diffs, dtype=np.float64)
    resamples = len(diffs)
    shifted = diffs - np.nanmean(diffs)
    if margin is None:
        p = (1 + np.sum(np.abs(shifted) >= abs(observed))) / (resamples + 1)
    else:
        p = (1 + np.sum(shifted >= observed + margin)) / (resamples + 1)
    se = float(np.nanstd(diffs, ddof=1)) if resamples > 1 else np.nan
    return Difference(float(observed), *percentile_interval(diffs, level), float(p), se, diffs)


def paired_difference(
    a: Sequence[np.ndarray],
    b: Sequence[np.ndarray],
    statistic: Statistic,
    folds: int = 1,
    resamples: int = RESAMPLES,
    seed: int = 0,
    level: float = LEVEL,
    groups: np.ndarray | None = None,
    margin: float | None = None,
) -> Difference:
    """A minus B (each the mean over its seeds) with a paired percentile interval (one draw
    of images for both) and a paired bootstrap p-value: two-sided for "A differs from B", or,
    with ``margin``, one-sided for "A is not worse than B by ``margin`` or more"."""
    observed, diffs = paired_replicates(a, b, statistic, folds, resamples, seed, groups)
    return difference_of(observed, diffs, level, margin)


def minimal_detectable_effect(
    se: float, alpha: float = ALPHA, power: float = POWER
) -> float:
    """The smallest true difference a two-sided test at ``alpha`` finds with ``power``, for a
    difference whose sampling standard error is ``se``: ``(z_{1-alpha/2} + z_power) * se``
    (2.80 se at 0.05 and 80 %)."""
    from scipy.stats import norm

    return float((norm.ppf(1 - alpha / 2) + norm.ppf(power)) * se)


def holm(pvalues: Sequence[float]) -> np.ndarray:
    """Holm's step-down adjusted p-values (family-wise error over one paper's claims); NaN
    entries (claims not run) are left out of the family and stay NaN."""
    p = np.asarray(pvalues, dtype=np.float64)
    out = np.full_like(p, np.nan)
    present = np.flatnonzero(~np.isnan(p))
    order = present[np.argsort(p[present], kind="stable")]
    m, running = len(order), 0.0
    for i, index in enumerate(order):
        running = max(running, min(1.0, (m - i) * p[index]))
        out[index] = running
    return out


def holm_levels(pvalues: Sequence[float], alpha: float = ALPHA) -> np.ndarray:
    """The interval level that goes with each Holm-adjusted p-value: ``1 - alpha * p /
    p_holm`` with ``p_holm`` uncapped (the claim's step-down factor, running maximum
    included), so that an interval excludes 0 where its adjusted p is under ``alpha``; the
    95 % level where a family has one member. NaN where ``p`` is."""
    p = np.asarray(pvalues, dtype=np.float64)
    out = np.full_like(p, np.nan)
    present = np.flatnonzero(~np.isnan(p))
    order = present[np.argsort(p[present], kind="stable")]
    m, running = len(order), 0.0
    for i, index in enumerate(order):
        running = max(running, (m - i) * p[index])
        out[index] = 1 - alpha * p[index] / running if running > 0 else 1 - alpha
    return out
