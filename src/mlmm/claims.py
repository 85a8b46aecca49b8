"""Does the paper's claim hold? Bootstrap intervals on the retrieval tables' cells and a verdict
on every claim of a paper's registry, from the runs' per-query outcomes (``mlmm.outcomes``).

A cell of ours (system row x language x direction x metric) is the mean over the seeds of the
variants mapped onto that paper row (their ``paper_rows``); ``cell_samples`` collects each seed's
per-query outcomes of it, and ``mlmm.uncertainty`` puts the interval on it (``add_intervals``).

A claim (``resources/claims/<paper>.yaml``, one file per paper, README there) compares two rows
of one paper table on one metric: "``better`` beats ``than``", with the paper's section and its
own effect (read from the paper's table). Our effect is the paired difference on the same test
queries (``uncertainty.paired_difference``); the paper's claims are Holm-corrected together and
each gets a verdict:

- ``holds``: adjusted p < 0.05 and our effect has the paper's sign
- ``reversed``: adjusted p < 0.05 and our effect has the other sign
- ``not significant``: adjusted p >= 0.05
- ``not run``: the configuration runs no variant for one of the rows (or its runs kept no
  per-query outcomes, or the two rows were not scored on the same queries); the reason says which.
"""

from __future__ import annotations

import functools
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pandas as pd

from mlmm import uncertainty
from mlmm.errors import InputError
from mlmm.io import save_figure
from mlmm.origin import Origin, stamp_figure
from mlmm.outcomes import (
    decisions_path,
    queries_path,
    read_decisions,
    read_outcomes,
    read_sentence_statistics,
    sentences_path,
)
from mlmm.tables import load_paper_table, write_table

HIGHER_IS_BETTER = ("R@", "pearson", "BLEU", "chrF", "F1")
NMT_LANGUAGE = "en-de"  # Calixto & Liu Table 3 (mlmm.nmt.table)
BOOTSTRAP_NOTE = (
    "95 % intervals: percentile bootstrap, 1,000 replicates (seed 0), each drawing the test "
    "queries with replacement (within each fold; one draw shared by every seed and, for a "
    "difference, by both systems) and the seeds with replacement, and averaging the metric "
    "over the drawn seeds (mlmm.uncertainty). within_noise: the paper's number lies inside "
    "our interval (≈ in the cells; ≠ where it does not)."
)


# ----------------------------------------------------------------------------------------
# per-query outcomes of a cell


@functools.cache
def _outcomes(metrics_path: Path) -> dict | None:
    path = queries_path(metrics_path)
    return read_outcomes(path) if path.is_file() else None


@functools.cache
def _decisions(result_path: Path) -> dict | None:
    path = decisions_path(result_path)
    return read_decisions(path) if path.is_file() else None


@functools.cache
def _sentences(metrics_path: Path) -> dict | None:
    path = sentences_path(metrics_path)
    return read_sentence_statistics(path) if path.is_file() else None


def nmt_runs(paths) -> list:
    """``mlmm mt-score`` metrics.json files as runs of Calixto & Liu's Table 3 rows (their
    ``system`` and ``variant_note``), each with its sentences.npz beside it."""
    from mlmm.io import read_json_object
    from mlmm.report import Run

    runs = []
    for path in map(Path, paths):
        record = read_json_object(
            path, ("system", "variant_note"), "a metrics JSON written by `mlmm mt-score`"
        )
        row = {"paper": "calixto2017", "table": 3, "system": record["system"],
               "variant_note": record["variant_note"], "languages": None}  # fmt: skip
        seed = (record.get("provenance") or {}).get("seed") or 0
        runs.append(Run(path.parent.name, int(seed), record, [row], [], path))
    return runs


