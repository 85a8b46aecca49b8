"""Does the paper's claim hold? A verdict on every claim of a paper's registry
(``resources/claims/<paper>.yaml``, README there), from the runs' per-query outcomes.

A claim compares two rows of one paper table ("``better`` beats ``than``", or, for a parity
claim, "``better`` is not worse than ``than``") on one or several cells (languages,
directions, STS years: the claim's effect is the mean of the cells' differences). Effects are
oriented so that positive is the paper's direction: ``better`` minus ``than`` where higher
is better, ``than`` minus ``better`` for TER, median and mean rank. Our effect is the paired
difference on the same test images (``uncertainty.paired_replicates``: images drawn with all
their captions, within folds, seeds drawn too); the paper's comes from its own table. The
claims of a paper that ran are Holm-corrected together, and the interval beside each is at
the level that goes with its adjusted p-value (``uncertainty.holm_levels``), so that an
interval excludes 0 where the adjusted test rejects. ``mde`` is the minimal detectable effect
at 80 % power for the claim's test set and seeds at that level.

A claim without a paper effect tests the direction only: a claim on a figure (``figure: N``
instead of ``table``, the runs of the variants' ``paper_rows`` with that figure; the figure
prints no numbers) or on cells its table leaves empty (Calixto & Liu's median ranks). Its
paper effect is blank, and of the verdicts below only the direction ones apply: reproduced
(significant in the paper's direction), reversed, inconclusive.

Verdicts of a superiority claim (``test: superiority``, the default):

- ``reproduced``: significant, the paper's sign, the paper's effect inside our interval
- ``larger than reported`` / ``smaller than reported``: significant, the paper's sign, the
  paper's effect below / above our interval
- ``reversed``: significant, against the paper's sign
- ``below detectable``: not significant, and the paper's effect is under the MDE (this test
  set and these seeds could not be expected to find it)
- ``inconclusive``: not significant, the interval includes both 0 and the paper's effect
- ``contradicts the paper's size``: not significant, the interval includes 0 and excludes
  the paper's effect

Verdicts of a parity claim (``test: non-inferiority`` with a ``margin`` in metric points):
``reproduced`` (our effect is above ``-margin``: adjusted one-sided p < 0.05), ``worse than
the margin`` (the interval lies below ``-margin``), ``below detectable`` (the MDE exceeds the
margin), ``inconclusive``. ``not run``: the configuration runs no variant for a row, or its
runs kept no per-query outcomes, or the rows were not scored on the same images; the reason
says which.

A verdict from fewer seeds a row than the registry's ``min_seeds`` (default ``MIN_SEEDS``)
compares two trained models, not two methods: one seed cannot separate the method from the
luck of its initialisation (docs/tables.md, "What a null simulation found"), and
``compares`` says so.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pandas as pd

from mlmm import uncertainty
from mlmm.errors import InputError
from mlmm.figures import figure_size
from mlmm.io import save_figure
from mlmm.origin import Origin, stamp_figure
from mlmm.results.intervals import CellSamples, cell_samples, mapped_runs
from mlmm.tables import load_paper_table, write_table

HIGHER_IS_BETTER = ("R@", "pearson", "BLEU", "chrF", "F1", "METEOR")
LOWER_IS_BETTER = ("TER", "medr", "meanr")
TESTS = ("superiority", "non-inferiority")
VERDICTS = ("reproduced", "larger than reported", "smaller than reported", "reversed",
            "below detectable", "inconclusive", "contradicts the paper's size",
            "worse than the margin", "not run")  # fmt: skip
# Seeds a row needs before a verdict speaks of methods rather than of two trained models
# (Clark et al. 2011 on optimiser instability; docs/tables.md's null simulation: with a
# seed-level effect, one or three seeds reject a true null far more often than 5 %).
MIN_SEEDS = 5
P_METHOD = (
    "p: paired bootstrap test, recentred (Efron & Tibshirani 1993; Berg-Kirkpatrick et al. "
    "2012): two-sided, the share of replicates shifted to mean 0 at least as far from 0 as our "
    "effect; for a parity claim one-sided non-inferiority against -margin. p_holm: Holm's "
    "correction over this paper's claims that ran."
)


def orientation(metric: str) -> float:
    """+1 where a higher ``metric`` is better, -1 where lower is (TER, ranks)."""
    if metric.startswith(HIGHER_IS_BETTER):
        return 1.0
    if metric in LOWER_IS_BETTER:
        return -1.0
    raise ValueError(f"no known direction for metric {metric!r}")


# ----------------------------------------------------------------------------------------
# the claims registry


@dataclass(frozen=True)
class Claim:
    id: str
    finding: str
    quote: str
    section: str
    table: int  # 0 for a claim on a figure
    metrics: tuple[str, ...]  # one or several of one direction (R@1, R@5, R@10)
    # (system, variant_note) as in the paper's CSV; "{language}" in the note stands for the
    # cell's language (Rajendran's rows are spelt "test=es ...", "captions=fr")
    better: tuple[str, str]
    than: tuple[str, str]
    # (language, direction, dataset, test_language) each; ``test_language`` fills
    # "{test_language}" in a row's variant note (Rajendran's Table 1: training language
    # ``language``, the note's test language)
    cells: tuple[tuple[str, str, str, str], ...]
    test: str = "superiority"
    margin: float = 0.0
    # a row's own language where the two differ (Rajendran Table 5: the En-Image CorrNet's
    # English captions against the Bridge CorrNet's French ones, on the same MIC images)
    row_languages: tuple[str, str] = ("", "")
    # a claim on a paper figure (Kadar Figure 3): the variants' rows with ``figure: N``; the
    # figure prints no numbers, so the claim has no paper effect and tests the direction only
    figure: int = 0
    # the paper's table printing the ``than`` row where the paper compares with published
    # numbers it did not rerun (Rajendran's DOC/ADD, Table 2): that side is those numbers, not
    # a run of ours, and only our side is resampled
    published_than: int = 0

    @property
    def source(self) -> tuple[str, int]:
        """Where the two rows are: ("table", N) or ("figure", N), as in ``paper_rows``."""
        return ("figure", self.figure) if self.figure else ("table", self.table)

    @property
    def metric(self) -> str:
        return self.metrics[0]

    def parts(self):
        """Every (cell, metric) the claim's effect is the mean over."""
        return [(cell, metric) for cell in self.cells for metric in self.metrics]

    def side_row(self, side: int, cell: tuple[str, str, str, str]) -> tuple[str, str]:
        """The (system, variant_note) of the ``better`` (0) or ``than`` (1) row in a cell."""
        system, note = (self.better, self.than)[side]
        return system, note.replace("{language}", cell[0]).replace("{test_language}", cell[3])

    def side_table(self, side: int) -> int:
        """The paper's table holding the ``better`` (0) or ``than`` (1) row."""
        return self.published_than if side == 1 and self.published_than else self.table

    def side_cell(self, side: int, cell: tuple[str, str, str, str], metric: str) -> dict:
        """One cell of the ``better`` (0) or ``than`` (1) row."""
        language, direction, dataset, _ = cell
        return {"language": self.row_languages[side] or language, "direction": direction,
                "metric": metric, "dataset": dataset}  # fmt: skip

    @property
    def cells_text(self) -> str:
        metrics = ", ".join(self.metrics)
        if len(self.cells) > CELLS_LISTED:
            return f"{metrics}: mean over {len(self.cells)} cells (the registry lists them)"
        parts = [" ".join(x for x in (lang, d, ds, test and f"test {test}") if x)
                 for lang, d, ds, test in self.cells]  # fmt: skip
        several = len(parts) * len(self.metrics) > 1
        return f"{metrics}: " + "; ".join(parts) + (" (mean)" if several else "")


