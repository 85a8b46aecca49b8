"""LaTeX tables a paper can ``\\input``: compact cells, short row labels, fit by design.

Every table the workflow writes (``mlmm.tables.write_table``) gets three LaTeX files beside its
CSV, Markdown and HTML:

- ``<stem>.tex``: the paper-sized table as ``table*``, within ``\\textwidth`` of an ACL/EMNLP
  two-column page (455 pt);
- ``<stem>.column.tex``: the same numbers within ``\\columnwidth`` (219 pt), one ``table`` per
  slice of the first header level (mostly one per language or direction);
- ``<stem>.intervals.tex``: the companion table of 95 % intervals and of whether the paper's
  number lies inside ours, which a paper can leave out; a table without intervals gets one of
  comment lines only (it sets nothing where it is ``\\input``), so that every table has the
  same files (``mlmm.catalogue.TABLE_SUFFIXES``: the declared outputs of its rule).

A table fits by design, not by scaling: each cell of ours is "mean ± sd", the paper's number
has its own column, a long row label (the paper's row description, a long text cell) becomes a
numbered table note, and the columns are split into stacked panels (row labels repeated) where
they would not fit the width. Where the table is taller than a page, its rows are cut into
continued floats "(part 1 of 2)", each with the numbered notes its rows refer to. A builder
may choose which of a table's columns LaTeX shows (``plain_grid``; the claims tables show the
verdict and its numbers): the others are given per row in the notes file. The caption is the
table's title; where the numbers come from (data, configuration, backbones) and the run notes
go to a comment block at the top of the file and to ``<stem>.notes.txt``.

The files compile with the standard pdfLaTeX preamble ``PREAMBLE`` (booktabs, array; T1 and
T2A font encodings with babel's russian for Cyrillic words, which are wrapped in
``\\foreignlanguage{russian}``; Greek letters are written as math, ``$\\beta$``; a character
neither preamble sets is written as its code, '[U+05D0]', ``mlmm.cells.latex_text``).
Japanese (CJK) text needs the LuaLaTeX variant ``LUALATEX_PREAMBLE`` (luatexja);
docs/latex.md says how to use both.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

import pandas as pd

TEXT_WIDTH = 455.0  # pt: \textwidth of an ACL/EMNLP page (16 cm)
COLUMN_WIDTH = 219.0  # pt: \columnwidth of the same page (7.7 cm)


@dataclass(frozen=True)
class Page:
    """Where a table goes: its width, its type (size in pt of an 11 pt page, as ACL's, and
    the command), the space between columns and the widest row-label column (pt)."""

    width: float
    font: float
    size: str
    tabcolsep: float
    label_width: float


TWO_COLUMNS = Page(TEXT_WIDTH, 9.0, "\\footnotesize", 4.0, 96.0)  # table*
ONE_COLUMN = Page(COLUMN_WIDTH, 8.0, "\\scriptsize", 3.0, 56.0)  # table
LONG_LABEL = 28  # characters: a longer text cell or header becomes a numbered table note
LONG_ROW_LABEL = 40  # characters: a longer row label (wrapped in its column up to this) too

PREAMBLE = r"""\documentclass[11pt,twocolumn]{article}
\usepackage[T2A,T1]{fontenc}
\usepackage[utf8]{inputenc}
\usepackage[russian,english]{babel}
\usepackage{booktabs,array}"""
LUALATEX_PREAMBLE = r"""\documentclass[11pt,twocolumn]{article}
\usepackage[T2A,T1]{fontenc}
\usepackage[russian,english]{babel}
\usepackage{luatexja}
\usepackage{booktabs,array}"""


@dataclass
class Grid:
    """A table as LaTeX will show it: row-label columns, then number/text columns each with a
    header path (one label per header level) and its cells (plain text, not yet escaped)."""

    label_names: list[str]
    labels: list[list[str]]  # one list per row-label column
    headers: list[tuple[str, ...]]  # one per data column, all of one length
    cells: list[list[str]]  # one list per data column
    notes: list[str] = field(default_factory=list)  # numbered table notes, in order

    @property
    def rows(self) -> int:
        return len(self.labels[0]) if self.labels else len(self.cells[0]) if self.cells else 0


WIDE = set("+=±≈≠→−%@&#mwMW")
NARROW = set(" .,;:il[]()|!'")


def _width(text: str, font: float) -> float:
    """A generous estimate of ``text``'s width in pt in Computer Modern of ``font`` pt."""
    return font * sum(
        0.8 if c.isupper() or c in WIDE else 0.3 if c in NARROW else 0.53 for c in str(text)
    )


