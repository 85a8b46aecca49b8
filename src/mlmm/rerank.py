"""k-best batch MIRA (Cherry & Foster 2012, as Moses' kbmira) and n-best reranking.

Conventions follow Moses ``kbmira``: per sentence, hope = argmax(score + BLEU) and fear =
argmax(score - BLEU), where BLEU is sentence BLEU computed against a decaying pseudo-document
background (starting at ones, decay 0.999) and scaled by the reference length as in Chiang et al.
2008; if hope != fear and hope's BLEU is higher, w += min(C, loss / ||hope - fear||^2) (hope -
fear) when loss = delta BLEU - w.(hope - fear) > 0, and the background absorbs hope's statistics.
Weights are averaged over updates (as Moses' MiraWeightVector: the running totals start at the
initial weights), and the epoch whose averaged weights give the best unsmoothed corpus BLEU on the
tuning lists is returned. Hypotheses with identical feature vectors are kept once (the first).
Sentence order is reshuffled every epoch with a seeded generator.

BLEU sufficient statistics are precomputed once per hypothesis (clipped n-gram matches and
totals for n = 1..4 and the closest reference length, like sacrebleu and Moses), so an epoch is
a loop over sentences with only vectorised numpy work per sentence.
"""

from __future__ import annotations

import math
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass, field
from itertools import chain
from pathlib import Path

import numpy as np

from mlmm.degenerate import nfc, not_empty
from mlmm.errors import InputError

ORDER = 4
# Column layout of a statistics row: matches for n=1..4, totals for n=1..4, reference length.
MATCH = slice(0, ORDER)
TOTAL = slice(ORDER, 2 * ORDER)
REFLEN = 2 * ORDER
N_STATS = 2 * ORDER + 1


def _ngrams(tokens: list[str]) -> Counter:
    """Counts of every n-gram of orders 1..4 in one Counter (an n-gram is an n-tuple)."""
    return Counter(chain.from_iterable(
        zip(*(tokens[i:] for i in range(n)), strict=False) for n in range(1, ORDER + 1)))


def reference_counts(references: Sequence[str]) -> tuple[Counter, list[int]]:
    """The most times each n-gram occurs in any one reference (the clip of a hypothesis's
    count), and the references' lengths: computed once per sentence, shared by all of its
    hypotheses."""
    refs = [r.split() for r in references]
    most: Counter = Counter()
    for ref in refs:
        most |= _ngrams(ref)
    return most, [len(r) for r in refs]


def _hypothesis_stats(hyp: list[str], most: Counter, ref_lengths: list[int]) -> list:
    row = [0] * N_STATS
    counts = _ngrams(hyp)
    for gram in counts.keys() & most.keys():  # only n-grams the references hold can match
        row[len(gram) - 1] += min(counts[gram], most[gram])
    for n in range(1, ORDER + 1):
        row[ORDER + n - 1] = max(len(hyp) - n + 1, 0)
    # closest reference length, the shorter one on ties (sacrebleu and Moses' default)
    row[REFLEN] = min((abs(r - len(hyp)), r) for r in ref_lengths)[1]
    return row


def bleu_stats(hypothesis: str, references: Sequence[str]) -> np.ndarray:
    """Sufficient statistics of one whitespace-tokenised hypothesis against its references."""
    return np.array(_hypothesis_stats(hypothesis.split(), *reference_counts(references)),
                    dtype=np.float64)


def corpus_bleu(stats: np.ndarray) -> float:
    """Unsmoothed corpus BLEU (0-100) from summed statistics; 0 when a precision is 0."""
    stats = np.asarray(stats, dtype=np.float64)
    if stats.ndim == 2:
        stats = stats.sum(axis=0)
    if np.any(stats[MATCH] <= 0) or stats[ORDER] <= 0:
        return 0.0
    log_precision = np.mean(np.log(stats[MATCH]) - np.log(stats[TOTAL]))
    brevity = min(0.0, 1.0 - stats[REFLEN] / stats[ORDER])
    return 100.0 * math.exp(log_precision + brevity)


def background_bleu(stats: np.ndarray, background: np.ndarray) -> np.ndarray:
    """Sentence BLEU of every row of ``stats`` (k x 9) added to the background, times ref length."""
    return _background_bleu_columns(stats.T, background[:, None])


def _background_bleu_columns(stats: np.ndarray, background: np.ndarray) -> np.ndarray:
    """``background_bleu`` of statistics laid out as columns (9 x k, background 9 x 1).

    The MIRA loop calls this once per sentence visit, so its cost is its numpy call count and
    memory layout: one log over the 8 contiguous count rows, and the 4 orders summed and
    divided by 4 (what numpy's mean does, without its Python wrapper); the same operations in
    the same order as the row layout, so the same bits.
    """
    total = stats + background
    logs = np.log(total[: 2 * ORDER])
    log_precision = np.add.reduce(logs[MATCH] - logs[TOTAL], axis=0) / ORDER
    brevity = np.minimum(0.0, 1.0 - total[REFLEN] / total[ORDER])
    return np.exp(log_precision + brevity) * total[REFLEN]