CELLS_LISTED = 8  # a claim over more cells names their count in its table, not each


CLAIM_KEYS = {"id", "finding", "quote", "section", "metric", "better", "than"}
OPTIONAL_KEYS = {"table", "figure", "language", "direction", "dataset", "cells", "test", "margin",
                 "published_than"}  # fmt: skip
CELL_ORDER = ("language", "direction", "dataset", "test_language")  # a cell's tuple
CELL_KEYS = set(CELL_ORDER)


def _text(path, value, key: str, allow_empty: bool = False) -> str:
    if not isinstance(value, str | int | float) or isinstance(value, bool):
        raise InputError(path, "a text", repr(value)[:60], key=key)
    if not allow_empty and not str(value).strip():
        raise InputError(path, "a non-empty text", "an empty one", key=key)
    return str(value)


def _row(path, value, key: str) -> tuple[tuple[str, str], str]:
    if not isinstance(value, dict) or "system" not in value:
        raise InputError(path, "a mapping {system, variant_note[, language]}", repr(value)[:80],
                         key=key)  # fmt: skip
    unknown = set(value) - {"system", "variant_note", "language"}
    if unknown:
        raise InputError(path, "keys system, variant_note, language", f"{sorted(unknown)}",
                         key=key)  # fmt: skip
    system = _text(path, value["system"], f"{key}.system")
    note = _text(path, value.get("variant_note") or "", f"{key}.variant_note", True)
    language = _text(path, value.get("language") or "", f"{key}.language", True)
    return (system, note), language


