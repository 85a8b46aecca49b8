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

import re
from pathlib import Path

import numpy as np
import pandas as pd

from mlmm.catalogue import TABLE_SUFFIXES
from mlmm.cells import (
    BLANK,
    CELL_NOTE,
    DIRECTION_NAMES,
    KEYS,
    ROW_HEADERS,
    column_decimals,
    decimals,
    format_number,
    shape_keys,
)
from mlmm.errors import InputError
from mlmm.io import read_csv, write_text
from mlmm.origin import Origin

PAPER_COLUMNS = ["paper", "table", *KEYS[:2], "dataset", *KEYS[2:], "value", "source_note"]


# Where a table command reads the papers' tables: a directory of <paper>_table<N>.csv, the CSV
# files themselves (the workflow passes a configured directory's files, its rules' inputs), or
# None (no paper column).
PaperTables = str | Path | tuple[Path, ...] | None


def paper_tables_option(values: list[str | Path] | None) -> PaperTables:
    """The papers' tables a command's ``--paper-tables`` names (``nargs='*'``): not given, the
    tables the package ships (``mlmm.shipped``); one directory; CSV files named
    ``<paper>_table<N>.csv``; given with nothing, none (the paper columns stay empty)."""
    from mlmm.shipped import paper_tables

    if values is None:
        return paper_tables()
    paths = [Path(value) for value in values]
    if not paths:
        return None
    if len(paths) == 1 and paths[0].is_dir():
        return paths[0]
    for path in paths:
        if not _TABLE_FILE.fullmatch(path.name):
            expected = "paper tables named <paper><year>_table<N>.csv, or one directory of them"
            found = repr(path.name) if path.exists() else "no such file or directory"
            raise InputError(path, expected, found, key="--paper-tables")
    return tuple(paths)


def paper_tables_paths(paper_tables: PaperTables) -> list[Path]:
    """The paths of ``paper_tables`` (a directory, or its files): inputs for the write guard."""
    if paper_tables is None:
        return []
    if isinstance(paper_tables, tuple | list):
        return [Path(path) for path in paper_tables]
    return [Path(paper_tables)]


def paper_table_file(paper_tables: PaperTables, paper: str, table: int) -> Path | None:
    """The CSV of the paper's ``table`` among ``paper_tables``, or None where there is none."""
    name = f"{paper}_table{table}.csv"
    if paper_tables is None:
        return None
    if isinstance(paper_tables, tuple | list):
        return next((Path(p) for p in paper_tables if Path(p).name == name), None)
    path = Path(paper_tables) / name
    return path if path.is_file() else None


def load_paper_table(paper_tables: PaperTables, paper: str, table: int) -> pd.DataFrame | None:
    """The paper's cells of one table, or None when ``paper_tables`` (a directory or CSV
    files) has no such table.

    The file is checked as it is read (``read_paper_table``): a wrong value is an InputError
    naming the file and line, never a number in a table or a verdict."""
    path = paper_table_file(paper_tables, paper, table)
    return None if path is None else read_paper_table(path)


# What a paper table's cells may hold, per metric: (low, high) for numbers, None for words.
# Recalls are per cent except where a paper prints them as fractions of 1 (PAPER_DECIMALS'
# papers); median and mean ranks start at 1; counts are whole numbers.
_RECALLS = tuple(f"R@{k}" for k in (1, 5, 10, 50))
METRIC_RANGES: dict[str, tuple[float, float] | None] = {
    **{metric: (0.0, 100.0) for metric in _RECALLS},
    "medr": (1.0, np.inf),
    "meanr": (1.0, np.inf),
    "alignment": (0.0, 100.0),
    "pearson": (-1.0, 1.0),
    "BLEU": (0.0, 100.0),
    "METEOR": (0.0, 100.0),
    "chrF": (0.0, 100.0),
    "TER": (0.0, np.inf),
    "jaccard": (0.0, 1.0),
    "F1": (0.0, 1.0),
    **{metric: (0.0, np.inf) for metric in ("vocab_size", "vocab_total", "vocab_union", "count")},
    "neighbour": None,  # Rajendran Table 4: a word
}
WHOLE_METRICS = ("medr", "vocab_size", "vocab_total", "vocab_union", "count")
FRACTION_RECALL_PAPERS = ("rajendran2016",)
DIRECTIONS = ("", "i2t", "t2i", "t2t_en2de", "t2t_de2en", "cldc", "mt", "sts")
_NUMBER = re.compile(r"[+-]?(\d+(\.\d*)?|\.\d+)([eE][+-]?\d+)?")
_TABLE_FILE = re.compile(r"([a-z]+\d{4})_table(\d+)\.csv")


