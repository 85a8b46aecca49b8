"""Result tables beside the papers' own numbers: a tidy CSV for programs, and for people the
paper's own shape as Markdown, LaTeX and an HTML page.

The papers' numbers are read from a directory of tidy CSV files (one file per paper table, schema
``paper,table,system,variant_note,dataset,language,direction,metric,value,source_note``). The
repository ships them in ``resources/paper_tables`` (the config key ``paper_tables`` can point
elsewhere); a table is still written, with an empty paper column and a note saying so, when a
paper's file is absent.

The tidy table has one row per cell (system x language x direction x metric); ``paper_shape``
turns it into one row per system with the paper's columns, every cell "ours ± std (paper, Δ)",
using the table's ``mlmm.catalogue`` layout. Every table of the four papers goes through it.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd

from mlmm.errors import InputError
from mlmm.io import write_text
from mlmm.origin import Origin

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


# Metrics whose values are whole numbers (ranks, vocabulary sizes): no decimals when whole,
# one when a mean over seeds is not.
WHOLE_METRICS = {"medr", "vocab_total", "vocab_union", "count"}


def format_number(value: float, metric: str | None = None) -> str:
    """One rule per kind of number: ranks and counts whole, fractions (F1, Pearson, Jaccard,
    Rajendran's recall fractions) three decimals, percentages (recall, BLEU, METEOR, TER) two."""
    if pd.isna(value):
        return ""
    if metric in WHOLE_METRICS:
        return f"{value:.0f}" if float(value).is_integer() else f"{value:.1f}"
    if abs(value) < 1:
        return f"{value:.3f}"
    if float(value).is_integer() and abs(value) >= 1000:
        return f"{value:.0f}"
    return f"{value:.2f}"


DIRECTION_NAMES = {
    "i2t": "image→text",
    "t2i": "text→image",
    "t2t_en2de": "en→de",
    "t2t_de2en": "de→en",
    "cldc": "",
    "mt": "",
    "sts": "",
}
ROW_HEADERS = {"variant_note": "paper's row label"}
CELL_NOTE = (
    "Cells: ours (paper, ours − paper); ours is the mean ± standard deviation over seeds where "
    "there are several; – where we have no number. The tidy CSV beside this file has every "
    "cell with its own columns."
)


def _signed(value: float, like: float, metric: str | None = None) -> str:
    """A difference, with as many decimals as the number it is the difference of."""
    if metric in WHOLE_METRICS:
        text = format_number(abs(value), metric)
    else:
        text = f"{abs(value):.3f}" if abs(like) < 1 else f"{abs(value):.2f}"
    return ("−" if value < 0 else "+") + text


def cell_text(ours: float, std: float, runs: float, paper: float, metric: str | None = None) -> str:
    """'41.20 ± 0.50 (42.40, −1.20)': ours, its spread over seeds, the paper, the difference,
    all in the one format of ``metric``."""
    if pd.isna(ours) and pd.isna(paper):
        return ""
    text = "–" if pd.isna(ours) else format_number(ours, metric)
    if not pd.isna(ours) and not pd.isna(runs) and runs > 1:
        text += f" ± {format_number(std, metric)}"
    if not pd.isna(paper):
        text += f" ({format_number(paper, metric)}" + (
            ")" if pd.isna(ours) else f", {_signed(ours - paper, paper, metric)})"
        )
    return text


def interval_marks(frame: pd.DataFrame) -> pd.Series:
    """' [low, high] ≈' after a cell with a 95 % interval (``ours_low``, ``ours_high``;
    ``mlmm.claims.add_intervals``): ≈ where the paper's number lies inside it
    (``within_noise``), ≠ where it does not; nothing for cells without an interval."""
    if "ours_low" not in frame:
        return pd.Series("", index=frame.index)
    marks = {True: " ≈", False: " ≠"}
    return pd.Series(
        [
            ""
            if pd.isna(low)
            else f" [{format_number(low, m)}, {format_number(high, m)}]{marks.get(inside, '')}"
            for low, high, inside, m in zip(
                frame["ours_low"], frame["ours_high"], frame["within_noise"], frame["metric"],
                strict=True,
            )
        ],
        index=frame.index,
    )


def paper_shape(frame: pd.DataFrame, stem: str) -> pd.DataFrame | None:
    """The tidy table in the paper's shape: one row per system (the layout's ``rows``), the
    paper's columns (``columns``: language, direction, metric, ...), one text cell each; None
    for a table with no numbers beside a paper's (e.g. Rajendran's Table 4 word lists)."""
    from mlmm.catalogue import layout

    if not {"ours", "paper"} <= set(frame.columns) or frame.empty:
        return None
    shape = layout(Path(stem).name)
    frame = frame.copy()
    keys = [c for c in dict.fromkeys((*shape.rows, *shape.columns, *KEYS)) if c in frame.columns]
    for key in keys:
        frame[key] = frame[key].fillna("").astype(str)
    varies = {key: frame[key].nunique() > 1 for key in keys}
    rows = [c for c in shape.rows if c in frame.columns and (varies[c] or c == "system")]
    columns = [c for c in shape.columns if c in frame.columns and varies[c]] or ["metric"]
    for key in KEYS:  # a layout never hides two cells behind one: add keys until unique
        if frame.duplicated([*rows, *columns]).any() and key not in (*rows, *columns):
            rows.append(key)
    std = frame["ours_std"] if "ours_std" in frame else pd.Series(np.nan, index=frame.index)
    runs = frame["runs"] if "runs" in frame else pd.Series(1.0, index=frame.index)
    metric = frame["metric"] if "metric" in frame else pd.Series(None, index=frame.index)
    frame["cell"] = [
        cell_text(*values)
        for values in zip(frame["ours"], std, runs, frame["paper"], metric, strict=True)
    ]
    frame["cell"] = frame["cell"] + interval_marks(frame)
    wide = frame.pivot_table(
        index=rows, columns=columns, values="cell", aggfunc="first", sort=False
    ).fillna("")
    wide.columns = wide.columns.map(
        lambda key: tuple(DIRECTION_NAMES.get(v, v) for v in (key if len(columns) > 1 else (key,)))
    )
    wide.columns.names = columns
    return wide


def _flat(wide: pd.DataFrame) -> pd.DataFrame:
    """Row keys as columns and one-line column headers (Markdown has one header row)."""
    flat = wide.copy()
    flat.columns = [" ".join(v for v in key if v) or "value" for key in flat.columns]
    return flat.reset_index()


def _markdown_cells(flat: pd.DataFrame) -> pd.DataFrame:
    """Cells and headers with ``|`` escaped (``log p(Y|X)``), which would start a new column."""
    escaped = flat.rename(columns=lambda c: str(c).replace("|", r"\|"))
    return escaped.map(lambda v: v.replace("|", r"\|") if isinstance(v, str) else v)


def _html_page(title: str, table_html: str, notes: list[str]) -> str:
    from html import escape

    items = "".join(f"<li>{escape(note)}</li>" for note in notes)
    return (
        '<!DOCTYPE html>\n<html lang="en"><head><meta charset="utf-8">'
        f"<title>{escape(title)}</title><style>"
        "body{font-family:sans-serif;margin:1.5em}table{border-collapse:collapse;font-size:90%}"
        "th,td{border:1px solid #ccc;padding:.25em .5em;text-align:right}"
        "th{background:#f3f3f3}td:first-child,th:first-child{text-align:left}"
        f"</style></head><body><h1>{escape(title)}</h1>\n{table_html}\n<ul>{items}</ul>"
        "</body></html>\n"
    )


def write_table(
    frame: pd.DataFrame,
    stem: str | Path,
    title: str,
    notes: list[str],
    origin: Origin | None = None,
) -> list[Path]:
    """Write ``stem``.csv (tidy, for programs) and ``stem``.md, .tex, .html in the paper's shape
    (``paper_shape``; tables that are not beside a paper's are written as they are); the notes
    go under the Markdown and HTML tables and into the LaTeX as comments.

    ``origin`` (default: this job's, `Origin.current`) is said in all four: '[demo world]' in
    the title and a first note naming data, configuration and backbones; the CSV's columns
    ``data``, ``configs``, ``backbone``."""
    origin = origin or Origin.current()
    title, notes = origin.title(title), [origin.note(), *notes]
    stem = Path(stem)
    paths = [stem.with_suffix(s) for s in (".csv", ".md", ".tex", ".html")]
    csv_path, md_path, tex_path, html_path = paths
    write_text(csv_path, frame.assign(**origin.columns()).to_csv(index=False))
    wide = paper_shape(frame, stem.name)
    if wide is None:
        shown = frame.copy()
        for column in shown.columns:
            values = shown[column]
            if pd.api.types.is_float_dtype(values):
                whole = values.dropna().map(float.is_integer).all()  # counts: no decimals
                shown[column] = values.map(
                    lambda v, w=whole: format_number(v, "count" if w else None)
                )
        flat, latex_frame, html = shown, shown, shown.to_html(index=False, na_rep="")
    else:
        notes = [notes[0], CELL_NOTE, *notes[1:]]
        # the paper's label of a row (the key to its cells), not a description of our run
        wide.index.names = [ROW_HEADERS.get(n, n) for n in wide.index.names]
        flat, latex_frame = _flat(wide), wide
        html = wide.to_html(na_rep="", sparsify=True)
    markdown = [
        f"# {title}",
        "",
        _markdown_cells(flat).to_markdown(index=False, disable_numparse=True),
        "",
    ]
    markdown += [f"- {note}" for note in notes]
    write_text(md_path, "\n".join(markdown) + "\n")
    latex = latex_frame.to_latex(
        index=wide is not None,
        caption=title,
        escape=True,
        multicolumn=True,
        multicolumn_format="c",
    )
    latex = latex.replace("±", r"$\pm$").replace("−", "$-$").replace("–", "--")
    latex = latex.replace("→", r"$\rightarrow$")
    latex = latex.replace("≈", r"$\approx$").replace("≠", r"$\neq$")
    latex += "".join(f"% {note}\n" for note in notes)
    write_text(tex_path, latex)
    write_text(html_path, _html_page(title, html, notes))
    return paths