def _cells(path, entry: dict, where: str) -> tuple[tuple[str, str, str], ...]:
    if "cells" in entry:
        if any(k in entry for k in CELL_KEYS):
            raise InputError(path, "either 'cells' or language/direction/dataset", "both",
                             key=where)  # fmt: skip
        listed = entry["cells"]
        if not isinstance(listed, list) or not listed:
            raise InputError(path, "a non-empty list of cells", repr(listed)[:60],
                             key=f"{where}.cells")  # fmt: skip
    else:
        if "language" not in entry or "direction" not in entry:
            raise InputError(path, "'cells' or 'language' and 'direction'", "neither", key=where)
        listed = [{k: entry[k] for k in CELL_KEYS if k in entry}]
    cells = []
    for number, cell in enumerate(listed, start=1):
        key = f"{where}.cells[{number}]"
        if not isinstance(cell, dict) or not set(cell) <= CELL_KEYS or "direction" not in cell:
            raise InputError(path, "a mapping {language, direction[, dataset, test_language]}",
                             repr(cell)[:80], key=key)  # fmt: skip
        cells.append(tuple(_text(path, cell.get(k) or "", f"{key}.{k}", True)
                           for k in CELL_ORDER))  # fmt: skip
    if len(set(cells)) != len(cells):
        raise InputError(path, "distinct cells", "a repeated one", key=f"{where}.cells")
    return tuple(cells)