def note_marker(notes: list[str], text: str) -> str:
    """The number of ``text`` among the table's numbered notes (added when new)."""
    if text not in notes:
        notes.append(text)
    return f"[{notes.index(text) + 1}]"


def shorten(text: str, notes: list[str]) -> str:
    """A cell or label longer than LONG_LABEL characters as a numbered note."""
    text = str(text)
    return note_marker(notes, text) if len(text) > LONG_LABEL else text


# ----------------------------------------------------------------------------------------
# escaping


def latex_text(text) -> str:
    """``text`` as LaTeX that typesets it literally (``mlmm.cells.latex_text``)."""
    from mlmm.cells import latex_text as escape

    return escape(text)


def comment_block(lines: list[str]) -> str:
    """``lines`` as LaTeX comments (every line of a multi-line text commented)."""
    out = []
    for line in lines:
        out += [f"% {part}".rstrip() for part in str(line).splitlines() or [""]]
    return "\n".join(out) + "\n"


# ----------------------------------------------------------------------------------------
# panels


def _column_width(header: tuple[str, ...], cells: list[str], page: Page) -> float:
    texts = [header[-1] if header else "", *cells]
    return max(_width(t, page.font) for t in texts) + 2 * page.tabcolsep


def _label_widths(grid: Grid, page: Page) -> list[float]:
    """The p{} width of each row-label column (its widest label, at most the page's)."""
    widths = []
    for name, values in zip(grid.label_names, grid.labels, strict=True):
        texts = [name, *values]
        words = [w for t in texts for w in re.split(r"[\s_]+", str(t))]  # no break inside
        word = max(_width(w, page.font) for w in [*words, ""])
        widest = max(_width(t, page.font) for t in texts)
        widths.append(max(word, min(page.label_width, widest)) + 4.0)
    return widths


def panels(grid: Grid, page: Page) -> list[list[int]]:
    """The data columns split into panels that each fit the ``page`` width beside the row
    labels: whole groups of the first header level where they fit, else of the next level,
    else single columns; consecutive groups share a panel while they fit."""
    labels = sum(w + 2 * page.tabcolsep for w in _label_widths(grid, page))
    room = page.width - labels
    widths = [_column_width(h, c, page) for h, c in zip(grid.headers, grid.cells, strict=True)]

    def groups(indices: list[int], level: int) -> list[list[int]]:
        out: list[list[int]] = []
        for i in indices:
            key = grid.headers[i][: level + 1]
            if out and grid.headers[out[-1][-1]][: level + 1] == key:
                out[-1].append(i)
            else:
                out.append([i])
        return out

    def group_width(indices: list[int], level: int) -> float:
        spans = sum(widths[i] for i in indices)
        # a header label above the columns wider than they are widens them
        heads = [
            _width(label, page.font) + 2 * page.tabcolsep
            for label in {grid.headers[i][level] for i in indices} if label
        ]  # fmt: skip
        return max([spans, *heads])

    def split(indices: list[int], level: int) -> list[list[int]]:
        depth = len(grid.headers[indices[0]]) if indices else 0
        if level >= depth:
            return [[i] for i in indices]
        out: list[list[int]] = []
        for group in groups(indices, level):
            parts = [group] if group_width(group, level) <= room else split(group, level + 1)
            for part in parts:
                if (
                    out
                    and group_width(out[-1] + part, level) <= room
                    and _same_parent(grid, out[-1] + part, level)
                ):
                    out[-1] += part
                else:
                    out.append(list(part))
        return out

    return split(list(range(len(grid.headers))), 0) if grid.headers else [[]]


