"""The demo worlds' aligned word vectors, derived the way aligned vectors are made: each
language's own vectors (PPMI + SVD of sentence co-occurrence in its training captions), then the
non-English ones rotated onto English by Procrustes on the MUSE training pairs
(mlmm.retrieval.rcsls). The demo worlds have no fastText vectors; these stand in for them.
"""

from __future__ import annotations

import itertools
from collections import Counter
from pathlib import Path

import numpy as np

from mlmm.data.multi30k import TRANSLATION_LANGUAGES as TASK1_LANGUAGES
from mlmm.errors import InputError
from mlmm.retrieval.rcsls import Lexicon, rotate_onto_english
from mlmm.retrieval.word_vector_files import derive_onto_english, read_lexicon, write_vec


def ppmi_svd(sentences: list[list[str]], dim: int) -> dict[str, np.ndarray]:
    """Word vectors from sentence-level co-occurrence: positive PMI, truncated SVD, U sqrt(S)."""
    counts = Counter(w for s in sentences for w in s)
    words = sorted(counts)
    if len(words) <= dim:
        raise InputError("training captions", f"more than {dim} word types", str(len(words)))
    index = {w: i for i, w in enumerate(words)}
    co = np.zeros((len(words), len(words)), dtype=np.float64)
    for s in sentences:
        ids = sorted({index[w] for w in s})
        for a, b in itertools.permutations(ids, 2):
            co[a, b] += 1.0
    total = co.sum()
    row, col = co.sum(1, keepdims=True), co.sum(0, keepdims=True)
    with np.errstate(divide="ignore", invalid="ignore"):
        pmi = np.log(co * total / (row * col))
    ppmi = np.where(np.isfinite(pmi) & (pmi > 0), pmi, 0.0)
    u, s, _ = np.linalg.svd(ppmi, full_matrices=False)
    vecs = (u[:, :dim] * np.sqrt(s[:dim])).astype(np.float32)
    signs = np.sign(vecs[np.abs(vecs).argmax(0), np.arange(dim)])  # deterministic sign per axis
    return {w: vecs[i] * signs for w, i in index.items()}


def demo_vectors(
    sentences: dict[str, list[list[str]]],
    lexicons: dict[str, Lexicon],
    dim: int,
    train_fraction: float,
) -> dict[str, dict[str, np.ndarray]]:
    """English vectors as they are; every other language rotated onto English."""
    out = {lang: ppmi_svd(sents, dim) for lang, sents in sentences.items()}
    for lang in out:
        if lang != "en":
            out[lang] = rotate_onto_english(
                out[lang], out["en"], lexicons[lang], train_fraction, f"en-{lang} lexicon"
            )
    return out


def training_sentences(data_root: Path, lang: str) -> list[list[str]]:
    """Every training caption of a language (task1 + task2) under a Multi30K-style root."""
    from mlmm.retrieval.data import split_captions

    portions = ("translation", "comparable") if lang in TASK1_LANGUAGES else ("comparable",)
    return [
        c
        for portion in portions
        for caps in split_captions(data_root, "train", lang, portion)
        for c in caps
    ]


def derive_demo(
    data_root: Path, muse: Path | None, langs: list[str], dim: int, train_fraction: float, out: Path
) -> None:
    """Demo-world aligned vectors from all training captions (task1 + task2) of each language."""
    if "en" not in langs or muse is None:
        raise InputError(
            "retrieval-vectors", "English among --languages and --muse DIR", str(langs)
        )
    sentences = {lang: training_sentences(data_root, lang) for lang in langs}
    lexicons = {lang: read_lexicon(Path(muse) / f"en-{lang}.txt") for lang in langs if lang != "en"}
    for lang, vectors in demo_vectors(sentences, lexicons, dim, train_fraction).items():
        write_vec(Path(out) / f"wiki.{lang}.align.vec", vectors)


def derive_demo_onto_english(
    lang: str,
    english_vec: Path,
    muse: Path,
    out: Path,
    train_fraction: float,
    data_root: Path | None,
    limit: int | None = None,
    rotation: dict | None = None,
) -> None:
    """``derive_onto_english`` with the language's own vectors PPMI+SVD of its training captions
    under ``data_root`` (the demo's stand-in for fastText's crawl vectors)."""
    derive_onto_english(
        lang,
        english_vec,
        muse,
        out,
        train_fraction,
        limit=limit,
        rotation=rotation,
        own_vectors=None
        if data_root is None
        else lambda dim: ppmi_svd(training_sentences(data_root, lang), dim),
    )