def ted_runs(cldc: list, nb=None) -> list:
    """``mlmm ted-classify`` results (and the ``ted-nb`` one) as runs of Rajendran et al.'s
    Tables 1 and 3: one run per (training, test language) cell, mapped onto the paper's row
    (``mlmm.ted.report`` spellings), its per-document decisions beside the result JSON."""
    from mlmm.io import read_json_object
    from mlmm.report import Run
    from mlmm.ted.report import NB_SYSTEM, PAPER, SYSTEM, mono_note

    results = [(SYSTEM, Path(p)) for p in cldc] + ([(NB_SYSTEM, Path(nb))] if nb else [])
    runs = []
    for system, path in results:
        record = read_json_object(path, ("f1",), "a result JSON of ted-classify or ted-nb")
        for target in record["f1"]:
            source = record.get("source", target)  # ted-nb: one language, tested on itself
            if target == source:
                row = {"table": 3, "variant_note": mono_note(source)}
            else:
                row = {"table": 1, "variant_note": f"test={target}"}
            row |= {"paper": PAPER, "system": system, "languages": [source]}
            metrics = {"ted": {"source": source, "test": target}, "f1": record["f1"][target]}
            runs.append(Run(f"{path.stem}:{target}", 0, metrics, [row], [], path))
    return runs


def pivot_runs(records: list[dict]) -> list:
    """Table 5 runs (``mlmm.pivot.table.read_runs``) as runs of its rows: the run chosen per
    model, language and direction (``pivot.table.choose``), its recalls as fractions of 1,
    its MIC test ranks in queries.npz beside its metrics.json."""
    from mlmm.pivot.table import PAPER, PAPER_MT_SYSTEM, SYSTEMS, _row_keys, choose
    from mlmm.report import Run

    runs = []
    for (model, language, direction), record in choose(records).items():
        note, lang = _row_keys(model, language)
        systems = [SYSTEMS[model]] + ([PAPER_MT_SYSTEM] if model == "mt" else [])
        rows = [
            {"paper": PAPER, "table": 5, "system": system, "variant_note": note,
             "languages": [lang], "directions": [direction]}
            for system in systems
        ]  # fmt: skip
        metrics = {"test": {lang: {direction: record["test"][direction]}}, "recall_scale": 0.01}
        runs.append(Run(f"{model}_{lang}_{direction}", 0, metrics, rows, [], Path(record["path"])))
    return runs


def run_samples(run, language: str, direction: str, metric: str, dataset: str = ""):
    """One run's per-query outcomes of one cell and the statistic of ``metric`` on them, or
    None where the run kept none (alignment ratios, METEOR, runs written before queries.npz)."""
    if "ted" in run.metrics:
        return _ted_samples(run, metric)
    if direction == "mt":
        sentences = _sentences(run.path) if run.path is not None else None
        if sentences is None or metric not in sentences:
            return None
        from mlmm.nmt.metrics import corpus_statistic  # sacrebleu: only where MT cells are

        return sentences[metric], corpus_statistic(metric)
    outcomes = _outcomes(run.path) if run.path is not None else None
    if outcomes is None:
        return None
    if direction in ("i2t", "t2i"):
        ranks = outcomes["test"].get(language, {}).get(direction)
        folds = outcomes["folds"]
    elif direction.startswith("t2t_"):
        a, b = direction[4:].split("2")
        ranks, folds = outcomes["c2c"].get(f"{a}-{b}"), 1
    elif direction == "sts" and metric == "pearson":
        pair = outcomes["sts"].get(dataset)
        if pair is None:
            return None
        return np.stack([pair["predicted"], pair["gold"]], axis=1), uncertainty.pearson_statistic
    else:
        return None
    if ranks is None or not (metric.startswith("R@") or metric in ("medr", "meanr")):
        return None
    statistic = uncertainty.rank_statistic(metric, folds)
    scale = run.metrics.get("recall_scale")  # Rajendran Table 5: recalls as fractions of 1
    if scale and metric.startswith("R@"):
        return ranks, lambda r, s=statistic: scale * s(r)
    return ranks, statistic


def _ted_samples(run, metric: str):
    """A TED cell's per-document (predicted, gold) topic decisions, (documents, topics, 2),
    and the macro F1; None where the result kept none or its test language has several test
    sets (English: one per pair, of different sizes, its F1 a mean over them)."""
    decisions = _decisions(run.path) if run.path is not None else None
    sets = (decisions or {}).get(run.metrics["ted"]["test"])
    if metric != "F1" or not sets or len(sets) != 1:
        return None
    (found,) = sets.values()
    return np.stack([found["predicted"], found["gold"]], axis=-1), uncertainty.macro_f1_statistic