def metric_range(paper: str, metric: str) -> tuple[float, float] | None:
    """The values ``metric`` may take in ``paper``'s tables (``METRIC_RANGES``)."""
    if metric in _RECALLS and paper in FRACTION_RECALL_PAPERS:
        return (0.0, 1.0)
    return METRIC_RANGES[metric]


def _cell_value(text: str, paper: str, metric: str) -> str | None:
    """What is wrong with one cell's value (None when it is fine); '' is a cell the paper
    leaves empty."""
    if text == "":
        return None
    bounds = metric_range(paper, metric)
    if bounds is None:
        return None if text.strip() else "a blank word"
    if not _NUMBER.fullmatch(text.strip()):
        if text.strip().lower().lstrip("+-") in ("inf", "infinity"):
            why = "not finite"
        elif re.fullmatch(r"[+-]?\d+,\d+", text.strip()):
            why = "a decimal comma"
        elif text.strip().endswith("%"):
            why = "a per cent sign"
        else:
            why = "not a number; leave the cell empty where the paper prints none"
        return f"value {text!r} ({why})"
    number = float(text)
    low, high = bounds
    if not np.isfinite(number):
        return f"value {text!r} (not finite)"
    if not low <= number <= high:
        return f"value {text!r} (outside [{low:g}, {high:g}] for {metric} in {paper})"
    if metric in WHOLE_METRICS and not number.is_integer():
        return f"value {text!r} (not a whole number, as {metric} is)"
    return None


def read_paper_table(path: str | Path) -> pd.DataFrame:
    """One paper table CSV (``<paper>_table<N>.csv``), checked before any number is used:
    the columns ``PAPER_COLUMNS``; every row of this paper and table (no repeated header);
    known metrics and directions; every value a finite number in its metric's range
    (``METRIC_RANGES``; a decimal comma, a per cent sign, NA or nan refused; an empty value
    is a cell the paper leaves empty) or a word where the metric is one; one row per cell.
    Anything else is an InputError naming the file and line (the header is line 1).
    ``value`` comes back numeric, except in a table of words."""
    path = Path(path)
    named = _TABLE_FILE.fullmatch(path.name)
    if named is None:
        raise InputError(path, "a paper table named <paper><year>_table<N>.csv", path.name)
    paper, table = named.group(1), named.group(2)
    frame = read_csv(path, "a paper table CSV", dtype=str, keep_default_na=False)
    missing = [c for c in PAPER_COLUMNS if c not in frame.columns]
    if missing:
        raise InputError(path, f"columns {PAPER_COLUMNS}", f"no column(s) {missing}")
    if frame.empty:
        raise InputError(path, "at least one row of the paper's cells", "a header only")
    seen: dict[tuple[str, ...], int] = {}
    for index, row in enumerate(frame.itertuples(index=False), start=2):
        row = row._asdict()
        if [row.get(c) for c in PAPER_COLUMNS] == PAPER_COLUMNS:
            raise InputError(path, "one header line", "the header repeated", line=index)
        if row["paper"] != paper or row["table"].strip() != table:
            found = f"paper {row['paper']!r}, table {row['table']!r}"
            raise InputError(path, f"paper {paper!r}, table {table} (the file's name)", found,
                             line=index)  # fmt: skip
        if not row["system"].strip():
            raise InputError(path, "a system name", "an empty one", line=index, key="system")
        metric = row["metric"]
        if metric not in METRIC_RANGES:
            known = ", ".join(METRIC_RANGES)
            raise InputError(path, f"a metric of {known}", repr(metric), line=index, key="metric")
        if row["direction"] not in DIRECTIONS:
            known = ", ".join(repr(d) for d in DIRECTIONS)
            found = repr(row["direction"])
            raise InputError(path, f"a direction of {known}", found, line=index, key="direction")
        wrong = _cell_value(row["value"], paper, metric)
        if wrong is not None:
            bounds = metric_range(paper, metric)
            expected = "a word" if bounds is None else (
                f"a finite number in [{bounds[0]:g}, {bounds[1]:g}] or an empty cell"
            )
            raise InputError(path, expected, wrong, line=index, key="value")
        cell = tuple(row[k] for k in (*KEYS, "dataset"))
        if cell in seen:
            raise InputError(path, "one row per cell (system, variant_note, dataset, "
                             "language, direction, metric)", f"the cell of line {seen[cell]} again",
                             line=index)  # fmt: skip
        seen[cell] = index
    numeric = frame["metric"].map(lambda m: metric_range(paper, m) is not None)
    if numeric.all():
        frame["value"] = pd.to_numeric(frame["value"].replace("", np.nan))
    return frame


