"""Result tables beside the papers' own numbers, written as CSV, Markdown and LaTeX.

The papers' numbers are read from a directory of tidy CSV files (one file per paper table, schema
``paper,table,system,variant_note,dataset,language,direction,metric,value,source_note``). The
repository does not ship them: the config key ``paper_tables`` points at them, and a table is
still written, with an empty paper column and a note saying so, when they are absent.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd

from mlmm.errors import InputError
from mlmm.io import write_text

KEYS = ["system", "variant_note", "language", "direction", "metric"]
PAPER_COLUMNS = ["paper", "table", *KEYS[:2], "dataset", *KEYS[2:], "value", "source_note"]


def load_paper_table(
    paper_tables: str | Path | None, paper: str, table: int
) -> pd.DataFrame | None:
    """The paper's cells of one table, or None when no paper-table directory is available."""
    if paper_tables is None or not Path(paper_tables).is_dir():
        return None
    path = Path(paper_tables) / f"{paper}_table{table}.csv"
    if not path.is_file():
        return None
    frame = pd.read_csv(path, dtype=str, keep_default_na=False)
    missing = [c for c in PAPER_COLUMNS if c not in frame.columns]
    if missing:
        raise InputError(path, f"columns {PAPER_COLUMNS}", f"no column(s) {missing}")
    frame["value"] = pd.to_numeric(frame["value"].replace("", np.nan))
    return frame


def summarise_runs(runs: pd.DataFrame, value: str = "value") -> pd.DataFrame:
    """Mean, standard deviation and count over seeds for every (system, ..., metric) cell."""
    grouped = runs.groupby(KEYS, dropna=False, sort=False)[value]
    out = grouped.agg(ours="mean", ours_std="std", runs="count").reset_index()
    out["ours_std"] = out["ours_std"].fillna(0.0)
    return out


def beside_paper(ours: pd.DataFrame, paper: pd.DataFrame | None) -> pd.DataFrame:
    """Outer-join our summarised cells with the paper's; ``diff`` = ours - paper.

    Paper rows without a counterpart of ours (numbers the paper quotes from earlier work) stay
    in the table as references; our rows the paper does not report keep an empty paper column.
    """
    ours = ours.copy()
    for key in KEYS:
        ours[key] = ours[key].fillna("").astype(str)
    if paper is None:
        merged = ours.assign(paper=np.nan)
    else:
        cells = paper[KEYS + ["value"]].rename(columns={"value": "paper"})
        merged = cells.merge(ours, on=KEYS, how="outer", sort=False)
    merged["diff"] = merged["ours"] - merged["paper"]
    columns = KEYS + ["paper", "ours", "ours_std", "runs", "diff"]
    return merged.reindex(columns=columns)


def format_number(value: float) -> str:
    """Fractions (F1, Pearson, Jaccard) keep three decimals, recalls two, counts none."""
    if pd.isna(value):
        return ""
    if abs(value) < 1:
        return f"{value:.3f}"
    if float(value).is_integer() and abs(value) >= 1000:
        return f"{value:.0f}"
    return f"{value:.2f}"


def write_table(frame: pd.DataFrame, stem: str | Path, title: str, notes: list[str]) -> list[Path]:
    """Write ``stem``.csv, .md and .tex; the notes go under the Markdown table and into LaTeX."""
    stem = Path(stem)
    csv_path, md_path, tex_path = (stem.with_suffix(s) for s in (".csv", ".md", ".tex"))
    write_text(csv_path, frame.to_csv(index=False))
    shown = frame.copy()
    for column in shown.columns:
        if pd.api.types.is_float_dtype(shown[column]):
            shown[column] = shown[column].map(format_number)
    markdown = [f"# {title}", "", shown.to_markdown(index=False), ""]
    markdown += [f"- {note}" for note in notes]
    write_text(md_path, "\n".join(markdown) + "\n")
    latex = shown.to_latex(index=False, caption=title, escape=True)
    latex += "".join(f"% {note}\n" for note in notes)
    write_text(tex_path, latex)
    return [csv_path, md_path, tex_path]