@dataclass
class TuningSet:
    """n-best lists as padded arrays: features (n, k, d), statistics (n, k, 9), valid mask."""

    features: np.ndarray
    stats: np.ndarray
    sizes: np.ndarray
    kept: list[np.ndarray] = field(default_factory=list)

    @classmethod
    def build(cls, features: Sequence[np.ndarray], stats: Sequence[np.ndarray]) -> TuningSet:
        """Pad per-sentence lists after removing hypotheses with duplicate feature vectors."""
        kept = []
        for f in features:
            _, first = np.unique(f, axis=0, return_index=True)
            kept.append(np.sort(first))
        n, k = len(features), max((len(i) for i in kept), default=0)
        d = features[0].shape[1] if features else 0
        feats = np.zeros((n, k, d))
        stat = np.ones((n, k, N_STATS))
        for i, (f, s, keep) in enumerate(zip(features, stats, kept, strict=True)):
            feats[i, : len(keep)] = f[keep]
            stat[i, : len(keep)] = s[keep]
        return cls(feats, stat, np.array([len(i) for i in kept]), kept)

    def model_best(self, weights: np.ndarray) -> np.ndarray:
        """Index (into the de-duplicated lists) of the highest-scoring hypothesis per sentence."""
        scores = self.features @ weights
        scores[np.arange(scores.shape[1])[None, :] >= self.sizes[:, None]] = -np.inf
        return scores.argmax(axis=1)

    def corpus_bleu(self, weights: np.ndarray) -> float:
        best = self.model_best(weights)
        return corpus_bleu(self.stats[np.arange(len(best)), best].sum(axis=0))


@dataclass
class MiraResult:
    weights: np.ndarray
    best_bleu: float
    best_epoch: int
    initial_bleu: float
    history: list[dict] = field(default_factory=list)


def mira(
    features: Sequence[np.ndarray],
    stats: Sequence[np.ndarray],
    iters: int = 60,
    c: float = 0.01,
    decay: float = 0.999,
    seed: int = 1,
    initial: np.ndarray | None = None,
    where: str | Path = "the n-best lists",
    shuffle: bool = True,
) -> MiraResult:
    """Tune linear weights on n-best lists (features k_i x d, BLEU statistics k_i x 9 each).

    ``shuffle=False`` visits the sentences in list order every epoch, as kbmira --no-shuffle:
    the two then take the same steps (benchmarks/mira.py --agreement compares them epoch by
    epoch; the pipeline shuffles, as kbmira does by default).

    Lists whose hypotheses all share one feature vector give MIRA nothing to separate; when
    every list is such (constant features), tuning would return its initial (zero) weights as
    if tuned, so it is refused naming ``where``."""
    not_empty(features, where, "n-best list")
    data = TuningSet.build(features, stats)
    if (data.sizes <= 1).all():
        raise InputError(
            where, "features that differ between the hypotheses of some list (MIRA has "
            "nothing to tune otherwise)", f"one feature vector per list in all {len(features)}",
        )  # fmt: skip
    d = data.features.shape[2]
    w = np.zeros(d) if initial is None else np.asarray(initial, dtype=np.float64).copy()
    totals, updates = w.copy(), 0
    rng = np.random.default_rng(seed)
    result = MiraResult(w.copy(), -math.inf, 0, data.corpus_bleu(w))
    # per sentence, once: contiguous features (k x d) and statistics as columns (9 x k)
    lists = [(data.features[i, :k], np.ascontiguousarray(data.stats[i, :k].T))
             for i, k in enumerate(data.sizes)]  # fmt: skip
    background = np.ones((N_STATS, 1))
    for epoch in range(1, iters + 1):
        n_updates, total_loss = 0, 0.0
        for i in rng.permutation(len(lists)) if shuffle else range(len(lists)):
            feats, stat = lists[i]
            score = feats @ w
            bleu = _background_bleu_columns(stat, background)
            hope = (score + bleu).argmax()
            fear = (score - bleu).argmax()
            if hope == fear or bleu[hope] <= bleu[fear]:
                continue
            diff = feats[hope] - feats[fear]
            loss = bleu[hope] - bleu[fear] - diff @ w
            if loss > 0:
                w = w + min(c, loss / (diff @ diff)) * diff
                totals += w
                updates += 1
                n_updates += 1
                total_loss += loss
            background *= decay
            background += stat[:, hope : hope + 1]
        averaged = totals / updates if updates else w.copy()
        bleu = data.corpus_bleu(averaged)
        result.history.append(
            {"epoch": epoch, "updates": n_updates, "avg_loss": total_loss / len(data.sizes),
             "bleu": bleu}
        )
        if bleu > result.best_bleu:
            result.weights, result.best_bleu, result.best_epoch = averaged, bleu, epoch
    return result


def rerank(features: Sequence[np.ndarray], weights: np.ndarray) -> np.ndarray:
    """Index of the best hypothesis per sentence under ``weights`` (the first one on ties)."""
    return np.array([int(np.argmax(f @ weights)) for f in features], dtype=int)


def nbest_stats(texts: Sequence[Sequence[str]], refs: Sequence[Sequence[str]]) -> list[np.ndarray]:
    """BLEU statistics of every hypothesis of every sentence (text compared in NFC: an NFD
    "é" would otherwise be another token than the reference's)."""
    out = []
    for hyps, r in zip(texts, refs, strict=True):
        most, lengths = reference_counts(nfc(r))
        rows = [_hypothesis_stats(h.split(), most, lengths) for h in nfc(hyps)]
        out.append(np.array(rows, dtype=np.float64).reshape(len(hyps), N_STATS))
    return out