def parse_claim(path: Path, entry, number: int) -> Claim:
    """One registry entry as a ``Claim``; InputError naming the file and the entry's key."""
    where = f"claims[{number}]"
    if not isinstance(entry, dict):
        raise InputError(path, "a mapping", repr(entry)[:60], key=where)
    where = f"claims[{number}] ({entry.get('id', '?')})"
    missing = sorted(CLAIM_KEYS - set(entry))
    unknown = sorted(set(entry) - CLAIM_KEYS - OPTIONAL_KEYS)
    if missing or unknown:
        found = "; ".join(x for x in (missing and f"no {missing}", unknown and f"unknown {unknown}")
                          if x)  # fmt: skip
        raise InputError(path, f"keys {sorted(CLAIM_KEYS)} (optional {sorted(OPTIONAL_KEYS)})",
                         found, key=where)  # fmt: skip
    listed = entry["metric"] if isinstance(entry["metric"], list) else [entry["metric"]]
    metrics = tuple(_text(path, m, f"{where}.metric") for m in listed)
    try:
        signs = {orientation(m) for m in metrics}
    except ValueError as exc:
        raise InputError(path, "metrics R@K, pearson, BLEU, chrF, F1, METEOR, TER, medr, meanr",
                         str(exc), key=f"{where}.metric") from None  # fmt: skip
    if not metrics or len(signs) != 1 or len(set(metrics)) != len(metrics):
        raise InputError(path, "one metric, or distinct ones with the same better direction",
                         repr(listed), key=f"{where}.metric")  # fmt: skip
    if ("table" in entry) == ("figure" in entry):
        raise InputError(path, "exactly one of 'table' and 'figure'",
                         "both" if "table" in entry else "neither", key=where)  # fmt: skip
    source = "table" if "table" in entry else "figure"
    number = entry[source]
    if not isinstance(number, int) or isinstance(number, bool) or number < 1:
        raise InputError(path, f"a {source} number", repr(number), key=f"{where}.{source}")
    better, better_language = _row(path, entry["better"], f"{where}.better")
    than, than_language = _row(path, entry["than"], f"{where}.than")
    if (better, better_language) == (than, than_language):
        raise InputError(path, "two different rows in 'better' and 'than'", "the same row",
                         key=where)  # fmt: skip
    test = _text(path, entry.get("test") or "superiority", f"{where}.test")
    if test not in TESTS:
        raise InputError(path, f"one of {list(TESTS)}", test, key=f"{where}.test")
    margin = entry.get("margin")
    if test == "non-inferiority":
        if not isinstance(margin, int | float) or isinstance(margin, bool) or margin <= 0:
            raise InputError(path, "a positive margin (metric points) for a parity claim",
                             repr(margin), key=f"{where}.margin")  # fmt: skip
    elif margin is not None:
        raise InputError(path, "no margin on a superiority claim", repr(margin),
                         key=f"{where}.margin")  # fmt: skip
    published = entry.get("published_than", 0)
    if published and (source != "table" or not isinstance(published, int)
                      or isinstance(published, bool) or published < 1 or published == number):
        raise InputError(path, "the number of another table of the paper, for a table's claim",
                         repr(published), key=f"{where}.published_than")  # fmt: skip
    return Claim(
        id=_text(path, entry["id"], f"{where}.id"),
        finding=_text(path, entry["finding"], f"{where}.finding"),
        quote=_text(path, entry["quote"], f"{where}.quote"),
        section=_text(path, entry["section"], f"{where}.section"),
        table=number if source == "table" else 0,
        figure=number if source == "figure" else 0,
        metrics=metrics,
        better=better,
        than=than,
        cells=_cells(path, entry, where),
        test=test,
        margin=float(margin or 0.0),
        row_languages=(better_language, than_language),
        published_than=published,
    )


def load_claims(
    path: str | Path, paper_tables: Path | None = None
) -> tuple[str, list[Claim], int]:
    """The paper, its claims and its ``min_seeds`` from ``<paper>.yaml``; InputError naming the
    file and the claim's key. With ``paper_tables``, every claim's cells must exist in the
    paper's table and a superiority claim's paper effect must have the claim's sign."""
    from mlmm.io import read_yaml

    path = Path(path)
    loaded = read_yaml(path, "a YAML claims registry")
    if not isinstance(loaded, dict) or not isinstance(loaded.get("claims"), list):
        raise InputError(path, "a mapping with 'paper' and a list 'claims'", repr(loaded)[:80])
    if not loaded["claims"]:
        raise InputError(path, "at least one claim", "an empty list", key="claims")
    unknown = set(loaded) - {"paper", "claims", "min_seeds"}
    if unknown:
        raise InputError(path, "keys paper, min_seeds, claims", f"{sorted(unknown)}")
    min_seeds = loaded.get("min_seeds", MIN_SEEDS)
    if not isinstance(min_seeds, int) or isinstance(min_seeds, bool) or min_seeds < 1:
        raise InputError(path, "a positive whole number", repr(min_seeds), key="min_seeds")
    paper = _text(path, loaded.get("paper") or path.stem, "paper")
    claims = [parse_claim(path, entry, n) for n, entry in enumerate(loaded["claims"], start=1)]
    ids = [c.id for c in claims]
    if len(set(ids)) != len(ids):
        repeated = sorted({i for i in ids if ids.count(i) > 1})
        raise InputError(path, "unique claim ids", f"repeated {repeated}", key="claims")
    if paper_tables is not None:
        for claim in claims:
            effect = paper_effect(paper_tables, paper, claim, registry=path)
            if claim.test == "superiority" and not pd.isna(effect) and effect <= 0:
                raise InputError(
                    path, f"a paper effect in the claim's direction ({claim.better[0]!r} better)",
                    f"{effect:+g} in its table {claim.table}", key=f"claims ({claim.id})",
                )  # fmt: skip
            if claim.test == "non-inferiority" and not pd.isna(effect) and effect <= -claim.margin:
                raise InputError(
                    path, f"a margin the paper's own effect meets (effect above -{claim.margin:g})",
                    f"{effect:+g} in its table {claim.table}", key=f"claims ({claim.id}).margin",
                )  # fmt: skip
    return paper, claims, min_seeds


