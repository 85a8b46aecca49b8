"""The papers' tables (resources/paper_tables) are checked when read: a value that is not a
number of its metric's range, a repeated header or cell, or a row of another table is an error
naming the file and line, and a table command refuses before it writes anything."""

from __future__ import annotations

import shutil

import pytest

from mlmm import shipped
from mlmm.cli import main
from mlmm.errors import InputError
from mlmm.io import SHIPPED_PAPER_TABLES
from mlmm.tables import (
    check_paper_tables,
    load_paper_table,
    paper_tables_option,
    read_paper_table,
)

HEADER = "paper,table,system,variant_note,dataset,language,direction,metric,value,source_note"


def _row(value, metric="R@1", paper="kadar2018", table=2, system="VSE", language="en"):
    return f'{paper},{table},{system},note,test 2016,{language},i2t,{metric},"{value}",'


def _table(tmp_path, *rows, name="kadar2018_table2.csv"):
    path = tmp_path / name
    path.write_text("\n".join([HEADER, *rows]) + "\n", encoding="utf-8")
    return path


def test_every_shipped_paper_table_reads():
    check_paper_tables(SHIPPED_PAPER_TABLES)
    frame = load_paper_table(SHIPPED_PAPER_TABLES, "calixto2017", 1)
    assert frame["value"].dtype.kind == "f"
    words = read_paper_table(SHIPPED_PAPER_TABLES / "rajendran2016_table4.csv")
    assert (words["metric"] == "neighbour").all() and words["value"].str.len().min() > 0


@pytest.mark.parametrize(
    "value, says",
    [
        ("inf", "not finite"),
        ("-80.1", "outside [0, 100]"),
        ("801", "outside [0, 100]"),
        ("nan", "not a number"),
        ("NA", "not a number"),
        ("80.1%", "per cent sign"),
        ("31,6", "decimal comma"),
        ("thirty", "not a number"),
    ],
)
def test_a_wrong_recall_is_refused_naming_file_and_line(tmp_path, value, says):
    path = _table(tmp_path, _row("31.6", metric="R@5"), _row(value))
    with pytest.raises(InputError) as error:
        read_paper_table(path)
    assert error.value.where == str(path) and error.value.line == 3
    assert says in str(error.value) and repr(value) in str(error.value)


@pytest.mark.parametrize(
    "row, says",
    [
        (_row("1.5", metric="F1", paper="rajendran2016", table=1), "outside [0, 1]"),
        (_row("11.8", metric="R@5", paper="rajendran2016", table=5), "outside [0, 1]"),
        (_row("120", metric="BLEU", paper="calixto2017", table=3), "outside [0, 100]"),
        (_row("1.2", metric="pearson", paper="calixto2017", table=2), "outside [-1, 1]"),
        (_row("0", metric="medr"), "outside [1, inf]"),
        (_row("2.5", metric="medr"), "not a whole number"),
    ],
)
def test_per_metric_ranges(tmp_path, row, says):
    paper, table = row.split(",")[:2]
    path = _table(tmp_path, row, name=f"{paper}_table{table}.csv")
    with pytest.raises(InputError, match="line 2") as error:
        read_paper_table(path)
    assert says in str(error.value)


def test_in_range_values_and_empty_cells_read(tmp_path):
    path = _table(tmp_path, _row("0"), _row("100", metric="R@5"), _row("", metric="R@10"))
    assert read_paper_table(path)["value"].tolist()[:2] == [0.0, 100.0]


@pytest.mark.parametrize(
    "rows, line, says",
    [
        ((_row("31.6"), HEADER), 3, "the header repeated"),
        ((_row("31.6"), _row("40.0")), 3, "the cell of line 2 again"),
        ((_row("31.6", table=3),), 2, "paper 'kadar2018', table 2 (the file's name)"),
        ((_row("31.6", paper="kadar2019"),), 2, "(the file's name)"),
        ((_row("31.6", metric="R@11"),), 2, "a metric of"),
        ((_row("31.6", system=""),), 2, "a system name"),
    ],
)
def test_rows_that_are_not_this_tables_cells(tmp_path, rows, line, says):
    with pytest.raises(InputError) as error:
        read_paper_table(_table(tmp_path, *rows))
    assert error.value.line == line and says in str(error.value)


def test_a_missing_column_and_a_header_only_file(tmp_path):
    path = tmp_path / "kadar2018_table2.csv"
    path.write_text(HEADER.replace(",source_note", "") + "\n" + _row("1")[:-1] + "\n")
    with pytest.raises(InputError, match="source_note"):
        read_paper_table(path)
    path.write_text(HEADER + "\n")
    with pytest.raises(InputError, match="a header only"):
        read_paper_table(path)


def test_table_command_checks_every_reference_before_writing(tmp_path, capsys):
    paper = tmp_path / "paper_tables"
    shutil.copytree(SHIPPED_PAPER_TABLES, paper)
    bad = paper / "kadar2018_table3.csv"
    lines = bad.read_text(encoding="utf-8").splitlines()
    lines[4] = lines[4].rsplit(",", 2)[0].rsplit(",", 1)[0] + ",801,"
    bad.write_text("\n".join(lines) + "\n", encoding="utf-8")
    out = tmp_path / "tables"
    record = tmp_path / "retrieval_tables.json"
    record.write_text('{"retrieval": {}}\n', encoding="utf-8")
    argv = ["retrieval-tables", "--config", str(record), "--runs", "--paper-tables", str(paper),
            "--out", str(out)]  # fmt: skip
    assert main(argv) == 2
    err = capsys.readouterr().err
    assert f"{bad}, line 5" in err and "'801'" in err
    assert not out.exists()


def test_paper_tables_option_a_directory_files_none_or_the_shipped(tmp_path):
    """--paper-tables: not given, the shipped tables; a directory; CSV files, read from
    themselves alone; given alone, none; a path that is neither, one line naming it."""
    assert paper_tables_option(None) == shipped.paper_tables()
    assert paper_tables_option([]) is None
    assert paper_tables_option([SHIPPED_PAPER_TABLES]) == SHIPPED_PAPER_TABLES
    given = _table(tmp_path, _row("31.5"))
    _table(tmp_path, _row("1", table=3), name="kadar2018_table3.csv")  # beside it, not given
    files = paper_tables_option([given])
    assert files == (given,)
    assert load_paper_table(files, "kadar2018", 2)["value"].tolist() == [31.5]
    assert load_paper_table(files, "kadar2018", 3) is None
    with pytest.raises(InputError, match="key '--paper-tables'.*found no such file or directory"):
        paper_tables_option([tmp_path / "typo"])
    (tmp_path / "notes.txt").write_text("x")
    with pytest.raises(InputError, match="found 'notes.txt'"):
        paper_tables_option([given, tmp_path / "notes.txt"])