def check_paper_tables(*sources: PaperTables) -> None:
    """Check every paper table CSV (``<paper><year>_table<N>.csv``) of ``sources`` (each a
    directory or CSV files, ``PaperTables``; ``read_paper_table``): a table command calls this
    before it writes anything, so a wrong reference replaces no table."""
    for source in sources:
        if isinstance(source, tuple | list):
            for path in source:
                read_paper_table(path)
            continue
        if source is None or not Path(source).is_dir():
            continue
        for path in sorted(Path(source).glob("*_table*.csv")):
            if _TABLE_FILE.fullmatch(path.name):
                read_paper_table(path)


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


def _signed(value: float, places: int) -> str:
    """A difference, in the format of the numbers it is the difference of."""
    return ("−" if value < 0 else "+") + f"{abs(value):.{places}f}"


def cell_text(
    ours: float, std: float, runs: float, paper: float, metric: str | None = None,
    table: str | None = None,
) -> str:
    """'41.2 ± 0.5 (42.4, −1.2)': ours, its spread over seeds, the paper, the difference, all in
    the one format of ``metric`` (``decimals``; the spread with at least one decimal, so that
    a spread below one rank is not shown as 0); BLANK where there is neither number."""
    if pd.isna(ours) and pd.isna(paper):
        return BLANK
    places = decimals(metric, table)
    text = BLANK if pd.isna(ours) else f"{ours:.{places}f}"
    if not pd.isna(ours) and not pd.isna(runs) and runs > 1:
        text += f" ± {std:.{max(places, 1)}f}"
    if not pd.isna(paper):
        text += f" ({paper:.{places}f}" + (
            ")" if pd.isna(ours) else f", {_signed(ours - paper, places)})"
        )
    return text


