"""STS (Calixto & Liu Table 2): Pearson r of an encoder's cosine on SemEval image-caption pairs."""

from __future__ import annotations

import re
from collections.abc import Callable
from pathlib import Path

import torch

from mlmm import evaluation


def sts_tokens(sentence: str) -> list[str]:
    """Lowercased word / punctuation tokens, close to the Multi30K ``lc.norm.tok`` files: as
    Moses' tokenizer (no ``-a``), a hyphen inside a word keeps it whole ("t-shirt")."""
    return re.findall(r"\w+(?:-\w+)*|[^\w\s]", sentence.lower())


def sts_scores(embed: Callable[[list[list[str]]], torch.Tensor], root: Path) -> dict[str, float]:
    """Pearson r for each ``<root>/<year>/STS.input.images.txt`` (gold beside it)."""
    out = {}
    for year_dir in sorted(p for p in Path(root).iterdir() if p.is_dir()):
        inputs = year_dir / "STS.input.images.txt"
        if not inputs.is_file():
            continue
        s1, s2, gold = evaluation.read_sts(inputs, year_dir / "STS.gs.images.txt")
        with torch.no_grad():
            a = embed([sts_tokens(s) for s in s1])
            b = embed([sts_tokens(s) for s in s2])
        out[year_dir.name] = evaluation.sts_pearson(a, b, gold)
    return out