def paper_effect(
    paper_tables: Path | None, paper: str, claim: Claim, registry: Path | None = None
) -> float:
    """The paper's own effect in the claim's direction, the mean over its cells; NaN where the
    paper's table is not at hand or the claim is on a figure (no numbers printed), and where
    the table leaves a cell empty (Calixto & Liu's unreadable median ranks); InputError where
    a cell is not in it."""
    if claim.figure:
        return np.nan
    frames = [load_paper_table(paper_tables, paper, claim.side_table(side)) for side in (0, 1)]
    if frames[0] is None or frames[1] is None:
        return np.nan
    sign, effects = orientation(claim.metric), []
    for cell, metric in claim.parts():
        values = [
            float(paper_cell(frames[side], paper, claim, side, cell, metric, registry)["value"])
            for side in (0, 1)
        ]
        effects.append(sign * (values[0] - values[1]))
    return float(np.mean(effects))


def paper_cell(
    frame, paper: str, claim: Claim, side: int, cell, metric: str, registry: Path | None = None
):
    """The one row of the paper's table ``frame`` that side ``side`` of ``claim`` reads for
    ``cell`` and ``metric``; InputError where the table has none or several."""
    system, note = claim.side_row(side, cell)
    found = claim.side_cell(side, cell, metric)
    hit = frame[
        (frame.system == system)
        & (frame.variant_note.fillna("") == note)
        & (frame.language.fillna("") == found["language"])
        & (frame.direction.fillna("") == found["direction"])
        & (frame.metric == metric)
    ]
    if found["dataset"]:
        hit = hit[hit.dataset.fillna("").str.contains(found["dataset"], regex=False)]
    if len(hit) != 1:
        table = claim.side_table(side)
        raise InputError(
            registry or f"{paper}_table{table}.csv",
            f"one cell of {paper}_table{table}.csv: {system} [{note}] {found}",
            f"{len(hit)} cells", key=f"claims ({claim.id})",
        )  # fmt: skip
    return hit.iloc[0]


# ----------------------------------------------------------------------------------------
# testing the claims on our runs


def _configured_languages(runs, paper: str, claim: Claim, side: int, cell) -> set[str]:
    system, note = claim.side_row(side, cell)
    languages: set[str] = set()
    key, number = claim.source
    for run in mapped_runs(runs, paper, number, system, note, key):
        for row in run.paper_rows:
            languages |= set(row.get("languages") or [])
    return languages


def _reason(runs, paper: str, claim: Claim, paper_tables: Path | None) -> tuple[str, list]:
    """Why a claim cannot be tested ('' when it can), and both rows' samples of every cell (a
    published ``than`` row: its number in the paper's table)."""
    pairs = []
    key, number = claim.source
    published = None
    if claim.published_than:
        published = load_paper_table(paper_tables, paper, claim.published_than)
        if published is None:
            return (f"the paper's Table {claim.published_than}, whose published numbers it "
                    "compares with, is not at hand (config paper_tables)"), []  # fmt: skip
    for cell, metric in claim.parts():
        found: list[CellSamples | float] = []
        for side in (0, 1):
            if side == 1 and published is not None:
                found.append(float(paper_cell(published, paper, claim, 1, cell, metric)["value"]))
                continue
            system, note = claim.side_row(side, cell)
            if not mapped_runs(runs, paper, number, system, note, key):
                return f"no configured variant runs the row {system} [{note}]", []
            wanted = claim.side_cell(side, cell, metric)
            samples = cell_samples(runs, paper, number, system, note, wanted, key)
            if samples is None:
                languages = _configured_languages(runs, paper, claim, side, cell)
                if languages and wanted["language"] not in languages:
                    configured = ", ".join(sorted(languages))
                    return (f"the runs of {system} [{note}] are configured for {configured}, "
                            f"not {wanted['language']}"), []  # fmt: skip
                return (f"the runs of {system} [{note}] kept no per-query outcomes of "
                        f"{wanted['language']} {wanted['direction']} {metric}"), []  # fmt: skip
            found.append(samples)
        if published is None and not found[0].same_queries(found[1]):
            return "the two rows were not scored on the same test images", []
        pairs.append(found)
    return "", pairs


