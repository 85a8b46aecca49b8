"""Every file a table job writes is a declared output of its rule: Snakemake knows it (no stale
companion, `--delete-all-output` removes it), and two runs compare file for file. The files
``mlmm.tables.write_table`` writes for a table, plain or with intervals, are compared with the
outputs of every table job of the planned demo workflow and with what the table commands
declare (``mlmm.cli.declare_outputs``)."""

from __future__ import annotations

from pathlib import Path

import pandas as pd
import pytest
from helpers.workflow import planned_jobs

from mlmm.catalogue import ALL_FIGURES, ALL_TABLES, CLAIM_PAPERS, TABLE_SUFFIXES
from mlmm.cli import build_parser, declared_outputs
from mlmm.tables import write_table


def _written(directory: Path, stem: str, frame: pd.DataFrame) -> set[str]:
    """The names of the files write_table leaves in an empty ``directory`` for ``stem`` (not
    the write layer's hidden marker beside each, ``mlmm.io``)."""
    directory.mkdir()
    write_table(frame, directory / stem, "A table", ["a note"])
    return {path.name for path in directory.iterdir() if not path.name.startswith(".")}


def _with_intervals() -> pd.DataFrame:
    """A paper-shaped Kádár Table 2 slice with 95 % intervals (an intervals table of its own)."""
    rows = [
        dict(system=system, variant_note="", dataset="multi30k", language="en", direction=d,
             metric=m, paper=40.0, ours=41.0, ours_std=1.0, runs=3.0, diff=1.0, ours_low=35.0,
             ours_high=47.0, within_noise=True)
        for system in ("Monolingual", "Bilingual") for d in ("i2t", "t2i") for m in ("R@1", "R@5")
    ]  # fmt: skip
    return pd.DataFrame.from_records(rows)


@pytest.fixture(scope="module")
def written(tmp_path_factory) -> dict[str, set[str]]:
    """Suffixes write_table writes, for a plain table and one with intervals."""
    root = tmp_path_factory.mktemp("written")
    plain = pd.DataFrame({"language": ["en", "de"], "words": [10, 12]})
    return {
        kind: {name.removeprefix(stem) for name in _written(root / kind, stem, frame)}
        for kind, stem, frame in (
            ("plain", "plain_table", plain),
            ("intervals", "kadar2018_table2", _with_intervals()),
        )
    }


def test_write_table_writes_the_same_files_for_every_table(written):
    assert written["plain"] == written["intervals"] == set(TABLE_SUFFIXES)


@pytest.fixture(scope="module")
def table_jobs(tmp_path_factory) -> dict[str, set[str]]:
    """Each table stem the planned demo writes under results/tables -> the suffixes its job
    declares (from the job's outputs, grouped by stem)."""
    stems: dict[str, set[str]] = {}
    for job in planned_jobs(tmp_path_factory.mktemp("plan")):
        for output in job["output"]:
            path = Path(output)
            if path.parent.as_posix() == "results/tables":
                stem, _, suffix = path.name.partition(".")
                stems.setdefault(stem, set()).add(f".{suffix}")
    return stems


def test_every_table_job_declares_every_file_write_table_writes(table_jobs, written):
    tables = {*ALL_TABLES, *(f"{paper}_claims" for paper in CLAIM_PAPERS)}
    assert tables <= set(table_jobs), sorted(tables - set(table_jobs))
    wrong = {
        stem: sorted(suffixes ^ written["plain"])
        for stem, suffixes in table_jobs.items()
        if stem in tables and suffixes != written["plain"]
    }
    assert not wrong, wrong
    # the rest are the CSVs beside the figures that picture a table (Rajendran Tables 6, 7)
    others = {stem: suffixes for stem, suffixes in table_jobs.items() if stem not in tables}
    assert set(others) <= set(ALL_FIGURES) and all(s == {".csv"} for s in others.values()), others


@pytest.mark.parametrize(
    "argv",
    [
        ["kadar-table1", "--root", "r"],
        ["nmt-table", "--metrics", "m.json"],
        ["pivot-table", "--runs", "r.json"],
    ],
    ids=lambda argv: argv[0],
)
def test_table_commands_declare_every_file_write_table_writes(argv, written):
    args = build_parser().parse_args([*argv, "--out", "tables/stem"])
    assert {path.name.removeprefix("stem") for path in declared_outputs(args)} == set(
        written["plain"]
    )
