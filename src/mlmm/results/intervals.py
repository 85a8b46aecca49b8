"""Bootstrap intervals on the results tables' cells, from the runs' per-query outcomes.

A cell of ours (system row x language x direction x metric) is the mean over the seeds of the
runs mapped onto that paper row (their ``paper_rows``); ``cell_samples`` collects each seed's
per-query outcomes of it with the image of every query (``mlmm.outcomes``), and
``mlmm.uncertainty`` puts the interval on it (``add_intervals``). This module sits under the
table builders (``mlmm.results.retrieval_tables``, ``mlmm.results.nmt_table``,
``mlmm.results.ted_tables``, ``mlmm.results.pivot_table``) and under ``mlmm.results.claims``,
and imports none of them.
"""

from __future__ import annotations

import functools
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
import pandas as pd

from mlmm import uncertainty
from mlmm.outcomes import outcomes_path, verified_outcomes

NMT_LANGUAGE = "en-de"  # Calixto & Liu Table 3 (mlmm.results.nmt_table)
BOOTSTRAP_NOTE = (
    "95 % intervals: percentile bootstrap, 1,000 replicates (seed 0), each drawing the test "
    "images with replacement, every drawn image with all its queries (its captions; within "
    "each fold; one draw shared by every seed and, for a difference, by both systems), and "
    "the seeds with replacement, and averaging the metric over the drawn seeds "
    "(mlmm.uncertainty). within_noise: the paper's number lies inside our 95 % interval, "
    "which covers our test set and seeds only, not the paper's own seed noise (≈ in the "
    "cells; ≠ where it does not)."
)


@dataclass
class Run:
    variant: str
    seed: int
    metrics: dict
    paper_rows: list[dict]
    protocol: list[str] = field(default_factory=list)  # results.protocol_notes
    path: Path | None = None  # its metrics.json (queries.npz lies beside it)

    def __post_init__(self) -> None:
        """Every reader of results hands on the result's provenance: a table's origin label
        (mlmm.origin.Origin.of_runs) and the outcomes check read it from here."""
        if not isinstance(self.metrics.get("provenance"), dict):
            raise ValueError(f"run {self.variant!r}: its metrics carry no provenance mapping")


@dataclass(frozen=True)
class CellSamples:
    """Every seed's per-query outcomes of one cell, the statistic of the metric on them, the
    folds the metric is a mean over, and each query's image (None: every query its own)."""

    samples: list[np.ndarray]
    statistic: uncertainty.Statistic
    folds: int = 1
    groups: np.ndarray | None = None
    # which test set the queries come from: cells of one test set (an image's i2t and t2i
    # queries, its captions in several languages) share a bootstrap draw, others do not
    test_set: str = ""

    @property
    def queries(self) -> int:
        return int(self.samples[0].shape[0])

    def same_queries(self, other: CellSamples) -> bool:
        """Scored on the same test queries of the same images, fold for fold."""
        if self.samples[0].shape != other.samples[0].shape or self.folds != other.folds:
            return False
        if (self.groups is None) != (other.groups is None):
            return False
        return self.groups is None or bool(np.array_equal(self.groups, other.groups))


# ----------------------------------------------------------------------------------------
# per-query outcomes of a cell


# every read goes through mlmm.outcomes.verified_outcomes: the outcomes must be the run's own
# and give its metrics, or the read is refused (a missing or foreign file is an error); a
# verified read is reused while neither file has changed (size and modification time)


def _outcomes(metrics_path: Path) -> dict | None:
    return _verified(metrics_path, "queries", *_stamps(metrics_path, "queries"))


def _decisions(result_path: Path) -> dict | None:
    return _verified(result_path, "documents", *_stamps(result_path, "documents"))


def _sentences(metrics_path: Path) -> dict | None:
    return _verified(metrics_path, "sentences", *_stamps(metrics_path, "sentences"))


def _stamps(metrics_path: Path, kind: str) -> tuple:
    def stamp(path: Path):
        try:
            found = path.stat()
        except OSError:
            return None
        return found.st_size, found.st_mtime_ns

    return stamp(Path(metrics_path)), stamp(outcomes_path(metrics_path, kind))


@functools.lru_cache(maxsize=256)
def _verified(metrics_path: Path, kind: str, *stamps) -> dict | None:
    return verified_outcomes(metrics_path, kind)


def run_samples(run: Run, language: str, direction: str, metric: str, dataset: str = ""):
    """One run's per-query outcomes of one cell as ``CellSamples`` (one seed), or None where
    the run kept none (alignment ratios, METEOR)."""
    if "ted" in run.metrics:
        return _ted_samples(run, metric)
    if direction == "mt":
        sentences = _sentences(run.path) if run.path is not None else None
        if sentences is None or metric not in sentences:
            return None
        from mlmm.nmt.metrics import corpus_statistic  # sacrebleu: only where MT cells are

        return CellSamples([sentences[metric]], corpus_statistic(metric), test_set="mt")
    outcomes = _outcomes(run.path) if run.path is not None else None
    if outcomes is None:
        return None
    if direction in ("i2t", "t2i"):
        ranks = outcomes["test"].get(language, {}).get(direction)
        groups = outcomes["image"]["test"].get(language, {}).get(direction)
        folds = outcomes["folds"]
    elif direction.startswith("t2t_"):
        a, b = direction[4:].split("2")
        ranks, folds = outcomes["c2c"].get(f"{a}-{b}"), 1
        groups = outcomes["image"]["c2c"].get(f"{a}-{b}")
    elif direction == "sts" and metric == "pearson":
        pair = outcomes["sts"].get(dataset)
        if pair is None:
            return None
        samples = np.stack([pair["predicted"], pair["gold"]], axis=1)
        return CellSamples([samples], uncertainty.pearson_statistic, test_set=f"sts {dataset}")
    else:
        return None
    if ranks is None or not (metric.startswith("R@") or metric in ("medr", "meanr")):
        return None
    statistic = uncertainty.rank_statistic(metric, folds)
    scale = run.metrics.get("recall_scale")  # Rajendran Table 5: recalls as fractions of 1
    if scale and metric.startswith("R@"):
        statistic = lambda r, s=statistic: scale * s(r)  # noqa: E731
    return CellSamples([ranks], statistic, folds, groups, "test images")


