"""Retrieval and similarity metrics with the VSE++ conventions: matrices in, numbers out, no I/O.

Layout: row ``i`` of the image matrix is image ``i``; rows ``k*i .. k*i+k-1`` of the caption
matrix are its ``k`` captions. A score matrix is ``(n_images, n_images * k)``.

Ranks are 0-based positions in a list sorted by descending score. Image-to-text: the rank of an
image is the best (lowest) rank of its ``k`` captions among all captions. Text-to-image: the
rank of the caption's image among all images. ``R@K = 100 * mean(rank < K)``,
``medr = floor(median(rank)) + 1``, ``meanr = mean(rank) + 1`` (VSE++ ``i2t``/``t2i``).

Ties. VSE++ sorts with ``numpy.argsort(d)[::-1]``; numpy's default sort is not stable (on
AVX-512/AVX2 machines numpy >= 1.25 uses SIMD sorting networks even for short arrays), so the
order it gives tied scores depends on the numpy version and the CPU, and any fixed order (by
list position) lets ties decide the numbers: identical image rows score as if the first or the
last were right. We rank ties *pessimistically*: a query's rank is the number of other
candidates scoring *at least* as high as its own (best own) candidate, so a tie never counts in
a model's favour and the rank does not depend on where a candidate sits in the list. On scores
without exact ties this is VSE++'s rank. ``tests/test_evaluation.py`` checks it against a
per-query reference loop on tie-heavy integer data.

Collapse. A model whose embeddings collapsed (more than ``COLLAPSE_SHARE`` of the rows of one
side at one point, within ``COLLAPSE_TOLERANCE`` of its norm) has no ranking to report:
``fold_ranks``, ``retrieval_metrics`` and ``c2c_ranks`` refuse it with ``CollapsedEmbeddings``
naming the side, rather than print recalls that only the tie rule made. Validation (model
selection) scores such a point with the pessimistic rule instead, so it is never selected.

Everything is computed from one pass of score-matrix blocks over caption columns (bounded
memory): no sort, only counts of "scores at least the positive's score" per query.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Literal

import numpy as np
import torch

from mlmm.errors import InputError
from mlmm.io import read_lines
from mlmm.rank_metrics import metrics_of_folds, pearson_of, summarise_ranks

Similarity = Literal["cosine", "order"]
# Score-block budget (elements) when no chunk size is given: 2**24 float32 = 64 MiB.
BLOCK_ELEMENTS = 1 << 24
# Element budget of the (rows, cols, dim) broadcast of the order-embedding score.
ORDER_ELEMENTS = 1 << 24
# Collapse: more than this share of one side's rows within COLLAPSE_TOLERANCE (relative to the
# rows' norm) of the side's elementwise median row.
COLLAPSE_SHARE = 0.5
COLLAPSE_TOLERANCE = 1e-4


class CollapsedEmbeddings(InputError):
    """A model's embeddings collapsed: most rows of one side at one point, so no ranking."""


def check_not_collapsed(x: np.ndarray | torch.Tensor, what: str) -> None:
    """``CollapsedEmbeddings`` naming ``what`` when more than ``COLLAPSE_SHARE`` of the rows
    of ``x`` lie within ``COLLAPSE_TOLERANCE`` (relative) of its elementwise median row."""
    x = torch.as_tensor(x).detach().cpu().double()
    if x.ndim != 2 or x.shape[0] < 2:
        return
    centre = x.median(dim=0).values
    scale = max(float(x.norm(dim=1).mean()), float(torch.finfo(torch.float32).tiny))
    close = int(((x - centre).norm(dim=1) <= COLLAPSE_TOLERANCE * scale).sum())
    if close > COLLAPSE_SHARE * x.shape[0]:
        raise CollapsedEmbeddings(
            what,
            f"embeddings that tell rows apart (at most {COLLAPSE_SHARE:.0%} of rows at one point)",
            f"{close} of {x.shape[0]} rows at one point: the model's embeddings collapsed; "
            "not scored",
        )


# ----------------------------------------------------------------------------------------
# similarities