def _same_parent(grid: Grid, indices: list[int], level: int) -> bool:
    return len({grid.headers[i][:level] for i in indices}) == 1


# ----------------------------------------------------------------------------------------
# rendering


def _header_rows(grid: Grid, columns: list[int], first: int) -> list[str]:
    """Header lines of one panel: a level with one label over all its columns is shown once
    above, as multicolumns with cmidrules under them; the last level labels each column."""
    depth = len(grid.headers[columns[0]]) if columns else 0
    lines = []
    for level in range(depth):
        last = level == depth - 1
        runs: list[tuple[str, int]] = []
        for i in columns:
            key = grid.headers[i][: level + 1]
            if runs and not last and runs[-1][0] == key:
                runs[-1] = (key, runs[-1][1] + 1)
            else:
                runs.append((key, 1))
        if not last and all(not key[-1] for key, _ in runs):
            continue
        names = [latex_text(n) for n in grid.label_names] if last else [""] * first
        cells, rules, position = [], [], first + 1
        for key, span in runs:
            text = latex_text(key[-1])
            if span > 1 or not last:
                cells.append(f"\\multicolumn{{{span}}}{{c}}{{{text}}}")
                if text:
                    rules.append(f"\\cmidrule(lr){{{position}-{position + span - 1}}}")
            else:
                cells.append(text)
            position += span
        lines.append(" & ".join(names + cells) + " \\\\")
        if rules and not last:
            lines.append(" ".join(rules))
    return lines


def _panel(grid: Grid, columns: list[int], page: Page, rows: range | None = None) -> str:
    """One tabular: the row labels and ``columns`` of the grid's ``rows`` (default all)."""
    rows = range(grid.rows) if rows is None else rows
    widths = _label_widths(grid, page)
    spec = "".join(f">{{\\raggedright\\arraybackslash}}p{{{w:.0f}pt}}" for w in widths)
    spec += "".join("l" if _is_text(grid.cells[i]) else "r" for i in columns)
    lines = [f"\\begin{{tabular}}{{@{{}}{spec}@{{}}}}", "\\toprule"]
    lines += _header_rows(grid, columns, len(widths))
    lines.append("\\midrule")
    previous: list[str] = [""] * len(grid.labels)
    for row in rows:
        labels = []
        for level, values in enumerate(grid.labels):
            value = values[row]
            # a repeated outer label once, on the first row of its group
            same = value == previous[level] and all(
                grid.labels[k][row] == previous[k] for k in range(level)
            )
            labels.append("" if same and level < len(grid.labels) - 1 else latex_text(value))
            previous[level] = value
        cells = [latex_text(grid.cells[i][row]) for i in columns]
        line = " & ".join(labels + cells)
        # a row starting with '[' would be read as the previous row's \\[<space>]
        lines.append(("{}" if line.startswith("[") else "") + line + " \\\\")
    lines += ["\\bottomrule", "\\end{tabular}"]
    return "\n".join(lines) + "\n"


NUMBERISH = re.compile(r"^[\s\d.,±−+\-–%/\[\]≈≠()]*$")


def _is_text(cells: list[str]) -> bool:
    return not all(NUMBERISH.match(str(c)) for c in cells)


def _breakable(text: str) -> str:
    """A note's long tokens (paths, 'a/b/c') may break after a slash in a narrow column."""
    return text.replace("/", "/\\allowbreak{}")


