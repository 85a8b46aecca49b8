"""Inputs for which a metric is undefined or meaningless are refused, never scored.

Each metric function (BLEU and the MT metrics, STS Pearson, topic F1, Jaccard overlap, MIRA
tuning, NMT training) calls one of these checks on its inputs, so every command that computes
the metric refuses the same degenerate case with one line naming the input, what was expected
and what was found (``mlmm.errors.InputError``):

- parallel texts of different lengths (sacrebleu would truncate, ``zip`` would stop early);
- text in two Unicode normal forms (NFD "é" and NFC "é" are different BLEU tokens): text is
  normalised to NFC before it is compared, as sacrebleu does not;
- an empty set where a ratio is taken (two empty vocabularies: Jaccard 0/0);
- a constant variable in a correlation (constant gold or predictions: Pearson 0/0);
- (a TED topic with no positive test talk has no F1: ``mlmm.ted.classify.macro_f1`` leaves it
  out of the average by name, and refuses a test set with no positive talk at all);
- features constant within every n-best list (MIRA cannot move; it writes zero weights);
- no example left to train on;
- a list of ids naming one id twice (its rows would be counted twice).
"""

from __future__ import annotations

import unicodedata
from collections.abc import Hashable, Sequence
from pathlib import Path

import numpy as np

from mlmm.errors import InputError


def nfc(lines: Sequence[str]) -> list[str]:
    """``lines`` in Unicode normal form C (the form of the Multi30K and MIC files)."""
    return [unicodedata.normalize("NFC", line) for line in lines]


def same_count(
    first: Sequence, second: Sequence, where_first: str | Path, where_second: str | Path,
    what: str = "lines",
) -> None:  # fmt: skip
    """``second`` must hold as many items as ``first`` (parallel texts, labels)."""
    if len(first) != len(second):
        raise InputError(
            where_second, f"{len(first)} {what}, one per line of {where_first}", f"{len(second)}"
        )


def parallel_text(
    hypotheses: Sequence[str], references: Sequence[str],
    where_hypotheses: str | Path, where_references: str | Path,
) -> tuple[list[str], list[str]]:  # fmt: skip
    """Hypotheses and references of a corpus metric, NFC-normalised: as many of each, and at
    least one (a corpus BLEU of nothing is 0 by convention, not a measurement)."""
    same_count(references, hypotheses, where_references, where_hypotheses)
    if not references:
        raise InputError(where_references, "at least one reference line", "none")
    return nfc(hypotheses), nfc(references)


def not_empty(items, where: str | Path, what: str) -> None:
    if len(items) == 0:
        raise InputError(where, f"at least one {what}", "none")


def not_constant(values, where: str | Path, what: str) -> None:
    """A correlation needs ``values`` to vary (Pearson of a constant is 0/0, NaN; float noise
    of 1e-12 around one value, such as the cosines of identical embeddings, is no variation)."""
    values = np.asarray(values, dtype=np.float64)
    if len(values) and np.allclose(values, values[0], rtol=1e-12, atol=1e-12):
        raise InputError(
            where, f"{what} that vary (a correlation with a constant is undefined)",
            f"all {len(values)} equal to {values[0]:g}",
        )  # fmt: skip


def unique_ids(ids: Sequence[Hashable], where: str | Path, what: str = "name") -> None:
    """Each id once: a duplicated image or sentence id would be scored twice."""
    seen: dict[Hashable, int] = {}
    for number, item in enumerate(ids, start=1):
        if item in seen:
            raise InputError(
                where, f"each {what} once", f"{item!r} again (first on line {seen[item]})",
                line=number,
            )  # fmt: skip
        seen[item] = number