def cell_samples(runs, paper: str, table: int, system: str, variant_note: str, cell: dict):
    """Every seed's outcomes of one cell of a paper row, and the statistic; None when a run
    mapped onto the row kept none (an interval from some of the seeds would be too narrow)."""
    samples, statistic = [], None
    for run in runs:
        for row in run.paper_rows:
            if (row["paper"], row.get("table"), row["system"], row["variant_note"]) != (
                paper,
                table,
                system,
                variant_note,
            ):
                continue
            if row["languages"] and cell["language"] not in row["languages"]:
                continue
            if row.get("directions") and cell["direction"] not in row["directions"]:
                continue
            if cell["language"] not in _languages(run.metrics, cell["direction"]):
                continue
            found = run_samples(run, **cell)
            if found is None:
                return None
            samples.append(found[0])
            statistic = found[1]
    if not samples or len({s.shape for s in samples}) != 1:
        return None
    return samples, statistic


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
    retrieval table."""
    low, high = [], []
    for record in frame.to_dict("records"):
        cell = {
            "language": record["language"],
            "direction": record["direction"],
            "metric": record["metric"],
            "dataset": str(record.get("dataset") or ""),
        }
        found = cell_samples(
            runs, paper, table, record["system"], record["variant_note"], cell
        )
        if found is None or pd.isna(record["ours"]):
            low.append(np.nan)
            high.append(np.nan)
            continue
        interval = uncertainty.cell_interval(*found)
        low.append(interval.low)
        high.append(interval.high)
    out = frame.assign(ours_low=low, ours_high=high)
    known = out[["ours_low", "paper"]].notna().all(axis=1)
    inside = (out["paper"] >= out["ours_low"]) & (out["paper"] <= out["ours_high"])
    out["within_noise"] = [bool(i) if k else None for i, k in zip(inside, known, strict=True)]
    return out


# ----------------------------------------------------------------------------------------
# the claims registry


@dataclass(frozen=True)
class Claim:
    id: str
    finding: str
    section: str
    table: int
    language: str
    direction: str
    metric: str
    better: tuple[str, str]  # (system, variant_note) as in the paper's CSV
    than: tuple[str, str]
    dataset: str = ""
    # a row's own language where the two differ (Rajendran Table 5: the En-Image CorrNet's
    # English captions against the Bridge CorrNet's French ones, on the same MIC images)
    row_languages: tuple[str, str] = ("", "")

    @property
    def cell(self) -> dict:
        return {
            "language": self.language,
            "direction": self.direction,
            "metric": self.metric,
            "dataset": self.dataset,
        }

    def side_cell(self, side: int) -> dict:
        """The cell of the ``better`` (0) or ``than`` (1) row."""
        return self.cell | {"language": self.row_languages[side] or self.language}


CLAIM_KEYS = {"id", "finding", "section", "table", "language", "direction", "metric", "better",
              "than"}  # fmt: skip


def load_claims(path: str | Path) -> tuple[str, list[Claim]]:
    """The paper and its claims from ``<paper>.yaml``; InputError naming the claim and key."""
    from mlmm.io import read_yaml

    path = Path(path)
    loaded = read_yaml(path, "a YAML claims registry")
    if not isinstance(loaded, dict) or not isinstance(loaded.get("claims"), list):
        raise InputError(path, "a mapping with 'paper' and a list 'claims'", repr(loaded)[:80])
    claims = []
    for number, entry in enumerate(loaded["claims"], start=1):
        where = f"claims[{number}]"
        if not isinstance(entry, dict) or not set(entry) >= CLAIM_KEYS:
            missing = sorted(CLAIM_KEYS - set(entry or {}))
            raise InputError(path, f"{where} with keys {sorted(CLAIM_KEYS)}", f"no {missing}")
        rows, languages = [], []
        for side in ("better", "than"):
            row = entry[side]
            if not isinstance(row, dict) or "system" not in row:
                raise InputError(path, "{system, variant_note}", repr(row), key=f"{where}.{side}")
            rows.append((str(row["system"]), str(row.get("variant_note") or "")))
            languages.append(str(row.get("language") or ""))
        if not str(entry["metric"]).startswith(HIGHER_IS_BETTER):
            raise InputError(
                path, "a metric where higher is better (R@K, pearson, BLEU, chrF, F1)",
                entry["metric"], key=f"{where}.metric",
            )  # fmt: skip
        claims.append(
            Claim(
                id=str(entry["id"]),
                finding=str(entry["finding"]),
                section=str(entry["section"]),
                table=int(entry["table"]),
                language=str(entry["language"]),
                direction=str(entry["direction"]),
                metric=str(entry["metric"]),
                better=rows[0],
                than=rows[1],
                dataset=str(entry.get("dataset") or ""),
                row_languages=(languages[0], languages[1]),
            )
        )
    ids = [c.id for c in claims]
    if len(set(ids)) != len(ids):
        repeated = sorted({i for i in ids if ids.count(i) > 1})
        raise InputError(path, "unique claim ids", f"repeated {repeated}")
    return str(loaded.get("paper") or path.stem), claims


def paper_effect(paper_tables: Path | None, paper: str, claim: Claim) -> float:
    """The paper's own effect: its ``better`` row minus its ``than`` row in its table."""
    frame = load_paper_table(paper_tables, paper, claim.table)
    if frame is None:
        return np.nan
    values = []
    for side, (system, note) in enumerate((claim.better, claim.than)):
        hit = frame[
            (frame.system == system)
            & (frame.variant_note == note)
            & (frame.language.fillna("") == claim.side_cell(side)["language"])
            & (frame.direction == claim.direction)
            & (frame.metric == claim.metric)
        ]
        if claim.dataset:
            hit = hit[hit.dataset.str.contains(claim.dataset, regex=False)]
        if len(hit) != 1:
            raise InputError(
                f"{paper}_table{claim.table}.csv",
                f"one cell for claim {claim.id!r}: {system} [{note}] {claim.cell}",
                f"{len(hit)} cells",
            )
        values.append(float(hit["value"].iloc[0]))
    return values[0] - values[1]


