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
totals for n = 1..4 and the closest reference length, like sacrebleu and Moses). An epoch is a
sequential loop over sentences (each update moves what the next sentence sees): compiled in C
(``mlmm._mira_epoch``, built by ``pip install`` where a C compiler is found), else the same loop
in numpy (``_numpy_epoch``: the same steps to rounding, about 7x slower in process on the
benchmark's 100 x 100-best lists; ``MiraResult.epoch_loop`` says which ran). We chose not to
depend on numba for this one loop (a large dependency with its own LLVM, for 60 lines of C).
"""

from __future__ import annotations

import hashlib
import math
import warnings
from array import array
from collections.abc import Sequence
from dataclasses import dataclass, field
from functools import cache, cached_property
from itertools import chain, count
from pathlib import Path

import numpy as np

from mlmm.degenerate import nfc, not_empty
from mlmm.errors import InputError

try:
    from mlmm import _mira_epoch
except ImportError:  # built without a C compiler: the numpy loop runs (same steps)
    _mira_epoch = None

# The compiled loop's source, which its build must match (current_build)
MIRA_SOURCE = Path(__file__).with_name("_mira_epoch.c")
ORDER = 4
# Column layout of a statistics row: matches for n=1..4, totals for n=1..4, reference length.
MATCH = slice(0, ORDER)
TOTAL = slice(ORDER, 2 * ORDER)
REFLEN = 2 * ORDER
N_STATS = 2 * ORDER + 1


def sentence_stats(
    hypotheses: Sequence[Sequence[str]], references: Sequence[Sequence[str]]
) -> list[np.ndarray]:
    """BLEU statistics (k_i x 9) of every whitespace-tokenised hypothesis of every sentence
    against that sentence's references, all sentences at once: clipped n-gram matches (a
    hypothesis's count of an n-gram, capped by the most times any one reference of its sentence
    holds it), n-gram totals and the closest reference length (the shorter on ties), as
    sacrebleu and Moses count them.

    Every hypothesis and reference is laid end to end as token ids; an n-gram's id is the rank
    of the pair (its (n-1)-gram's id, its last token), so ids stay below the token count at any
    order, and counting is sorting integer keys (numpy) instead of a Counter per hypothesis."""
    if len(hypotheses) != len(references):
        raise ValueError(f"{len(hypotheses)} n-best lists, {len(references)} reference sets")
    per_hyp = np.array([len(h) for h in hypotheses], dtype=np.int64)
    per_ref = np.array([len(r) for r in references], dtype=np.int64)
    n_hyp = int(per_hyp.sum())
    # the sentence each sequence belongs to, hypotheses first, then references
    sentence = np.concatenate([np.repeat(np.arange(len(per_hyp)), per_hyp),
                               np.repeat(np.arange(len(per_ref)), per_ref)])  # fmt: skip
    # a token's id: where it first occurs (unique per token, below the token count); one
    # sequence split at a time, so that only the ids are held, not every token's string
    first: dict[str, int] = {}
    token_ids, sizes = array("q"), array("q")
    for text in chain(chain.from_iterable(hypotheses), chain.from_iterable(references)):
        tokens = text.split()
        sizes.append(len(tokens))
        token_ids.extend(map(first.setdefault, tokens, count(len(token_ids))))
    ids = np.frombuffer(token_ids, dtype=np.int64) if token_ids else np.zeros(0, np.int64)
    lengths = np.frombuffer(sizes, dtype=np.int64) if sizes else np.zeros(0, np.int64)
    owner = np.repeat(np.arange(len(lengths)), lengths)  # the sequence of each position
    # tokens from each position to its sequence's end
    left = np.repeat(np.cumsum(lengths), lengths) - np.arange(len(ids))
    stats = np.zeros((n_hyp, N_STATS))
    hyp_lengths = lengths[:n_hyp]
    gram = ids
    for n in range(1, ORDER + 1):
        if n > 1:  # the n-gram starting at each position: (its (n-1)-gram, its last token)
            gram = np.unique(gram[:-1] * (len(ids) + 1) + ids[n - 1 :], return_inverse=True)[1]
        valid = left[: len(gram)] >= n
        grams = int(gram.max(initial=-1)) + 1
        seq = owner[: len(gram)][valid]
        keys, counts = np.unique(seq * grams + gram[valid], return_counts=True)
        seq, which = np.divmod(keys, grams)
        ref = seq >= n_hyp
        # the most times one reference of the sentence holds each n-gram: the last count of
        # each key once sorted by key, then count
        ref_keys = sentence[seq[ref]] * grams + which[ref]
        order = np.lexsort((counts[ref], ref_keys))
        ref_keys, ref_counts = ref_keys[order], counts[ref][order]
        last = np.append(ref_keys[1:] != ref_keys[:-1], True)[: len(ref_keys)]
        ref_keys, most = ref_keys[last], ref_counts[last]
        hyp = ~ref
        hyp_keys = sentence[seq[hyp]] * grams + which[hyp]
        at = np.searchsorted(ref_keys, hyp_keys)
        held = at < len(ref_keys)
        held[held] = ref_keys[at[held]] == hyp_keys[held]
        clipped = np.zeros(len(hyp_keys))
        clipped[held] = np.minimum(counts[hyp][held], most[at[held]])
        stats[:, n - 1] = np.bincount(seq[hyp], weights=clipped, minlength=n_hyp)
        stats[:, ORDER + n - 1] = np.maximum(hyp_lengths - n + 1, 0)
    # the closest reference length, the shorter one on ties
    ref_lengths = np.split(lengths[n_hyp:], np.cumsum(per_ref)[:-1])
    for i, (start, rl) in enumerate(zip(np.cumsum(per_hyp) - per_hyp, ref_lengths, strict=True)):
        hl = hyp_lengths[start : start + per_hyp[i]]
        if len(rl) == 0:
            raise ValueError(f"sentence {i} has no reference")
        rl = np.sort(rl)
        stats[start : start + per_hyp[i], REFLEN] = rl[np.abs(hl[:, None] - rl[None, :]).argmin(1)]
    return np.split(stats, np.cumsum(per_hyp)[:-1])


def bleu_stats(hypothesis: str, references: Sequence[str]) -> np.ndarray:
    """Sufficient statistics of one whitespace-tokenised hypothesis against its references."""
    return sentence_stats([[hypothesis]], [list(references)])[0][0]


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

    def __post_init__(self) -> None:
        # the padded slots, masked out of every model-best search (each epoch's corpus BLEU)
        self.padding = np.arange(self.features.shape[1])[None, :] >= self.sizes[:, None]

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
        return cls(feats, stat, np.array([len(i) for i in kept], dtype=np.int64), kept)

    @cached_property
    def lists(self) -> list[tuple[np.ndarray, np.ndarray]]:
        """Per sentence, unpadded: contiguous features (k x d) and statistics as columns (9 x k),
        the layout the numpy epoch loop reads fastest."""
        return [(self.features[i, :k], np.ascontiguousarray(self.stats[i, :k].T))
                for i, k in enumerate(self.sizes)]  # fmt: skip

    def model_best(self, weights: np.ndarray) -> np.ndarray:
        """Index (into the de-duplicated lists) of the highest-scoring hypothesis per sentence."""
        scores = self.features @ weights
        scores[self.padding] = -np.inf
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
    epoch_loop: str = "compiled"  # or "numpy" (no C compiler at install time)


def _numpy_epoch(
    data: TuningSet, order: np.ndarray, w: np.ndarray, totals: np.ndarray,
    background: np.ndarray, c: float, decay: float,
) -> tuple[int, float]:
    """One MIRA epoch over the sentences in ``order``; updates ``w``, ``totals`` (the running
    sum of the weights after each update) and ``background`` in place; returns the number of
    updates and their summed loss. The compiled loop (mlmm/_mira_epoch.c) takes these steps."""
    updates, total_loss = 0, 0.0
    column = background[:, None]  # a view: updated with background
    for i in order:
        feats, stat = data.lists[i]
        score = feats @ w
        bleu = _background_bleu_columns(stat, column)
        hope = (score + bleu).argmax()
        fear = (score - bleu).argmax()
        if hope == fear or bleu[hope] <= bleu[fear]:
            continue
        diff = feats[hope] - feats[fear]
        loss = bleu[hope] - bleu[fear] - diff @ w
        if loss > 0:
            w += min(c, loss / (diff @ diff)) * diff
            totals += w
            updates += 1
            total_loss += loss
        background *= decay
        background += stat[:, hope]
    return updates, total_loss


@cache
def current_build(module, source: Path):
    """``module`` (the compiled loop) unless the source beside it differs from what it was
    built from: an editable install keeps an old build after a ``git pull`` until it is
    reinstalled, and its steps could then differ from ``_numpy_epoch``'s. A stale build is
    refused with a warning (the numpy loop runs); without the source (a wheel) the build is
    its own."""
    if module is None or not source.is_file():
        return module
    if getattr(module, "SOURCE_SHA256", None) == hashlib.sha256(source.read_bytes()).hexdigest():
        return module
    warnings.warn(
        f"{module.__name__} was built from an older {source.name}: running the numpy epoch "
        "loop (the same steps, slower); reinstall to rebuild it (make setup, or pip install "
        "-e .)",
        stacklevel=2,
    )
    return None


def _compiled_epoch(
    data: TuningSet, order: np.ndarray, w: np.ndarray, totals: np.ndarray,
    background: np.ndarray, c: float, decay: float,
) -> tuple[int, float]:
    """``_numpy_epoch`` in C (mlmm/_mira_epoch.c), on the padded arrays as they are."""
    return _mira_epoch.epoch(data.features, data.stats, data.sizes, order, w, totals,
                             background, c, decay)  # fmt: skip


# kbmira's start and order: every weight starts at 0 (no --dense-init file), the sentences are
# reshuffled every epoch (kbmira without --no-shuffle).
INITIAL_WEIGHT = 0.0
SHUFFLE = True


def mira(
    features: Sequence[np.ndarray],
    stats: Sequence[np.ndarray],
    iters: int = 60,
    c: float = 0.01,
    decay: float = 0.999,
    seed: int = 1,
    initial: np.ndarray | None = None,
    where: str | Path = "the n-best lists",
    shuffle: bool = SHUFFLE,
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
    if initial is None:
        w = np.full(d, INITIAL_WEIGHT)
    else:
        w = np.asarray(initial, dtype=np.float64).copy()
    totals, updates = w.copy(), 0
    rng = np.random.default_rng(seed)
    result = MiraResult(w.copy(), -math.inf, 0, data.corpus_bleu(w))
    compiled = current_build(_mira_epoch, MIRA_SOURCE) is not None
    run_epoch = _compiled_epoch if compiled else _numpy_epoch
    result.epoch_loop = "compiled" if compiled else "numpy"
    background = np.ones(N_STATS)
    in_order = np.arange(len(data.sizes), dtype=np.int64)
    for epoch in range(1, iters + 1):
        order = rng.permutation(in_order) if shuffle else in_order
        n_updates, total_loss = run_epoch(data, order, w, totals, background, c, decay)
        updates += n_updates
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
    return sentence_stats([nfc(hyps) for hyps in texts], [nfc(r) for r in refs])
