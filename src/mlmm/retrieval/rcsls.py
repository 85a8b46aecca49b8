"""Cross-lingual word-vector alignment for FME / AME: Procrustes, fastText's RCSLS (its loss,
objective and full-batch solver), one language's vectors rotated onto English on a lexicon's
training pairs, and the alignment ratio (word-translation precision@1 on held-out MUSE pairs).

The files these read and write (fastText .vec, MUSE dictionaries) are
mlmm.retrieval.word_vector_files'; the demo worlds' vectors are mlmm.demo.word_vectors'.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import torch

from mlmm.errors import InputError

Lexicon = list[tuple[str, str]]


def split_lexicon(pairs: Lexicon, train_fraction: float, seed: int = 0) -> tuple[Lexicon, Lexicon]:
    """Train / held-out pairs, split by source word (all translations of a word stay together)."""
    sources = list(dict.fromkeys(s for s, _ in pairs))
    order = np.random.default_rng(seed).permutation(len(sources))
    train_words = {sources[i] for i in order[: int(round(train_fraction * len(sources)))]}
    train = [p for p in pairs if p[0] in train_words]
    return train, [p for p in pairs if p[0] not in train_words]


def procrustes(x: torch.Tensor, y: torch.Tensor) -> torch.Tensor:
    """Orthogonal W minimising ||x W^T - y||: rows of x map onto rows of y."""
    u, _, vt = torch.linalg.svd(y.t().double() @ x.double())
    return (u @ vt).to(x.dtype)


def unit(x: torch.Tensor) -> torch.Tensor:
    return x / x.norm(dim=-1, keepdim=True).clamp_min(1e-12)


def precision_at_1(
    src: torch.Tensor,
    tgt: torch.Tensor,
    gold: dict[int, set[int]],
    mapping: torch.Tensor | None,
    known_src: set[int] | None = None,
    known_tgt: set[int] | None = None,
) -> float:
    """Percentage of held-out source words whose nearest target word (cosine) is a translation.

    ``gold`` maps a source row to its target rows (the pairs whose both words are in the
    vocabularies); ``mapping`` (W) maps source onto target. ``known_src`` / ``known_tgt``: the
    rows of words that have a pre-trained vector, as AME-CMR measures it (model.py at 2463a85,
    ``METRIC_SIMIL`` with ``load_lexicon`` and ``compute_nn_accuracy``): only pairs whose both
    words are known are asked, only known target words are searched, and the count of right
    answers is divided by every source word of ``gold`` (``load_lexicon``'s ``len(vocab)``, on
    the lexicon ``adjust_lexicons.py`` filtered to the data set's words), so a source word
    without a vector counts as a miss. Without them every row is asked and searched.
    """
    if not gold:
        return float("nan")
    searched = list(range(len(tgt))) if known_tgt is None else sorted(known_tgt)
    allowed = set(searched)
    asked = {
        r: targets & allowed
        for r, targets in gold.items()
        if known_src is None or r in known_src
    }
    rows = sorted(r for r, targets in asked.items() if targets)
    if not rows or not searched:
        return 0.0
    query = src[rows] if mapping is None else src[rows] @ mapping.t()
    best = (unit(query) @ unit(tgt[searched]).t()).argmax(dim=1).tolist()
    right = sum(searched[b] in asked[r] for r, b in zip(rows, best, strict=True))
    return 100.0 * right / len(gold)


def rcsls_loss(
    src: torch.Tensor,
    tgt: torch.Tensor,
    pairs: torch.Tensor,
    mapping: torch.Tensor,
    knn: int,
    normalise: bool = True,
) -> torch.Tensor:
    """Joulin et al. (2018) relaxed CSLS over training pairs (rows of ``pairs`` = src, tgt ids).

    -2 cos(Wx_i, y_i) + mean of cos to the k nearest targets of Wx_i + mean of cos of y_i to
    its k nearest mapped sources, averaged over the pairs. ``normalise`` False: dot products of
    the raw rows instead of cosines (AME-CMR ``ContrastiveLoss.rcsls`` on the fine-tuned table).
    """
    scale = unit if normalise else (lambda x: x)
    mapped = scale(src @ mapping.t())
    targets = scale(tgt)
    wx, y = mapped[pairs[:, 0]], targets[pairs[:, 1]]
    k_t, k_s = min(knn, targets.shape[0]), min(knn, mapped.shape[0])
    near_t = (wx @ targets.t()).topk(k_t, dim=1).values.mean(1)
    near_s = (y @ mapped.t()).topk(k_s, dim=1).values.mean(1)
    return (-2.0 * (wx * y).sum(1) + near_t + near_s).mean()


def rcsls_objective(
    x: torch.Tensor,
    y: torch.Tensor,
    z_src: torch.Tensor,
    z_tgt: torch.Tensor,
    mapping: torch.Tensor,
    knn: int,
    chunk: int = 1024,
) -> tuple[float, torch.Tensor]:
    """fastText ``alignment/align.py`` ``rcsls``: the loss and its gradient df in R for the
    training pairs (rows of x, y) against the negatives z_src, z_tgt, k nearest neighbours
    taken in chunks of ``chunk`` pairs so that 200,000 negatives fit in memory."""
    n = x.shape[0]
    mapped = x @ mapping.t()
    f = 2.0 * float((mapped * y).sum())
    df = 2.0 * y.t() @ x
    for start in range(0, n, chunk):
        rows = slice(start, start + chunk)
        values, index = (mapped[rows] @ z_tgt.t()).topk(knn, dim=1)
        f -= float(values.sum()) / knn
        df -= z_tgt[index].sum(1).t() @ x[rows] / knn
    z_mapped = z_src @ mapping.t()
    for start in range(0, n, chunk):
        rows = slice(start, start + chunk)
        values, index = (y[rows] @ z_mapped.t()).topk(knn, dim=1)
        f -= float(values.sum()) / knn
        df -= y[rows].t() @ z_src[index].sum(1) / knn
    return -f / n, -df / n


def rcsls_align(
    x: torch.Tensor,
    y: torch.Tensor,
    z_src: torch.Tensor,
    z_tgt: torch.Tensor,
    knn: int,
    lr: float,
    iterations: int,
) -> tuple[torch.Tensor, list[dict]]:
    """RCSLS as fastText's ``alignment/align.py`` runs it (full batch, no constraint): W from
    Procrustes, then ``iterations + 1`` steps W -= lr df; a loss above the previous one halves
    lr (align.py's revert ``R = Rold`` names the array it has just updated in place, so the step
    stays); stop when lr < 1e-4. Rows are expected l2-normalised (align.py load_vectors)."""
    mapping = procrustes(x, y).to(x.dtype)
    previous, history = None, []
    for it in range(iterations + 1):
        if lr < 1e-4:
            break
        f, df = rcsls_objective(x, y, z_src, z_tgt, mapping, knn)
        history.append({"iteration": it, "loss": f, "lr": lr})
        mapping = mapping - lr * df
        if previous is not None and f > previous:
            lr /= 2
        else:
            previous = f
    return mapping, history


def lexicon_indices(
    pairs: Lexicon, src_index: dict[str, int], tgt_index: dict[str, int],
    where: str | Path | None = None,
):  # fmt: skip
    """(src row, tgt row) of the pairs whose both words are known, and the gold sets. With
    ``where`` (the lexicon's file), a lexicon that matches the vocabularies far better read
    the other way round (a de-en file under an en-de name) is refused, not trained on."""
    kept = [(src_index[s], tgt_index[t]) for s, t in pairs if s in src_index and t in tgt_index]
    if where is not None:
        swapped = sum(1 for s, t in pairs if t in src_index and s in tgt_index)
        if swapped > max(2 * len(kept), 10):
            raise InputError(
                where, "source-language words first, as its name says",
                f"{len(kept)} pair(s) known in that direction and {swapped} read the other way: "
                "a reversed lexicon",
            )  # fmt: skip
    gold: dict[int, set[int]] = {}
    for s, t in kept:
        gold.setdefault(s, set()).add(t)
    return kept, gold


def rotate_onto_english(
    vectors: dict[str, np.ndarray],
    english: dict[str, np.ndarray],
    lexicon: Lexicon,
    train_fraction: float,
    where: str,
    rotation: dict | None = None,
) -> dict[str, np.ndarray]:
    """``vectors`` mapped onto ``english`` on the training en-<lang> pairs: Procrustes (the demo
    worlds' vectors; fastText made its published aligned vectors with RCSLS, its
    aligned-vectors page); or with ``rotation.method: rcsls`` fastText's RCSLS
    (``alignment/align.py``) on l2-normalised rows, every loaded word a negative, the mapped
    rows l2-normalised (AME Section 4.1: Japanese "aligned ... with the same hyper-parameters
    used for MS-COCO"). ``rotation.sections`` null: the pairs of ``train_fraction`` of the
    lexicon; otherwise ``lexicon`` already holds the training sections."""
    rotation = rotation or {"method": "procrustes", "sections": None}
    kept = training_rows(vectors, english, lexicon, train_fraction, where, rotation)
    en_words, tgt_words = list(english), list(vectors)
    if rotation["method"] == "procrustes":
        x = torch.from_numpy(np.stack([vectors[tgt_words[t]] for _, t in kept]))
        y = torch.from_numpy(np.stack([english[en_words[s]] for s, _ in kept]))
        w = procrustes(x, y).numpy()
        return {word: v @ w.T for word, v in vectors.items()}
    z_src = unit(torch.from_numpy(np.stack(list(vectors.values()))).float())
    w = rcsls_matrix(z_src, english, kept, rotation)
    mapped = unit(z_src @ w.t()).numpy()
    return {word: mapped[i] for i, word in enumerate(vectors)}


def training_rows(
    vectors: dict[str, np.ndarray],
    english: dict[str, np.ndarray],
    lexicon: Lexicon,
    train_fraction: float,
    where: str,
    rotation: dict,
) -> list[tuple[int, int]]:
    """(English row, source row) of the training pairs: the lexicon's training sections, or
    ``train_fraction`` of it; at least two with both words known."""
    train = lexicon if rotation.get("sections") else split_lexicon(lexicon, train_fraction)[0]
    kept, _ = lexicon_indices(
        train, {w: i for i, w in enumerate(english)}, {w: i for i, w in enumerate(vectors)}, where
    )
    if len(kept) < 2:
        raise InputError(where, "at least 2 training pairs with both words known", str(len(kept)))
    return kept


def rcsls_matrix(
    z_src: torch.Tensor, english: dict[str, np.ndarray], kept: list, rotation: dict
) -> torch.Tensor:
    """W of fastText align.py on the l2-normalised loaded rows and the training pairs ``kept``
    ((English row, source row) indices)."""
    z_tgt = unit(torch.from_numpy(np.stack(list(english.values()))).float())
    src_rows = torch.tensor([t for _, t in kept])
    tgt_rows = torch.tensor([s for s, _ in kept])
    w, _ = rcsls_align(
        z_src[src_rows],
        z_tgt[tgt_rows],
        z_src,
        z_tgt,
        min(rotation["knn"], len(z_src), len(z_tgt)),
        rotation["lr"],
        rotation["iterations"],
    )
    return w