def render(grid: Grid, caption: str, label: str, comments: list[str], page: Page) -> str:
    """One float (``table*`` on the two-column page, else ``table``) with the grid's panels
    stacked, its numbered notes under them, and ``caption``; ``comments`` on top."""
    env = "table*" if page.width > COLUMN_WIDTH else "table"
    return comment_block(comments) + _float(grid, caption, label, page, env)


def _float(grid: Grid, caption: str, label: str, page: Page, env: str) -> str:
    """The grid in as few floats as fit the page's height (``PAGE_HEIGHT``): one float
    where it fits, else parts captioned '(part 2 of 3)'. The rows are cut into runs whose
    panels (column groups, ``panels``) each fit a float, and the panels of every run are
    stacked into floats while they fit; under each float the numbered notes it refers to."""
    room = PAGE_HEIGHT - CAPTION_HEIGHT
    column_groups = panels(grid, page)
    heights = _row_heights(grid, page)
    blocks = [(columns, rows) for rows in _row_runs(grid, column_groups, heights, page, room)
              for columns in column_groups]  # fmt: skip
    parts: list[list[tuple[list[int], range]]] = []
    for block in blocks:
        if parts and _height(grid, [*parts[-1], block], page, heights) <= room:
            parts[-1].append(block)
        else:
            parts.append([block])
    out = []
    for n, chunk in enumerate(parts, start=1):
        body = "\\par\\medskip\n".join(
            _panel(grid, columns, page, rows) for columns, rows in chunk
        )
        title = caption if len(parts) == 1 else f"{caption} (part {n} of {len(parts)})"
        name = label if n == 1 else f"{label}-part{n}"
        out.append(
            f"\\begin{{{env}}}[t]\n\\centering{page.size}"
            f"\\setlength{{\\tabcolsep}}{{{page.tabcolsep:g}pt}}\n"
            + body
            + _notes(grid, _used_notes(grid, chunk))
            + f"\\caption{{{latex_text(title)}}}\n\\label{{{name}}}\n\\end{{{env}}}\n"
        )
    return "".join(out)


MARKER = re.compile(r"\[(\d+)\]")


def _used_notes(grid: Grid, blocks: list[tuple[list[int], range]]) -> list[int]:
    """The numbers (from 1) of the notes that ``blocks`` (columns, rows) refer to."""
    texts = list(grid.label_names)
    for columns, rows in blocks:
        texts += [label for values in grid.labels for label in values[rows.start : rows.stop]]
        for i in columns:
            texts += [*grid.headers[i], *grid.cells[i][rows.start : rows.stop]]
    used = {int(m) for text in texts for m in MARKER.findall(str(text))}
    return sorted(n for n in used if 1 <= n <= len(grid.notes))


def _height(
    grid: Grid, blocks: list[tuple[list[int], range]], page: Page, heights: list[float]
) -> float:
    """A generous estimate of a float's height (pt) without its caption: the blocks' panels
    stacked and the notes they refer to."""
    panels_height = sum(
        _panel_height(grid, columns, page, heights, rows) for columns, rows in blocks
    )
    return panels_height + _notes_height(grid, _used_notes(grid, blocks), page)


PAGE_HEIGHT = 560.0  # pt: the most a float may take of an ACL page's 700 pt text height
CAPTION_HEIGHT = 3 * 13.6 + 12.0  # pt: a caption of up to three lines and the skip above it
NOTE_FONT, NOTE_LINE = 8.0, 9.5  # pt: \scriptsize of an 11 pt page, the notes' type