def _effect(pairs: list, sign: float) -> tuple[float, np.ndarray]:
    """The claim's effect (mean over its cells, oriented) and its replicates: cells of one test
    set with the same bootstrap seed, so that they share the draw of its images (an image's
    i2t and t2i queries, its captions in several languages); other test sets (STS years, TED
    languages) with seeds of their own, drawn independently."""
    observed, replicates = [], []
    seeds = {name: i for i, name in enumerate(dict.fromkeys(b.test_set for b, _ in pairs))}
    for better, than in pairs:
        if isinstance(than, float):  # a published number: only our side is resampled
            value, diffs = uncertainty.replicates_against(
                better.samples, than, better.statistic, folds=better.folds,
                groups=better.groups, seed=seeds[better.test_set],
            )  # fmt: skip
        else:
            value, diffs = uncertainty.paired_replicates(
                better.samples, than.samples, better.statistic, folds=better.folds,
                groups=better.groups, seed=seeds[better.test_set],
            )  # fmt: skip
        observed.append(sign * value)
        replicates.append(sign * diffs)
    return float(np.mean(observed)), np.mean(replicates, axis=0)


def evaluate_claims(
    runs, paper: str, claims: list[Claim], paper_tables: Path | None, min_seeds: int = MIN_SEEDS
) -> pd.DataFrame:
    """One row per claim, the verdict first (module docstring)."""
    rows, replicates = [], []
    for claim in claims:
        reason, pairs = _reason(runs, paper, claim, paper_tables)
        than = _row_name(claim.than, claim.row_languages[1])
        if claim.published_than:
            than += f" (published, the paper's Table {claim.published_than}; not rerun)"
        row = {
            "verdict": "",
            "compares": "",
            "claim": claim.id,
            "better": _row_name(claim.better, claim.row_languages[0]),
            "than": than,
            "cells": claim.cells_text,
            "test": claim.test + (f", margin {claim.margin:g}" if claim.test != "superiority"
                                  else ""),  # fmt: skip
            "paper_effect": round(paper_effect(paper_tables, paper, claim), 6),
            "our_effect": np.nan,
            "effect_low": np.nan,
            "effect_high": np.nan,
            "level": np.nan,
            "mde": np.nan,
            "p": np.nan,
            "p_holm": np.nan,
            "seeds": "",
            "reason": reason,
            "finding": claim.finding,
            "section": claim.section,
            "quote": claim.quote,
        }
        draws = None
        if not reason:
            observed, draws = _effect(pairs, orientation(claim.metric))
            margin = claim.margin if claim.test == "non-inferiority" else None
            found = uncertainty.difference_of(observed, draws, margin=margin)
            seeds = [len(side.samples) for side in pairs[0] if not isinstance(side, float)]
            shown = " / ".join(map(str, seeds)) + (" / published" if claim.published_than else "")
            row.update(our_effect=observed, p=found.p, seeds=shown)
            few = min(seeds) < min_seeds
            row["compares"] = (f"trained models ({min(seeds)} seed{'s' * (min(seeds) > 1)}; "
                               f"methods need {min_seeds})" if few else "methods")  # fmt: skip
        rows.append(row)
        replicates.append(draws)
    frame = pd.DataFrame(rows)
    frame["p_holm"] = uncertainty.holm(frame["p"].to_numpy())
    levels = uncertainty.holm_levels(frame["p"].to_numpy())
    for i, claim in enumerate(claims):
        if replicates[i] is None:
            frame.loc[i, "verdict"] = "not run"
            continue
        alpha = 1 - levels[i]  # the claim's share of the family's 5 %
        one_sided = claim.test == "non-inferiority"
        level = 1 - 2 * alpha if one_sided else 1 - alpha
        low, high = uncertainty.percentile_interval(replicates[i], level)
        se = float(np.std(replicates[i], ddof=1))
        mde = uncertainty.minimal_detectable_effect(se, 2 * alpha if one_sided else alpha)
        frame.loc[i, ["effect_low", "effect_high", "level", "mde"]] = [low, high, level, mde]
        frame.loc[i, "verdict"] = verdict(
            claim.test, frame.loc[i, "our_effect"], low, high, frame.loc[i, "p_holm"],
            frame.loc[i, "paper_effect"], mde, claim.margin,
        )  # fmt: skip
    return frame


