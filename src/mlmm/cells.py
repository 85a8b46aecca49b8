"""One format per cell, shared by every table writer (CSV, Markdown, HTML and LaTeX, the last
in ``mlmm.latex``): the decimals of each metric, the blank cell, direction names and row
headers, which keys make a paper-shaped table's rows and columns, and LaTeX's escaping."""

from __future__ import annotations

import re
from pathlib import Path

import pandas as pd

# The keys of a table cell (a paper's CSV and ours): system, row label, language, direction, metric
KEYS = ["system", "variant_note", "language", "direction", "metric"]


# One number format per column: the decimals of each metric as the papers print it
# (resources/paper_tables), so a column reads alike from top to bottom and like the paper's.
DECIMALS = {
    **{f"R@{k}": 1 for k in (1, 5, 10, 50)},  # recall in per cent (Kádár, Calixto, AME)
    # median rank: the papers print one run's whole rank; ours is a mean over seeds (4.5 would
    # print as "4" beside a difference "+4" from a paper's 1), so one decimal throughout
    "medr": 1,
    "meanr": 1,
    "alignment": 2,  # AME's alignment ratio
    "pearson": 3,  # Calixto Table 2
    **{metric: 1 for metric in ("BLEU", "METEOR", "TER", "chrF")},  # Calixto Table 3
    "jaccard": 2,  # Kádár Table 1
    **{metric: 0 for metric in ("vocab_size", "vocab_total", "vocab_union", "count")},
    "F1": 3,  # Rajendran Tables 1-3
}
# Where one paper prints a metric unlike the others: Rajendran's recalls are fractions of 1.
PAPER_DECIMALS = {("rajendran2016", f"R@{k}"): 3 for k in (1, 5, 10, 50)}
DEFAULT_DECIMALS = 2


def decimals(metric: str | None, table: str | None = None) -> int:
    """The decimals of ``metric`` in ``table`` (a stem such as 'rajendran2016_table5', or a
    paper name): every table builder formats its numbers through this one map."""
    paper = Path(table).name.split("_")[0] if table else None
    return PAPER_DECIMALS.get((paper, metric), DECIMALS.get(metric, DEFAULT_DECIMALS))


def column_decimals(values: pd.Series) -> int:
    """The one format of a column of numbers with no metric (a table not beside a paper's):
    whole numbers without decimals, fractions of 1 with three, others with two."""
    values = pd.to_numeric(values, errors="coerce").dropna()
    if values.astype(float).map(float.is_integer).all():
        return 0
    return 3 if (values.abs() < 1).all() else DEFAULT_DECIMALS


def format_number(value: float, metric: str | None = None, table: str | None = None) -> str:
    """``value`` with the decimals of its metric (``decimals``); '' for a missing value."""
    if pd.isna(value):
        return ""
    return f"{value:.{decimals(metric, table)}f}"


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


BLANK = "–"  # the cell of a table where we have no number (CELL_NOTE)


def shape_keys(frame: pd.DataFrame, stem: str) -> tuple[pd.DataFrame, list[str], list[str]]:
    """The tidy table with its key columns as text, and which keys make the rows and which the
    columns of the paper's shape (the table's ``mlmm.catalogue`` layout; a key with one value
    in the whole table is left out, ``system`` stays; keys are added until no two cells share
    a place)."""
    from mlmm.catalogue import layout

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
    return frame, rows, columns


# LaTeX: every character that means something to TeX, and the symbols the tables use, as
# text that pdflatex typesets (latex_text escapes every cell, header, caption and note).
LATEX_TEXT = {
    "\\": r"\textbackslash{}",
    "&": r"\&",
    "%": r"\%",
    "$": r"\$",
    "#": r"\#",
    "_": r"\_\allowbreak{}",  # snake_case ids may wrap in a narrow column
    "{": r"\{",
    "}": r"\}",
    "~": r"\textasciitilde{}",
    "^": r"\textasciicircum{}",
    "|": r"\textbar{}",
    "<": r"\textless{}",
    ">": r"\textgreater{}",
    "±": r"$\pm$",
    "−": "$-$",
    "–": "--",
    "—": "---",
    "→": r"$\rightarrow$",
    "∩": r"$\cap$",
    "∪": r"$\cup$",
    "≥": r"$\geq$",
    "≤": r"$\leq$",
    "×": r"$\times$",
    "Δ": r"$\Delta$",
    "λ": r"$\lambda$",
    "…": r"\ldots{}",
    "≈": r"$\approx$",
    "≠": r"$\neq$",
}