def _ted_samples(run: Run, metric: str):
    """A TED cell's per-document (predicted, gold) topic decisions, (documents, topics, 2),
    and the macro F1; None where the result kept none or its test language has several test
    sets (English: one per pair, of different sizes, its F1 a mean over them)."""
    decisions = _decisions(run.path) if run.path is not None else None
    sets = (decisions or {}).get(run.metrics["ted"]["test"])
    if metric != "F1" or not sets or len(sets) != 1:
        return None
    (found,) = sets.values()
    samples = np.stack([found["predicted"], found["gold"]], axis=-1)
    test = run.metrics["ted"]["test"]
    return CellSamples([samples], uncertainty.macro_f1_statistic, test_set=f"ted {test}")


def row_matches(
    row: dict, paper: str, table: int, system: str, variant_note: str, key: str = "table"
) -> bool:
    """``row`` is that paper row: of its table, or with ``key="figure"`` of its figure."""
    return (row["paper"], row.get(key), row["system"], row["variant_note"]) == (
        paper, table, system, variant_note,
    )  # fmt: skip


def mapped_runs(
    runs, paper: str, table: int, system: str, variant_note: str, key: str = "table"
) -> list[Run]:
    """The runs with a ``paper_rows`` entry for that paper row (of a figure: ``key="figure"``)."""
    return [
        run for run in runs
        if any(row_matches(r, paper, table, system, variant_note, key) for r in run.paper_rows)
    ]  # fmt: skip


def cell_samples(
    runs, paper: str, table: int, system: str, variant_note: str, cell: dict, key: str = "table"
) -> CellSamples | None:
    """Every seed's outcomes of one cell of a paper row (of a figure: ``key="figure"``); None
    when a run mapped onto the row kept none (an interval from some of the seeds would be too
    narrow) or the seeds were not scored on the same queries."""
    found: list[CellSamples] = []
    for run in runs:
        for row in run.paper_rows:
            if not row_matches(row, paper, table, system, variant_note, key):
                continue
            if row["languages"] and cell["language"] not in row["languages"]:
                continue
            if row.get("directions") and cell["direction"] not in row["directions"]:
                continue
            if cell["language"] not in _languages(run.metrics, cell["direction"]):
                continue
            one = run_samples(run, **cell)
            if one is None:
                return None
            found.append(one)
    if not found or not all(f.same_queries(found[0]) for f in found):
        return None
    first = found[0]
    return CellSamples(
        [f.samples[0] for f in found], first.statistic, first.folds, first.groups, first.test_set
    )


def _languages(metrics: dict, direction: str) -> set[str]:
    if direction in ("i2t", "t2i"):
        return set(metrics.get("test") or {})
    if direction.startswith("t2t_"):
        pairs = [p.split("-") for p in metrics.get("c2c") or {}]
        return {f"{a}-{b}" if a == "en" or (b != "en" and a < b) else f"{b}-{a}" for a, b in pairs}
    if direction == "sts":
        return {"en"} if metrics.get("sts") else set()
    if direction == "mt":
        return {NMT_LANGUAGE} if metrics.get("scores") else set()
    if "ted" in metrics:  # Rajendran Tables 1 (direction cldc) and 3 (none)
        return {metrics["ted"]["source"]}
    return set()


def add_intervals(frame: pd.DataFrame, runs, paper: str, table: int) -> pd.DataFrame:
    """``ours_low``, ``ours_high`` (95 % interval of ``ours``) and ``within_noise`` (the paper's
    number inside it: True/False; empty where either is missing) for every cell of a tidy
    results table."""
    low, high = [], []
    for record in frame.to_dict("records"):
        cell = {
            "language": record["language"],
            "direction": record["direction"],
            "metric": record["metric"],
            "dataset": str(record.get("dataset") or ""),
        }
        found = cell_samples(runs, paper, table, record["system"], record["variant_note"], cell)
        if found is None or pd.isna(record["ours"]):
            low.append(np.nan)
            high.append(np.nan)
            continue
        interval = uncertainty.cell_interval(
            found.samples, found.statistic, folds=found.folds, groups=found.groups
        )
        low.append(interval.low)
        high.append(interval.high)
    out = frame.assign(ours_low=low, ours_high=high)
    known = out[["ours_low", "paper"]].notna().all(axis=1)
    inside = (out["paper"] >= out["ours_low"]) & (out["paper"] <= out["ours_high"])
    out["within_noise"] = [bool(i) if k else None for i, k in zip(inside, known, strict=True)]
    return out
