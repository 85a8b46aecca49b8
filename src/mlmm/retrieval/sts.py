"""STS (Calixto & Liu Table 2): Pearson r of an encoder's cosine on SemEval image-caption pairs."""

from __future__ import annotations

import functools
from collections.abc import Callable
from pathlib import Path

import numpy as np
import torch
from sacremoses import MosesPunctNormalizer, MosesTokenizer

from mlmm import evaluation, rank_metrics


@functools.cache
def _moses(lang: str) -> tuple[MosesPunctNormalizer, MosesTokenizer]:
    return MosesPunctNormalizer(lang=lang), MosesTokenizer(lang=lang)


def sts_tokens(sentence: str, lang: str = "en") -> list[str]:
    """Tokens as in the Multi30K ``lc.norm.tok`` files the encoders were trained on: Moses'
    punctuation normaliser, lowercasing, Moses' tokenizer with its default XML escaping
    (``&apos;s``, ``&quot;``, ``&amp;``) and no ``-a`` (a hyphen inside a word keeps it whole,
    "t-shirt"), so that STS words hit the training vocabulary."""
    normalizer, tokenizer = _moses(lang)
    return tokenizer.tokenize(normalizer.normalize(sentence).lower(), escape=True)


def sts_outcomes(
    embed: Callable[[list[list[str]]], torch.Tensor], root: Path
) -> dict[str, tuple[np.ndarray, np.ndarray]]:
    """Per-pair predicted scores (``5 * cosine``) and gold scores (NaN: not scored) for each
    ``<root>/<year>/STS.input.images.txt`` (gold beside it); ``rank_metrics.pearson_of`` of
    them is the year's Pearson r."""
    out = {}
    for year_dir in sorted(p for p in Path(root).iterdir() if p.is_dir()):
        inputs = year_dir / "STS.input.images.txt"
        if not inputs.is_file():
            continue
        gold_path = year_dir / "STS.gs.images.txt"
        s1, s2, gold = evaluation.read_sts(inputs, gold_path)
        with torch.no_grad():
            a = embed([sts_tokens(s) for s in s1])
            b = embed([sts_tokens(s) for s in s2])
        predicted = evaluation.sts_predicted(a, b, len(gold))
        rank_metrics.pearson_of(predicted, gold, gold_path)  # degenerate pairs refused here
        out[year_dir.name] = (predicted, gold)
    return out


def sts_scores(embed: Callable[[list[list[str]]], torch.Tensor], root: Path) -> dict[str, float]:
    """Pearson r for each ``<root>/<year>/STS.input.images.txt`` (gold beside it)."""
    return {
        year: rank_metrics.pearson_of(predicted, gold)
        for year, (predicted, gold) in sts_outcomes(embed, root).items()
    }