def _reason(runs, paper: str, claim: Claim) -> tuple[str, tuple | None, tuple | None]:
    """Why a claim cannot be tested ('' when it can), and both rows' samples."""
    found = []
    for side, (system, note) in enumerate((claim.better, claim.than)):
        mapped = [
            run for run in runs
            if any((r["paper"], r.get("table"), r["system"], r["variant_note"])
                   == (paper, claim.table, system, note) for r in run.paper_rows)
        ]  # fmt: skip
        if not mapped:
            return f"no configured variant runs the row {system!r}", None, None
        samples = cell_samples(runs, paper, claim.table, system, note, claim.side_cell(side))
        if samples is None:
            return f"the runs of {system!r} kept no per-query outcomes of this cell", None, None
        found.append(samples)
    if found[0][0][0].shape != found[1][0][0].shape:
        return "the two rows were not scored on the same test queries", None, None
    return "", found[0], found[1]


def evaluate_claims(
    runs, paper: str, claims: list[Claim], paper_tables: Path | None
) -> pd.DataFrame:
    """One row per claim: the paper's effect, ours with its paired interval, p, Holm p, and
    the verdict."""
    rows = []
    for claim in claims:
        reason, better, than = _reason(runs, paper, claim)
        row = {
            "claim": claim.id,
            "finding": claim.finding,
            "section": claim.section,
            "table": claim.table,
            "language": claim.language,
            "direction": claim.direction,
            "metric": claim.metric,
            "better": claim.better[0],
            "than": claim.than[0],
            "paper_effect": round(paper_effect(paper_tables, paper, claim), 6),
            "our_effect": np.nan,
            "effect_low": np.nan,
            "effect_high": np.nan,
            "p": np.nan,
            "seeds_better": 0,
            "seeds_than": 0,
            "reason": reason,
        }
        if not reason:
            diff = uncertainty.paired_difference(better[0], than[0], better[1])
            row.update(
                our_effect=diff.value,
                effect_low=diff.low,
                effect_high=diff.high,
                p=diff.p,
                seeds_better=len(better[0]),
                seeds_than=len(than[0]),
            )
        rows.append(row)
    frame = pd.DataFrame(rows)
    if frame.empty:
        return frame
    frame["p_holm"] = uncertainty.holm(frame["p"].to_numpy())
    frame["verdict"] = [verdict(*values) for values in zip(
        frame.our_effect, frame.paper_effect, frame.p_holm, strict=True)]  # fmt: skip
    columns = [c for c in frame.columns if c not in ("reason",)] + ["reason"]
    return frame[columns]