def _as_tensor(x: np.ndarray | torch.Tensor, what: str = "embeddings") -> torch.Tensor:
    """A float32 (or float64) CPU matrix; counting runs on the CPU wherever embeddings live.

    Non-finite values are refused: a NaN compares false with everything, so a NaN row would
    count no competitor above its positive and rank first (R@1 = 100 from garbage).
    """
    t = torch.as_tensor(x).detach().cpu()
    if t.ndim != 2:
        raise ValueError(f"expected a 2-d matrix, found shape {tuple(t.shape)}")
    t = t if t.dtype == torch.float64 else t.float()
    check_finite(t, what)
    return t


def check_finite(matrix: np.ndarray | torch.Tensor, what: str) -> None:
    """InputError naming how many rows of ``matrix`` hold NaN or inf, and the first of them."""
    bad = ~torch.isfinite(torch.as_tensor(matrix)).all(dim=1)
    if bool(bad.any()):
        rows = torch.nonzero(bad).flatten()
        raise InputError(
            what,
            "finite values in every row",
            f"NaN or inf in {len(rows)} of {len(bad)} rows (first: row {int(rows[0])})",
        )


def l2_normalise(x: torch.Tensor) -> torch.Tensor:
    return torch.nn.functional.normalize(x, dim=1)


def order_scores(images: torch.Tensor, captions: torch.Tensor) -> torch.Tensor:
    """Order-embedding score (Vendrov et al. 2016), ``S[i, c] = -||max(0, c - i)||^2``.

    A caption is an abstraction of its image, so it should lie below the image in every
    coordinate; the score penalises coordinates where the caption exceeds the image (the
    direction of VSE++ ``order_sim``, ``max(0, s - im)``). VSE++ takes the square root of the
    sum; the square root is monotone, so rankings agree up to rounding.
    Computed in blocks so that the (rows, cols, dim) broadcast stays bounded.
    """
    n, m, d = images.shape[0], captions.shape[0], images.shape[1]
    out = torch.empty(n, m, dtype=images.dtype)
    step = max(1, ORDER_ELEMENTS // max(1, m * d))
    cols = m if step > 1 else max(1, ORDER_ELEMENTS // d)
    for a in range(0, n, step):
        for b in range(0, m, cols):
            diff = captions[None, b : b + cols, :] - images[a : a + step, None, :]
            out[a : a + step, b : b + cols] = -diff.clamp_(min=0).pow_(2).sum(-1)
    return out


def pair_scores(images: torch.Tensor, captions: torch.Tensor, similarity: Similarity):
    """Score of every (image row, caption row) pair of already prepared embeddings."""
    if similarity == "cosine":
        return images @ captions.T
    if similarity == "order":
        return order_scores(images, captions)
    raise ValueError(f"similarity must be 'cosine' or 'order', found {similarity!r}")


def transposed_scores(images: torch.Tensor, captions: torch.Tensor, similarity: Similarity):
    """``pair_scores(images, captions).T``, contiguous. Blocks are made in this layout because
    ``captions_block @ images.T`` runs at the speed of one whole-matrix product, while
    ``images @ captions_block.T`` is about 40% slower (measured with torch's CPU BLAS)."""
    if similarity == "cosine":
        return captions @ images.T
    return pair_scores(images, captions, similarity).T.contiguous()


def own_scores(
    images: torch.Tensor, captions: torch.Tensor, per_image: int, similarity: Similarity
):
    """Score of every caption with its own image (row c // k), without the full matrix."""
    owners = images.repeat_interleave(per_image, dim=0)
    if similarity == "cosine":
        return (owners * captions).sum(1)
    return -(captions - owners).clamp(min=0).pow(2).sum(1)


def _prepare(x, similarity: Similarity, what: str = "embeddings") -> torch.Tensor:
    """Cosine needs unit rows; order embeddings are used as given (the model's own output)."""
    x = _as_tensor(x, what)
    return l2_normalise(x) if similarity == "cosine" else x


# ----------------------------------------------------------------------------------------
# rank counting


class _Counter:
    """Counts of entries above a threshold, per row or per column of a score block.

    The comparison is written as 0/1 float32 into a reused buffer and reduced by a BLAS
    matrix-vector product: about three times faster than summing a bool tensor, and exact
    (integers below 2**24).
    """

    def __init__(self) -> None:
        self.buf = torch.empty(0)

    def _mask(self, block: torch.Tensor, threshold: torch.Tensor) -> torch.Tensor:
        if self.buf.numel() < block.numel():
            self.buf = torch.empty(block.numel())
        return torch.gt(block, threshold, out=self.buf[: block.numel()].view(block.shape))

    def per_row(self, block: torch.Tensor, threshold: torch.Tensor) -> torch.Tensor:
        mask = self._mask(block, threshold[:, None])
        return (mask @ torch.ones(block.shape[1])).to(torch.int64)

    def per_column(self, block: torch.Tensor, threshold: torch.Tensor) -> torch.Tensor:
        mask = self._mask(block, threshold[None, :])
        return (torch.ones(block.shape[0]) @ mask).to(torch.int64)


def _below(t: torch.Tensor) -> torch.Tensor:
    """The next representable value below: ``s >= t`` is ``s > _below(t)`` for finite floats."""
    return torch.nextafter(t, torch.full_like(t, -torch.inf))


def _refuse_collapse(similarity: Similarity, **sides: torch.Tensor) -> None:
    """``check_not_collapsed`` for each named side (as cosine sees it: unit rows)."""
    for what, x in sides.items():
        check_not_collapsed(l2_normalise(x) if similarity == "cosine" else x, what)


class _RowRanks:
    """Best rank of each query row among its own targets, accumulated over target blocks.

    Row ``i`` (a query) owns the ``kt`` target columns ``g[i]*kt .. g[i]*kt+kt-1``; ``g`` is
    non-decreasing. With ``m`` the best own score, the rank counts the targets *not* its own
    that score ``>= m`` (ties against the query: the module's rule). Rows owning columns in a
    block have their own columns taken out of the block's counts.
    """

    def __init__(
        self, per_row: torch.Tensor, groups: torch.Tensor, kt: int, counter: _Counter
    ) -> None:
        self.best = per_row.max(1).values
        self.best_below = _below(self.best)
        self.groups, self.kt, self.counter = groups, kt, counter
        self.counts = torch.zeros(len(groups), dtype=torch.int64)

    def add(self, a: int, tblock: torch.Tensor) -> None:
        """``tblock``: the scores of target columns ``a ..`` with every row, transposed."""
        width, count = tblock.shape[0], self.counter.per_column
        r0 = int(torch.searchsorted(self.groups, a // self.kt, right=False))
        r1 = int(torch.searchsorted(self.groups, (a + width - 1) // self.kt, right=True))
        for rows in (slice(0, r0), slice(r1, len(self.groups))):
            if rows.stop > rows.start:
                self.counts[rows] += count(tblock[:, rows], self.best_below[rows])
        if r1 == r0:
            return
        mid, best, rows = tblock[:, r0:r1], self.best[r0:r1], torch.arange(r0, r1)
        first = self.groups[r0:r1] * self.kt - a  # own columns, local to the block
        own_cols = first[:, None] + torch.arange(self.kt)[None, :]
        inside = (own_cols >= 0) & (own_cols < width)
        own = tblock[own_cols.clamp(0, width - 1), rows[:, None]]
        at_least = count(mid, self.best_below[r0:r1])  # own columns reaching m taken out:
        self.counts[r0:r1] += at_least - ((own >= best[:, None]) & inside).sum(1)


class _ColumnRanks:
    """Rank of each query column's own row (row ``c // k``) among all rows, one block at a time:
    the number of other rows scoring ``>= p`` with ``p`` the own score read from the block
    (ties against the query: the module's rule).
    """

    def __init__(self, n_queries: int, per_image: int, counter: _Counter) -> None:
        self.k, self.counter = per_image, counter
        self.ranks = torch.zeros(n_queries, dtype=torch.int64)

    def add(self, a: int, tblock: torch.Tensor) -> None:
        """``tblock``: the scores of query columns ``a ..`` with every row, transposed."""
        width, count = tblock.shape[0], self.counter.per_row
        owner = torch.arange(a, a + width) // self.k
        own = tblock[torch.arange(width), owner]
        self.ranks[a : a + width] += count(tblock, _below(own)) - 1  # the own row scores p


def _blocks(
    n_cols: int, chunk: int, score: Callable[[int, int], torch.Tensor]
) -> Iterator[tuple[int, torch.Tensor]]:
    for a in range(0, n_cols, chunk):
        yield a, score(a, min(n_cols, a + chunk))


def _chunk_size(rows: int, chunk: int | None) -> int:
    if chunk is not None:
        if chunk < 1:
            raise ValueError(f"chunk must be positive, found {chunk}")
        return chunk
    return max(1, BLOCK_ELEMENTS // max(1, rows))


def _check_layout(n_images: int, n_captions: int, per_image: int) -> None:
    if per_image < 1:
        raise ValueError(f"per_image must be positive, found {per_image}")
    if n_images == 0 or n_captions != n_images * per_image:
        raise ValueError(
            f"expected {per_image} captions per image ({n_images * per_image} for {n_images} "
            f"images), found {n_captions} captions"
        )


def _both_directions(
    n_images: int,
    per_image: int,
    own: torch.Tensor,
    blocks: Iterator[tuple[int, torch.Tensor]],
    want: tuple[str, ...] = ("i2t", "t2i"),
) -> dict[str, torch.Tensor]:
    counter = _Counter()
    if "i2t" in want:
        groups = torch.arange(n_images)
        rows = _RowRanks(own.view(n_images, per_image), groups, per_image, counter)
    else:
        rows = None
    cols = _ColumnRanks(len(own), per_image, counter) if "t2i" in want else None
    for a, block in blocks:
        if rows is not None:
            rows.add(a, block)
        if cols is not None:
            cols.add(a, block)
    out = {}
    if rows is not None:
        out["i2t"] = rows.counts
    if cols is not None:
        out["t2i"] = cols.ranks
    return out


def _score_matrix_ranks(scores, per_image: int, want: tuple[str, ...], chunk: int | None):
    scores = _as_tensor(scores, "score matrix")
    n, m = scores.shape
    _check_layout(n, m, per_image)
    own = scores[torch.arange(m) // per_image, torch.arange(m)]
    blocks = _blocks(m, _chunk_size(n, chunk), lambda a, b: scores[:, a:b].T)
    return _both_directions(n, per_image, own, blocks, want)


def i2t(
    scores, per_image: int, chunk: int | None = None, ks: tuple[int, ...] = (1, 5, 10)
) -> dict[str, float]:
    """Image-to-text metrics of a precomputed ``(n_images, n_images * k)`` score matrix."""
    ranks = _score_matrix_ranks(scores, per_image, ("i2t",), chunk)["i2t"]
    return summarise_ranks(ranks, ks)


def t2i(
    scores, per_image: int, chunk: int | None = None, ks: tuple[int, ...] = (1, 5, 10)
) -> dict[str, float]:
    """Text-to-image metrics of a precomputed ``(n_images, n_images * k)`` score matrix."""
    ranks = _score_matrix_ranks(scores, per_image, ("t2i",), chunk)["t2i"]
    return summarise_ranks(ranks, ks)


def retrieval_ranks(
    images,
    captions,
    per_image: int,
    similarity: Similarity = "cosine",
    chunk: int | None = None,
) -> dict[str, torch.Tensor]:
    """0-based i2t ranks (one per image) and t2i ranks (one per caption) from embeddings."""
    images = _prepare(images, similarity, "image embeddings")
    captions = _prepare(captions, similarity, "caption embeddings")
    if images.shape[1] != captions.shape[1]:
        raise ValueError(f"embedding sizes differ: {images.shape[1]} vs {captions.shape[1]}")
    n = images.shape[0]
    _check_layout(n, captions.shape[0], per_image)
    with torch.inference_mode():
        own = own_scores(images, captions, per_image, similarity)
        score = lambda a, b: transposed_scores(images, captions[a:b], similarity)  # noqa: E731
        blocks = _blocks(captions.shape[0], _chunk_size(n, chunk), score)
        return _both_directions(n, per_image, own, blocks)


def retrieval_metrics(
    image_emb,
    caption_emb,
    per_image: int,
    similarity: Similarity = "cosine",
    folds: int = 1,
    chunk: int | None = None,
    refuse_collapsed: bool = True,
) -> dict[str, dict[str, float]]:
    """``{"i2t": {...}, "t2i": {...}}`` from embeddings; ``folds=5`` is the COCO 1K protocol.

    With folds, images are cut into ``folds`` consecutive equal parts (with their captions),
    each part is evaluated on its own, and every metric is the mean over the parts (VSE++
    ``evalrank(fold5=True)``). Collapsed embeddings are refused (``CollapsedEmbeddings``)
    unless ``refuse_collapsed`` is false (validation: ranked by the tie rule).
    """
    ranks = fold_ranks(
        image_emb, caption_emb, per_image, similarity, folds, chunk, refuse_collapsed
    )
    return {d: metrics_of_folds(r, folds) for d, r in ranks.items()}


def fold_ranks(
    image_emb,
    caption_emb,
    per_image: int,
    similarity: Similarity = "cosine",
    folds: int = 1,
    chunk: int | None = None,
    refuse_collapsed: bool = True,
) -> dict[str, np.ndarray]:
    """0-based ranks of every test query, fold after fold (each fold ranked on its own):
    ``{"i2t": one per image, "t2i": one per caption}``, the per-query outcomes that
    ``retrieval_metrics`` summarises (``metrics_of_folds``) and the bootstrap resamples."""
    image_emb = _as_tensor(image_emb, "image embeddings")
    caption_emb = _as_tensor(caption_emb, "caption embeddings")
    n = image_emb.shape[0]
    if folds < 1 or n % folds:
        raise ValueError(f"{n} images cannot be cut into {folds} equal folds")
    _check_layout(n, caption_emb.shape[0], per_image)
    if similarity not in ("cosine", "order"):
        raise ValueError(f"similarity must be 'cosine' or 'order', found {similarity!r}")
    if refuse_collapsed:
        _refuse_collapse(
            similarity, **{"image embeddings": image_emb, "caption embeddings": caption_emb}
        )
    size = n // folds
    parts: dict[str, list[np.ndarray]] = {"i2t": [], "t2i": []}
    for f in range(folds):
        ims = image_emb[f * size : (f + 1) * size]
        caps = caption_emb[f * size * per_image : (f + 1) * size * per_image]
        for d, r in retrieval_ranks(ims, caps, per_image, similarity, chunk).items():
            parts[d].append(r.numpy())
    return {d: np.concatenate(p).astype(np.int64) for d, p in parts.items()}


def c2c_metrics(
    query_emb,
    target_emb,
    per_image: int = 1,
    similarity: Similarity = "cosine",
    chunk: int | None = None,
) -> dict[str, float]:
    """Caption-to-caption retrieval across languages (AME Table 5).

    Query caption ``q`` (image ``q // k``, one language) is ranked against every caption of
    the other language; its rank is the best rank among the ``k`` target captions of the same
    image (the i2t rule, with a caption as the query). With ``k = 1`` (translations) this is
    plain one-to-one retrieval. Order similarity treats targets as the lower (caption) side.
    """
    return summarise_ranks(c2c_ranks(query_emb, target_emb, per_image, similarity, chunk))


def c2c_ranks(
    query_emb,
    target_emb,
    per_image: int = 1,
    similarity: Similarity = "cosine",
    chunk: int | None = None,
    refuse_collapsed: bool = True,
) -> np.ndarray:
    """0-based rank of every query caption of ``c2c_metrics`` (its per-query outcomes);
    collapsed embeddings refused as in ``fold_ranks``."""
    queries = _prepare(query_emb, similarity, "query embeddings")
    targets = _prepare(target_emb, similarity, "target embeddings")
    if refuse_collapsed:
        _refuse_collapse(similarity, **{"query embeddings": queries, "target embeddings": targets})
    if queries.shape != targets.shape:
        raise ValueError(f"query and target shapes differ: {queries.shape} vs {targets.shape}")
    nq = queries.shape[0]
    if per_image < 1 or nq % per_image:
        raise ValueError(f"{nq} captions are not {per_image} per image")
    groups = torch.arange(nq) // per_image
    with torch.inference_mode():
        # own[q, t]: query q against target caption t of its image
        grouped = targets.view(nq // per_image, per_image, -1)[groups]
        if similarity == "cosine":
            own = torch.einsum("qd,qkd->qk", queries, grouped)
        else:
            own = -(grouped - queries[:, None, :]).clamp(min=0).pow(2).sum(-1)
        rows = _RowRanks(own, groups, per_image, _Counter())
        score = lambda a, b: transposed_scores(queries, targets[a:b], similarity)  # noqa: E731
        for a, block in _blocks(nq, _chunk_size(nq, chunk), score):
            rows.add(a, block)
    return rows.counts.numpy().astype(np.int64)


# ----------------------------------------------------------------------------------------
# semantic textual similarity


def sts_pearson(emb_a, emb_b, gold, where: str | Path = "STS gold scores") -> float:
    """Pearson r of ``5 * cosine(a, b)`` against the gold scores; NaN gold pairs are skipped;
    constant gold scores or similarities (r undefined) are refused naming ``where``.

    Calixto & Liu (2017, Table 2) scale the cosine by 5 onto the gold 0-5 range; Pearson is
    scale-invariant, the factor only keeps the predictions on the gold scale.
    """
    return pearson_of(sts_predicted(emb_a, emb_b, len(gold)), gold, where)


def sts_predicted(emb_a, emb_b, n_gold: int) -> np.ndarray:
    """``5 * cosine(a, b)`` of every STS pair (float64): the per-pair outcomes of STS."""
    a = l2_normalise(_as_tensor(emb_a, "STS embeddings (first)").double())
    b = l2_normalise(_as_tensor(emb_b, "STS embeddings (second)").double())
    if a.shape != b.shape or a.shape[0] != n_gold:
        raise ValueError(f"shapes differ: {tuple(a.shape)}, {tuple(b.shape)}, gold ({n_gold},)")
    return 5.0 * (a * b).sum(1).numpy()


def read_sts(input_path, gold_path) -> tuple[list[str], list[str], np.ndarray]:
    """SemEval STS files: ``STS.input.*.txt`` (s1 TAB s2) and ``STS.gs.*.txt`` (0-5 or empty).

    Returns both sentence lists and the gold scores, NaN where the gold line is empty (pairs
    the organisers did not score).
    """
    pairs = read_lines(input_path)
    gold_lines = read_lines(gold_path, allow_empty_lines=True)
    if len(gold_lines) != len(pairs):
        raise InputError(
            gold_path, f"{len(pairs)} lines (one per pair in {input_path})", f"{len(gold_lines)}"
        )
    first, second = [], []
    for number, line in enumerate(pairs, start=1):
        fields = line.split("\t")
        if len(fields) != 2 or not all(f.strip() for f in fields):
            raise InputError(
                input_path,
                "two non-empty sentences separated by one TAB",
                f"{len(fields)} field(s)",
                line=number,
            )
        first.append(fields[0])
        second.append(fields[1])
    gold = np.full(len(pairs), np.nan)
    for number, line in enumerate(gold_lines, start=1):
        if not line.strip():
            continue
        try:
            value = float(line)
        except ValueError:
            value = np.nan
        if not 0.0 <= value <= 5.0:
            raise InputError(
                gold_path, "a score in [0, 5] or an empty line", repr(line), line=number
            )
        gold[number - 1] = value
    return first, second, gold