def _row_name(row: tuple[str, str], language: str) -> str:
    system, note = row
    note = note.replace("{language}", "<cell language>")
    note = note.replace("{test_language}", "<test language>")
    text = f"{system} [{note}]" if note else system
    return f"{text} ({language} captions)" if language else text


def verdict(
    test: str,
    ours: float,
    low: float,
    high: float,
    p_holm: float,
    paper: float,
    mde: float,
    margin: float = 0.0,
) -> str:
    """The verdict of one claim (module docstring); effects oriented, positive = the paper's
    direction; ``low``, ``high`` the interval at the claim's Holm level."""
    if pd.isna(ours) or pd.isna(p_holm):
        return "not run"
    significant = p_holm < uncertainty.ALPHA
    if test == "non-inferiority":
        if significant:
            return "reproduced"
        if high < -margin:
            return "worse than the margin"
        return "below detectable" if mde > margin else "inconclusive"
    if significant:
        if ours < 0:
            return "reversed"
        if pd.isna(paper) or low <= paper <= high:
            return "reproduced"
        return "smaller than reported" if paper > high else "larger than reported"
    if not pd.isna(paper) and abs(paper) < mde:
        return "below detectable"
    if not pd.isna(paper) and low <= 0 <= high and not low <= paper <= high:
        return "contradicts the paper's size"
    return "inconclusive"


# ----------------------------------------------------------------------------------------
# outputs