def _greek() -> dict[str, str]:
    """Greek letters as math (the pdfLaTeX preamble has no Greek text font): small letters
    as ``$\\beta$``, capitals with a math command as ``$\\Gamma$``, the others as the Latin
    capital they look like (A, B, E, ...); accented letters fall back to their base letter."""
    import unicodedata

    latin = {"ALPHA": "A", "BETA": "B", "EPSILON": "E", "ZETA": "Z", "ETA": "H", "IOTA": "I",
             "KAPPA": "K", "MU": "M", "NU": "N", "OMICRON": "O", "RHO": "P", "TAU": "T",
             "CHI": "X"}  # fmt: skip
    # Unicode's small epsilon and phi are TeX's open forms; its symbols are TeX's others
    out = {"ε": r"$\varepsilon$", "φ": r"$\varphi$", "ς": r"$\varsigma$", "ϑ": r"$\vartheta$",
           "ϕ": r"$\phi$", "ϖ": r"$\varpi$", "ϱ": r"$\varrho$", "ϵ": r"$\epsilon$"}  # fmt: skip
    for code in range(0x391, 0x3CA):
        words = unicodedata.name(chr(code), "").split()
        if len(words) != 4 or words[2] != "LETTER" or chr(code) in out:
            continue  # unassigned, or an accented letter (its decomposition)
        letter, name = words[3].replace("LAMDA", "LAMBDA"), " ".join(words)
        if "SMALL" in name:
            out[chr(code)] = "o" if letter == "OMICRON" else f"$\\{letter.lower()}$"
        else:
            out[chr(code)] = latin.get(letter, f"$\\{letter.capitalize()}$")
    return out


LATEX_TEXT.update({c: t for c, t in _greek().items() if c not in LATEX_TEXT})

# What the documented pdfLaTeX preamble (``mlmm.latex.PREAMBLE``: T1, TS1 and T2A through
# inputenc's utf8) sets as it is: printable ASCII, Latin-1, Latin Extended-A but for the nine
# letters T1 lacks, the Russian/Ukrainian Cyrillic of T2A, the typographic punctuation.
_T1_LACKS = set("ĦħĸĿŀŉŦŧſ")
_PUNCTUATION = set("‐‑‒–—―‖‘’‚“”„†‡•‰‱‹›€™")


def pdflatex_sets(char: str) -> bool:
    """Whether the documented pdfLaTeX preamble typesets ``char`` as it is."""
    code = ord(char)
    return (
        0x20 <= code < 0x7F
        or (0xA0 <= code <= 0x17F and char not in _T1_LACKS)
        or 0x400 <= code <= 0x45F
        or char in "Ґґ"
        or char in _PUNCTUATION
    )


def _cjk(char: str) -> bool:
    """Japanese and Chinese text, which the LuaLaTeX preamble (luatexja) typesets."""
    code = ord(char)
    return (
        0x3000 <= code <= 0x30FF  # CJK punctuation, hiragana, katakana
        or 0x3400 <= code <= 0x4DBF
        or 0x4E00 <= code <= 0x9FFF
        or 0xFF00 <= code <= 0xFFEF  # full-width forms
    )


def _latex_char(char: str) -> str:
    """One character as text the preamble typesets: escaped or a symbol (``LATEX_TEXT``),
    as it is, Japanese as it is (LuaLaTeX); else its compatibility decomposition without
    accents where the preamble sets that (a thin space, 'ﬀ', 'ά'), else '[U+XXXX]'."""
    import unicodedata

    if char in LATEX_TEXT:
        return LATEX_TEXT[char]
    if pdflatex_sets(char) or _cjk(char):
        return char
    if char.isspace():
        return " "
    if unicodedata.category(char) in ("Cc", "Cf"):  # controls, joiners, direction marks
        return ""
    base = "".join(d for d in unicodedata.normalize("NFKD", char) if not unicodedata.combining(d))
    if base and base != char and all(d in LATEX_TEXT or pdflatex_sets(d) for d in base):
        return "".join(LATEX_TEXT.get(d, d) for d in base)
    return f"[U+{ord(char):04X}]"


# A run of Cyrillic words: typeset in babel's russian (T2A), which the documented preamble loads
CYRILLIC = re.compile(r"[\u0400-\u04ff](?:[\u0400-\u04ff\s-]*[\u0400-\u04ff])?")


def latex_text(text) -> str:
    """``text`` as LaTeX that typesets it literally (``log p(Y|X)``, ``R@10 (%)``, ``a_b``),
    each run of Cyrillic words in ``\\foreignlanguage{russian}`` (``mlmm.latex.PREAMBLE``),
    Greek letters as math; a character neither preamble sets becomes '[U+XXXX]'."""
    escaped = "".join(_latex_char(c) for c in str(text))
    return CYRILLIC.sub(lambda m: r"\foreignlanguage{russian}{" + m.group(0) + "}", escaped)