def _lines(text: str, width: float, font: float) -> int:
    """The lines ``text`` takes in a ragged-right column ``width`` pt wide: its words (they
    break at spaces, after '_' and '/') filled greedily, a longer word on lines of its own."""
    lines, used = 1, 0.0
    for word in re.findall(r"[^\s_/]*[\s_/]*", str(text)):
        if not word:
            continue
        tall = _width(word.rstrip(), font)
        if used and used + tall > width:
            lines, used = lines + 1, 0.0
        if tall > width:  # a word wider than the column: lines of its own
            lines += int(tall // max(width, 1.0))
            used = tall % max(width, 1.0)
        else:
            used += _width(word, font)
    return lines


def _row_heights(grid: Grid, page: Page) -> list[float]:
    """A generous estimate of each row's height (pt): its row labels wrap in their columns."""
    line = page.font * 1.25
    widths = _label_widths(grid, page)
    return [
        line * max(
            (_lines(values[row], width, page.font)
             for values, width in zip(grid.labels, widths, strict=True)),
            default=1,
        )
        for row in range(grid.rows)
    ]  # fmt: skip


def _panel_height(
    grid: Grid, columns: list[int], page: Page, heights: list[float], rows: range
) -> float:
    """A generous estimate of a panel's height (pt): header, ``rows``, rules, the skip."""
    depth = len(grid.headers[columns[0]]) if columns else 1
    body = sum(heights[row] for row in rows)
    return body + depth * page.font * 1.25 + 6 * 3.0 + 2 * page.font


def _row_runs(
    grid: Grid, column_groups: list[list[int]], heights: list[float], page: Page, room: float
) -> list[range]:
    """The rows cut into as few runs as make every panel of each run, with the notes it
    refers to, fit ``room`` (pt), of near-equal numbers of rows; one run where the whole
    table fits (a row taller than ``room`` makes a run of its own)."""
    if grid.rows == 0:
        return [range(0)]

    def fits(rows: range) -> bool:
        return all(_height(grid, [(c, rows)], page, heights) <= room for c in column_groups)

    def cut(most: int) -> list[range]:
        runs, start = [], 0
        for row in range(1, grid.rows):
            if row - start >= most or not fits(range(start, row + 1)):
                runs.append(range(start, row))
                start = row
        return [*runs, range(start, grid.rows)]

    runs = cut(grid.rows)
    even = cut(-(-grid.rows // len(runs)))  # the same number of runs, evened out
    return even if len(even) <= len(runs) else runs


def _notes_height(grid: Grid, used: list[int], page: Page) -> float:
    """The height (pt) of the numbered notes ``used``, in a minipage as wide as the float."""
    if not used:
        return 0.0
    text = " ".join(f"[{n}]  {grid.notes[n - 1]}." for n in used)
    return _lines(text, page.width, NOTE_FONT) * NOTE_LINE + 6.0


def _notes(grid: Grid, used: list[int]) -> str:
    """The numbered notes ``used`` (numbers from 1), in a minipage under the panels."""
    if not used:
        return ""
    items = " ".join(
        f"[{n}]\\enspace {_breakable(latex_text(grid.notes[n - 1]))}"
        + ("." if not grid.notes[n - 1].rstrip().endswith(".") else "")
        for n in used
    )
    return (
        "\\par\\smallskip\n\\begin{minipage}{\\linewidth}\\raggedright\\scriptsize\n"
        f"{items}\n\\end{{minipage}}\n"
    )


def slices(grid: Grid) -> list[tuple[str, Grid]]:
    """The grid cut along its first header level (a language, a direction) where that level
    has several values: (its label, the grid of its columns, with only the notes it uses)."""
    firsts = list(dict.fromkeys(h[0] for h in grid.headers)) if grid.headers else []
    if len(firsts) < 2 or len(grid.headers[0]) < 2 or not all(firsts):
        return [("", grid)]  # one slice, or a level that groups some columns only
    out = []
    for first in firsts:
        columns = [i for i, h in enumerate(grid.headers) if h[0] == first]
        part = Grid(
            grid.label_names, grid.labels, [grid.headers[i][1:] for i in columns],
            [grid.cells[i] for i in columns], grid.notes,
        )  # fmt: skip
        out.append((first, part))
    return out


def render_slices(grid: Grid, caption: str, label: str, comments: list[str]) -> str:
    """The one-column version: a ``table`` per slice of the first header level (mostly one
    per language), each within ``\\columnwidth``, captioned with the title and the slice."""
    floats = []
    for n, (name, part) in enumerate(slices(grid), start=1):
        title = f"{caption} ({name})" if name else caption
        floats.append(_float(part, title, f"{label}-{n}" if name else label, ONE_COLUMN, "table"))
    return comment_block(comments) + "".join(floats)


# ----------------------------------------------------------------------------------------
# grids from the tables


def paper_grids(frame: pd.DataFrame, stem: str) -> tuple[Grid, Grid | None]:
    """The main grid (ours ± sd, the paper's number in its own column under each of the
    paper's columns) and the companion grid of intervals (None without intervals) of a tidy
    table beside a paper's, in the paper's shape (``mlmm.cells.shape_keys``)."""
    from mlmm.cells import BLANK, decimals, format_number, shape_keys

    frame, rows, columns = shape_keys(frame, stem)
    notes: list[str] = []
    std = frame["ours_std"] if "ours_std" in frame else pd.Series(0.0, index=frame.index)
    runs = frame["runs"] if "runs" in frame else pd.Series(1.0, index=frame.index)
    metric = frame["metric"] if "metric" in frame else pd.Series(None, index=frame.index)
    ours = []
    for value, spread, count, m in zip(frame["ours"], std, runs, metric, strict=True):
        text = format_number(value, m, stem)
        if text and not pd.isna(count) and count > 1 and not pd.isna(spread):
            text += f" ± {spread:.{max(decimals(m, stem), 1)}f}"
        ours.append(text or BLANK)
    frame["_ours"] = ours
    frame["_paper"] = [
        format_number(v, m, stem) or BLANK for v, m in zip(frame["paper"], metric, strict=True)
    ]
    has_intervals = "ours_low" in frame and frame["ours_low"].notna().any()
    if has_intervals:
        marks = {True: " ≈", False: " ≠"}
        frame["_interval"] = [
            BLANK
            if pd.isna(low)
            else f"{format_number(low, m, stem)}–{format_number(high, m, stem)}"
            + marks.get(inside, "")
            for low, high, inside, m in zip(
                frame["ours_low"], frame["ours_high"], frame["within_noise"], metric, strict=True
            )
        ]
    row_keys = list(dict.fromkeys(zip(*[frame[r] for r in rows], strict=True)))
    col_keys = list(dict.fromkeys(zip(*[frame[c] for c in columns], strict=True)))
    lookup = frame.groupby([*rows, *columns], sort=False).first()
    shown_rows = [r for r in rows if r != "variant_note"]
    if not shown_rows:
        shown_rows = rows[:1]
    label_names = [_row_name(r) for r in shown_rows]
    labels: list[list[str]] = [[] for _ in shown_rows]
    for key in row_keys:
        values = dict(zip(rows, key, strict=True))
        for n, name in enumerate(shown_rows):
            text = str(values[name])
            extra = values.get("variant_note") if name == shown_rows[-1] else ""
            extra = "" if name == "variant_note" else extra
            if len(text) > LONG_ROW_LABEL:  # the label and the paper's description: one note
                text = note_marker(notes, f"{text}: {extra}" if extra else text)
            elif extra:
                text += note_marker(notes, extra)
            labels[n].append(text)

    def cell(row_key, col_key, column: str) -> str:
        key = (*row_key, *col_key)
        key = key[0] if len(key) == 1 else key
        return str(lookup[column].get(key, BLANK)) if key in lookup.index else BLANK

    def grid(parts: list[tuple[str, str]]) -> Grid:
        headers, cells = [], []
        for col_key in col_keys:
            shown = tuple(_direction(v) for v in col_key)
            for column, name in parts:
                headers.append((*shown, name) if len(parts) > 1 else shown)
                cells.append([cell(r, col_key, column) for r in row_keys])
        return Grid(label_names, [list(x) for x in labels], headers, cells, notes)

    main = grid([("_ours", "ours"), ("_paper", "paper")])
    companion = grid([("_interval", "95 % interval")]) if has_intervals else None
    return main, companion


def _row_name(key: str) -> str:
    from mlmm.cells import ROW_HEADERS

    return ROW_HEADERS.get(key, key)


def _direction(value: str) -> str:
    from mlmm.cells import DIRECTION_NAMES

    return DIRECTION_NAMES.get(str(value), str(value))


def plain_grid(shown: pd.DataFrame, columns: dict | None = None) -> Grid:
    """A table not beside a paper's (text cells already formatted, ``mlmm.tables``).

    ``columns`` (default: every column, headed by its name) are the columns LaTeX shows, each
    with its header: a name, or a tuple of header levels ('interval', 'low'); the first
    labels the rows. The table's other columns are left to the notes file and the CSV, which
    a note on the row labels' header says. A row label longer than LONG_ROW_LABEL characters
    and any other cell or header longer than LONG_LABEL is a numbered note."""
    notes: list[str] = []
    columns = dict(columns) if columns else {c: c for c in shown.columns}
    unknown = [c for c in columns if c not in shown.columns]
    if unknown:
        raise ValueError(f"LaTeX columns {unknown} are not columns of the table {list(shown)}")
    if not columns:
        return Grid([], [], [], [], notes)
    first, *rest = columns
    heads = [h if isinstance(h, tuple) else (str(h),) for h in (columns[c] for c in rest)]
    depth = max((len(h) for h in heads), default=1)
    headers = [tuple(shorten(x, notes) for x in ("",) * (depth - len(h)) + h) for h in heads]
    labels = [[note_marker(notes, str(v)) if len(str(v)) > LONG_ROW_LABEL else str(v)
               for v in shown[first]]]  # fmt: skip
    name = columns[first][-1] if isinstance(columns[first], tuple) else str(columns[first])
    left = [str(c) for c in shown.columns if c not in columns]
    if left:
        name += note_marker(
            notes, f"Per row in the notes file and the CSV, not here: {', '.join(left)}"
        )
    cells = [[shorten(v, notes) for v in shown[c]] for c in rest]
    return Grid([name], labels, headers, cells, notes)


def left_out(shown: pd.DataFrame, columns: dict | None) -> list[str]:
    """For the notes file, one text per row: the row's label, then a line for each cell of
    the columns the LaTeX table leaves out (``plain_grid``), blank ones skipped."""
    if not columns:
        return []
    first = next(iter(columns))
    left = [c for c in shown.columns if c not in columns]
    if not left:
        return []
    return [
        "\n".join([str(row[first])] + [
            f"  {c}: {row[c]}" for c in left if str(row[c]).strip() not in ("", "–")
        ])
        for _, row in shown.iterrows()
    ]  # fmt: skip


def write_latex(
    grid: Grid,
    companion: Grid | None,
    stem,
    title: str,
    comments: list[str],
) -> dict[str, str]:
    """The LaTeX texts of a table: suffix ('.tex', '.column.tex', '.intervals.tex') -> text.
    Without a ``companion`` (no intervals), '.intervals.tex' is comments saying so."""
    name = stem.name
    label = f"tab:{name}"
    out = {
        ".tex": render(grid, title, label, comments, TWO_COLUMNS),
        ".column.tex": render_slices(grid, title, f"{label}-column", comments),
    }
    if companion is not None:
        caption = f"{title}: 95 % intervals of ours (≈: the paper's number inside, ≠: outside)"
        out[".intervals.tex"] = render(
            companion, caption, f"{label}-intervals", comments, TWO_COLUMNS
        )
    else:
        out[".intervals.tex"] = comment_block(
            [
                f"{title}: this table has no 95 % intervals, so no intervals table;",
                "this file is written (empty) so that every table has the same files.",
                f"The table: {name}.tex (two columns), {name}.column.tex (one column).",
            ]
        )
    return out