def claims_figure(frame: pd.DataFrame, stem: Path, origin: Origin, title: str) -> list[Path]:
    """Our effect with the interval its verdict uses beside the paper's effect, one line a
    claim, one panel per metric (effects of different metrics are not on one scale)."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    first = frame["cells"].str.split(":").str[0].str.split(",").str[0]
    scale = first.str.replace(r"R@\d+", "R@K", regex=True)
    metrics = list(dict.fromkeys(scale))
    counts = [int((scale == m).sum()) for m in metrics]
    height = 0.6 * len(metrics) + 0.32 * max(1, len(frame))
    fig, axes = plt.subplots(
        len(metrics), 1, figsize=figure_size(2, max(2.0, height)), squeeze=False,
        height_ratios=[c + 1 for c in counts], layout="constrained",
    )  # fmt: skip
    for ax, metric in zip(axes[:, 0], metrics, strict=True):
        part = frame[scale == metric]
        y = np.arange(len(part))[::-1]
        ran = part["our_effect"].notna().to_numpy()
        err = np.vstack([part.our_effect - part.effect_low, part.effect_high - part.our_effect])
        ax.errorbar(part.our_effect[ran], y[ran], xerr=err[:, ran], fmt="o", c="C0",
                    capsize=3, label="ours (interval at the claim's Holm level)")  # fmt: skip
        ax.plot(part.paper_effect, y, "D", c="C3", label="paper")
        margins = part["test"].str.extract(r"margin ([0-9.eE+-]+)")[0].astype(float)
        if margins.notna().any():
            ax.plot(-margins, y, "|", c="0.3", ms=14, mew=1.5, label="parity margin (−margin)")
        ax.axvline(0, c="0.5", lw=0.8)
        labels = [f"{c.replace('_', ' ')} — {v}" for c, v in zip(part.claim, part.verdict,
                                                                 strict=True)]  # fmt: skip
        ax.set_yticks(y, labels, fontsize=7)
        ax.set_ylim(-0.7, len(part) - 0.3)
        unit = "recall (R@K)" if metric == "R@K" else metric
        ax.set_xlabel(f"{unit}: improvement of the first row over the second", fontsize=8)
    for ax in axes[:, 0]:
        if ax.get_legend_handles_labels()[0]:
            ax.legend(frameon=False, fontsize=7, loc="best")
            break
    fig.suptitle(title)  # kept for the caption file and metadata, not drawn (stamp_figure)
    stamp_figure(fig, origin)
    paths = save_figure(fig, stem)
    plt.close(fig)
    return paths


# The claims table in LaTeX, for a paper: the verdict and its numbers by claim; the texts
# (compared rows, cells, test, reason, finding, section, quote) are given per claim in the
# notes file, and every column in the CSV, Markdown and HTML.
LATEX_COLUMNS = {
    "claim": "claim",
    "verdict": "verdict",
    "paper_effect": ("effect", "paper"),
    "our_effect": ("effect", "ours"),
    "effect_low": ("interval", "low"),
    "effect_high": ("interval", "high"),
    "mde": "MDE",
    "p_holm": "Holm p",
    "seeds": "seeds",
    "compares": "compares",
}


def write_claims(
    runs,
    registry: Path,
    paper_tables: Path | None,
    tables: Path,
    figures: Path,
    title: str | None = None,
) -> list[Path]:
    """``tables/<paper>_claims.{csv,md,tex,html}`` and ``figures/<paper>_claims.{png,pdf}``."""
    paper, claims, min_seeds = load_claims(registry, paper_tables)
    frame = evaluate_claims(runs, paper, claims, paper_tables, min_seeds)
    used = [run.metrics for run in runs if any(r["paper"] == paper for r in run.paper_rows)]
    origin = Origin.of_runs(used or [run.metrics for run in runs])
    title = title or f"{paper}: the paper's claims on our runs"
    counts = frame["verdict"].value_counts().to_dict()
    notes = [
        "effect: improvement of the first row (better) over the second (than) in the claim's "
        "cells, positive in the paper's direction (for TER and ranks: than minus better); "
        "the mean over the cells where a claim has several. paper_effect from the paper's "
        "table; our_effect the same difference of our cells (means over seeds).",
        "effect_low, effect_high: our paired bootstrap interval (images drawn with all their "
        "captions, within folds; seeds drawn too; 1,000 replicates) at the claim's level: "
        "1 - 0.05 p / p_holm, Holm's adjustment carried into the interval (two-sided; "
        "1 - 0.10 p / p_holm for a parity claim's one-sided test). It covers our test set "
        "and seeds only, not the paper's own seed noise.",
        "mde: the minimal detectable effect, the true effect this test finds with 80 % power "
        "on our test set and seeds at the claim's level (2.8 bootstrap standard errors at "
        "0.05).",
        P_METHOD,
        "verdict: reproduced (significant, the paper's sign, the paper's effect inside our "
        "interval); larger / smaller than reported (significant, the paper's effect below / "
        "above it); reversed (significant, against the paper's sign); below detectable (not "
        "significant and the paper's effect under the MDE); inconclusive (the interval holds "
        "0 and the paper's effect); contradicts the paper's size (it holds 0, not the paper's "
        "effect). Parity claims: reproduced (not worse by the margin), worse than the "
        "margin, below detectable (MDE over the margin), inconclusive. not run: reason.",
        f"compares: methods where each row has at least {min_seeds} seeds; with fewer, the "
        "verdict compares the trained models we ran, not the methods (a seed-level effect is "
        "indistinguishable from the method's).",
        "verdicts: " + ", ".join(f"{k} {v}" for k, v in sorted(counts.items())),
        f"registry: {registry.name}",
    ]
    paths = write_table(frame, Path(tables) / f"{paper}_claims", title, notes, origin,
                        latex_columns=LATEX_COLUMNS)  # fmt: skip
    paths += claims_figure(frame, Path(figures) / f"{paper}_claims", origin, title)
    return paths