def interval_marks(frame: pd.DataFrame) -> pd.Series:
    """' [low, high] ≈' after a cell with a 95 % interval (``ours_low``, ``ours_high``;
    ``mlmm.results.claims.add_intervals``): ≈ where the paper's number lies inside it
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
    if not {"ours", "paper"} <= set(frame.columns) or frame.empty:
        return None
    frame, rows, columns = shape_keys(frame, stem)
    std = frame["ours_std"] if "ours_std" in frame else pd.Series(np.nan, index=frame.index)
    runs = frame["runs"] if "runs" in frame else pd.Series(1.0, index=frame.index)
    metric = frame["metric"] if "metric" in frame else pd.Series(None, index=frame.index)
    frame["cell"] = [
        cell_text(*values, table=stem)
        for values in zip(frame["ours"], std, runs, frame["paper"], metric, strict=True)
    ]
    frame["cell"] = frame["cell"] + interval_marks(frame)
    wide = frame.pivot_table(
        index=rows, columns=columns, values="cell", aggfunc="first", sort=False
    ).fillna(BLANK)
    wide.columns = column_header(wide.columns, columns)
    return wide


def column_header(keys: pd.Index, levels: list[str]) -> pd.MultiIndex:
    """The header of a paper-shaped table: one level per key in ``levels``, each label a
    string (directions by name), never a tuple; a MultiIndex even with one level."""
    labels = [key if isinstance(key, tuple) else (key,) for key in keys]
    labels = [tuple(DIRECTION_NAMES.get(str(v), str(v)) for v in key) for key in labels]
    return pd.MultiIndex.from_tuples(labels, names=levels)


def one_line_header(columns: pd.Index) -> list[str]:
    """Every table's header as one line per column (Markdown has one header row): the levels
    of a column joined by spaces."""
    return [
        " ".join(str(v) for v in key if str(v)) if isinstance(key, tuple) else str(key)
        for key in columns
    ]


def _flat(wide: pd.DataFrame) -> pd.DataFrame:
    """Row keys as columns and one-line column headers."""
    flat = wide.copy()
    flat.columns = [label or "value" for label in one_line_header(flat.columns)]
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
        "body{font-family:sans-serif;margin:1em}"
        "table{border-collapse:collapse;font-size:90%;width:100%}"
        "th,td{border:1px solid #ccc;padding:.25em .5em;text-align:right}"
        "th{background:#f3f3f3}td:first-child,th:first-child{text-align:left}"
        f"</style></head><body><h1>{escape(title)}</h1>\n{table_html}\n<ul>{items}</ul>"
        "</body></html>\n"
    )


def _plain_cells(frame: pd.DataFrame) -> pd.DataFrame:
    """A table not beside a paper's, as text: each number column in its one format
    (``column_decimals``), BLANK in every empty cell."""
    shown = frame.copy()
    for column in shown.columns:
        values = shown[column]
        if pd.api.types.is_float_dtype(values) or pd.api.types.is_integer_dtype(values):
            places = column_decimals(values)
            shown[column] = values.map(lambda v, p=places: "" if pd.isna(v) else f"{v:.{p}f}")
    shown = shown.astype(object).where(shown.notna(), "")
    return shown.map(lambda v: BLANK if str(v).strip() == "" else str(v))


def notes_text(
    title: str,
    notes: list[str],
    numbered: list[str],
    stem: Path,
    intervals: bool = False,
    rows: list[str] | None = None,
) -> str:
    """``stem``.notes.txt: everything the LaTeX table leaves out, for the paper's author
    (``rows``: per row, the cells of the columns it does not show)."""
    from mlmm.latex import LUALATEX_PREAMBLE, PREAMBLE

    lines = [title, "", *[f"- {note}" for note in notes]]
    if numbered:
        lines += ["", "Numbered notes of the LaTeX table:"]
        lines += [f"[{n}] {text}" for n, text in enumerate(numbered, start=1)]
    if rows:
        lines += ["", "Per row, the columns the LaTeX table leaves out:"]
        lines += [f"- {row}" for row in rows]  # the row's label, then one cell a line
    lines += [
        "",
        f"LaTeX: {stem.name}.tex (table*, two-column page), {stem.name}.column.tex (one column)"
        + (f", {stem.name}.intervals.tex (95 % intervals)" if intervals else "")
        + "; they compile with this pdfLaTeX preamble:",
        PREAMBLE,
        "or, for Japanese text, with LuaLaTeX:",
        LUALATEX_PREAMBLE,
    ]
    return "\n".join(lines) + "\n"


def write_table(
    frame: pd.DataFrame,
    stem: str | Path,
    title: str,
    notes: list[str],
    origin: Origin | None = None,
    latex_columns: dict | None = None,
) -> list[Path]:
    """Write ``stem``.csv (tidy, for programs) and ``stem``.md, .tex, .html in the paper's shape
    (``paper_shape``; tables that are not beside a paper's are written as they are); the notes
    go under the Markdown and HTML tables.

    The LaTeX is compact, for a paper (``mlmm.latex``): ``stem``.tex (``table*``) and
    ``stem``.column.tex (one column), ``stem``.intervals.tex (the intervals where the cells
    have them, else comment lines saying there are none); their caption is the title, the
    notes go to a comment block and to ``stem``.notes.txt.

    ``origin`` (that of the results or data the table is built from; not given: unrecorded) is
    said in all of them: '[demo world]' in the title and a first note naming data,
    configuration and backbones; the CSV's columns
    ``data``, ``configs``, ``backbone``. Returns the files written, the same for every table:
    one per suffix of ``mlmm.catalogue.TABLE_SUFFIXES`` (a table rule's declared outputs).

    ``latex_columns`` (a table not beside a paper's): the columns the LaTeX shows, in order,
    each with its header (a name or a tuple of header levels), the first labelling the rows;
    the others (long texts) are given per row in the notes file (``mlmm.latex.plain_grid``).
    The CSV, Markdown and HTML keep every column."""
    from mlmm.latex import PREAMBLE, left_out, paper_grids, plain_grid, write_latex

    origin = origin or Origin()
    title, notes = origin.title(title), [origin.note(), *notes]
    stem = Path(stem)
    paths = {suffix: stem.with_suffix(suffix) for suffix in TABLE_SUFFIXES}
    csv_path, md_path, html_path = paths[".csv"], paths[".md"], paths[".html"]
    write_text(csv_path, frame.assign(**origin.columns()).to_csv(index=False))
    wide = paper_shape(frame, stem.name)
    if wide is None:
        shown = _plain_cells(frame)
        flat, html = shown, shown.to_html(index=False)
        grid, companion = plain_grid(shown, latex_columns), None
        per_row = left_out(shown, latex_columns)
    else:
        notes = [notes[0], CELL_NOTE, *notes[1:]]
        # the paper's label of a row (the key to its cells), not a description of our run
        wide.index.names = [ROW_HEADERS.get(n, n) for n in wide.index.names]
        flat = _flat(wide)
        html = wide.to_html(sparsify=True)
        grid, companion = paper_grids(frame, stem.name)
        per_row = []
    markdown = [
        f"# {title}",
        "",
        _markdown_cells(flat).to_markdown(index=False, disable_numparse=True),
        "",
    ]
    markdown += [f"- {note}" for note in notes]
    write_text(md_path, "\n".join(markdown) + "\n")
    comments = [
        title,
        *notes,
        f"Notes and numbered notes: {stem.name}.notes.txt; every number: {stem.name}.csv.",
        "Preamble (pdfLaTeX):",
        *PREAMBLE.splitlines(),
    ]
    for suffix, text in write_latex(grid, companion, stem, title, comments).items():
        write_text(paths[suffix], text)
    write_text(html_path, _html_page(title, html, notes))
    notes_file = notes_text(title, notes, grid.notes, stem, companion is not None, per_row)
    write_text(paths[".notes.txt"], notes_file)
    return list(paths.values())
