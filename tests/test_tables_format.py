"""What a reader of the written tables sees: a `|` inside a cell stays in its cell,
and every kind of number has one format."""

from __future__ import annotations

import numpy as np
import pandas as pd
from markdown_it import MarkdownIt

from mlmm.cells import format_number
from mlmm.tables import cell_text, write_table


def _markdown_rows(path) -> list[list[str]]:
    """Rows of the first table of a Markdown file, cells as a GFM parser reads them."""
    tokens = MarkdownIt("commonmark").enable("table").parse(path.read_text(encoding="utf-8"))
    rows, row = [], None
    for token in tokens:
        if token.type == "tr_open":
            row = []
        elif token.type == "inline" and row is not None:
            row.append(token.content)
        elif token.type == "tr_close":
            rows.append(row)
            row = None
    return rows


def test_a_pipe_inside_a_cell_keeps_every_markdown_column(tmp_path):
    frame = pd.DataFrame({
        "system": ["NMT: log p(Y|X)", "NMT + MLMME"], "variant_note": ["", ""],
        "language": ["de", "de"], "direction": ["mt", "mt"], "metric": ["BLEU", "BLEU"],
        "paper": [35.2, 35.4], "ours": [33.1, 34.0], "ours_std": [np.nan, np.nan],
        "runs": [1.0, 1.0], "diff": [-2.1, -1.4],
    })  # fmt: skip
    write_table(frame, tmp_path / "calixto2017_table3", "Calixto & Liu 2017, Table 3", [])
    rows = _markdown_rows(tmp_path / "calixto2017_table3.md")
    assert len(rows) == 3 and {len(r) for r in rows} == {len(rows[0])}
    assert rows[1][0] == "NMT: log p(Y|X)" and rows[1][-1].startswith("33.1 (35.2")


def test_one_format_per_metric_the_papers():
    """The decimals the papers print, whatever the value (no "1.00" above "0.870")."""
    assert format_number(2.0, "medr") == "2.0" and format_number(4.8, "medr") == "4.8"
    assert format_number(17571.0, "vocab_total") == "17571" and format_number(62.0, "count") == "62"
    assert format_number(70.7, "R@10") == "70.7" and format_number(50.81, "R@10") == "50.8"
    assert format_number(1.0, "jaccard") == "1.00" and format_number(0.034, "jaccard") == "0.03"
    assert format_number(0.252, "F1") == "0.252" and format_number(1.0, "F1") == "1.000"
    assert format_number(1.0, "R@10", "rajendran2016_table5") == "1.000"
    assert format_number(0.87, "R@10", "rajendran2016_table5") == "0.870"
    assert cell_text(4.5, 0.71, 2.0, 1.0, "medr") == "4.5 ± 0.7 (1.0, +3.5)"
    # the spread of a whole-number metric keeps one decimal: 0.4 of a word is not "± 0"
    assert cell_text(13.0, 0.4, 3.0, 12.0, "vocab_total") == "13 ± 0.4 (12, +1)"
    assert cell_text(float("nan"), 0.0, 0.0, float("nan"), "R@1") == "–"


def test_count_columns_of_plain_tables_have_no_decimals(tmp_path):
    frame = pd.DataFrame({"topic": ["art", "music"], "documents": [342.0, 17.0],
                          "share": [0.25, 0.5]})  # fmt: skip
    write_table(frame, tmp_path / "rajendran2016_counts", "Counts", [])
    rows = _markdown_rows(tmp_path / "rajendran2016_counts.md")
    assert rows[1] == ["art", "342", "0.250"]
    assert rows[2] == ["music", "17", "0.500"]