def verdict(ours: float, paper: float, p_holm: float) -> str:
    """holds / reversed / not significant / not run (module docstring); the paper's sign is
    the claim's direction (``better`` beats ``than``) unless the paper reports a tie or worse."""
    if pd.isna(ours) or pd.isna(p_holm):
        return "not run"
    if p_holm >= uncertainty.ALPHA:
        return "not significant"
    claimed = 1.0 if pd.isna(paper) or paper == 0 else np.sign(paper)
    return "holds" if np.sign(ours) == claimed else "reversed"


def claims_figure(frame: pd.DataFrame, title: str, stem: Path, origin: Origin) -> list[Path]:
    """Our effect with its 95 % paired interval beside the paper's effect, one line a claim."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    height = 1.2 + 0.42 * max(1, len(frame))
    fig, ax = plt.subplots(figsize=(8, height), layout="constrained")
    y = np.arange(len(frame))[::-1]
    ran = frame["our_effect"].notna().to_numpy()
    err = np.vstack([frame.our_effect - frame.effect_low, frame.effect_high - frame.our_effect])
    ax.errorbar(frame.our_effect[ran], y[ran], xerr=err[:, ran], fmt="o", c="C0", capsize=3,
                label="ours (95 % paired interval)")  # fmt: skip
    ax.plot(frame.paper_effect, y, "D", c="C3", label="paper")
    ax.axvline(0, c="0.5", lw=0.8)
    labels = [
        f"{c} ({m} {d} {la}): {v}"
        for c, m, d, la, v in zip(frame.claim, frame.metric, frame.direction, frame.language,
                                  frame.verdict, strict=True)
    ]  # fmt: skip
    ax.set_yticks(y, labels, fontsize=7)
    ax.set_xlabel("effect: better row minus the other row (metric points)")
    # room under the axes for the origin sentence (stamp_figure), which the layout ignores
    fig.get_layout_engine().set(rect=(0, 0.45 / height, 1, 1 - 0.45 / height))
    ax.legend(frameon=False, fontsize=8, loc="best")
    fig.suptitle(title)
    stamp_figure(fig, origin)
    paths = save_figure(fig, stem)
    plt.close(fig)
    return paths


def write_claims(
    runs,
    registry: Path,
    paper_tables: Path | None,
    tables: Path,
    figures: Path,
    title: str | None = None,
) -> list[Path]:
    """``tables/<paper>_claims.{csv,md,tex,html}`` and ``figures/<paper>_claims.{png,pdf}``."""
    paper, claims = load_claims(registry)
    frame = evaluate_claims(runs, paper, claims, paper_tables)
    used = [run.metrics for run in runs if any(r["paper"] == paper for r in run.paper_rows)]
    origin = Origin.of_runs(used or [run.metrics for run in runs])
    title = title or f"{paper}: the paper's claims on our runs"
    counts = frame["verdict"].value_counts().to_dict() if not frame.empty else {}
    notes = [
        "effect = better row minus the other row; paper_effect from the paper's table; "
        "our_effect = the same difference of our cells (means over seeds).",
        BOOTSTRAP_NOTE,
        "p: two-sided paired bootstrap (centred replicates at least as far from 0 as the "
        "observed difference); p_holm: Holm-corrected over this paper's claims that ran.",
        "verdict: holds / reversed (p_holm < 0.05, our effect with / against the paper's "
        "sign), not significant, not run (reason column).",
        "verdicts: " + ", ".join(f"{k} {v}" for k, v in sorted(counts.items())),
        f"registry: {registry.name}",
    ]
    paths = write_table(frame, Path(tables) / f"{paper}_claims", title, notes, origin)
    paths += claims_figure(frame, title, Path(figures) / f"{paper}_claims", origin)
    return paths
