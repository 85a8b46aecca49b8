"""Reruns follow results: on a finished run of the demo configuration (every output made and
recorded by `snakemake --touch --forceall`: nothing trained), a dry run with only the params
rerun trigger after one configuration change lists the jobs Snakemake would rerun. A setting
that changes no result (the feature extraction's batch size, loader workers, threads, the
device of every stage) reruns only the copy of the configuration the report links (rule
`configuration`: that file holds every setting); a table label reruns the tables that print it
and no training; a setting that changes results reruns the jobs it changes (so the check can
fail).

No job's params name where the checkout lies (the planned demo, every job): a moved checkout
or a new clone reruns nothing. The papers' tables are the package's own unless config
paper_tables names a directory, whose CSVs are then the table jobs' inputs."""

from __future__ import annotations

import copy
import re
import subprocess
from pathlib import Path

import pytest
import yaml
from helpers.workflow import BIN, REPO, planned_jobs, tool_env

import mlmm

# a touched demo run and a dry run per setting: the second tier (the tests of the finished run)
SECOND_TIER = [pytest.mark.slow, pytest.mark.full]

CONFIG = yaml.safe_load((REPO / "config.yaml").read_text(encoding="utf-8"))


def _label_changed() -> dict:
    """The first variant's first paper row with its variant_note (a table label) changed."""
    name, variant = next(
        (n, v) for n, v in CONFIG["retrieval"]["variants"].items() if v.get("paper_rows")
    )
    rows = copy.deepcopy(variant["paper_rows"])
    rows[0]["variant_note"] = f"{rows[0].get('variant_note', '')} (relabelled)"
    return {"retrieval": {"variants": {name: {"paper_rows": rows}}}}


# change -> (rules that must rerun, rules that must not)
NOT_RESULTS = {
    "features.batch_size": ({"features": {"batch_size": 7}}, set()),
    "features.workers": ({"features": {"workers": 1}}, set()),
    "features.threads": ({"features": {"threads": 3}}, set()),
    "features.device": ({"features": {"device": "cpu"}}, set()),
    "retrieval.threads": ({"retrieval": {"threads": 2}}, set()),
    "retrieval.defaults.device": ({"retrieval": {"defaults": {"device": "cpu"}}}, set()),
    "nmt.device": ({"nmt": {"device": "cpu"}}, set()),
    "ted.device": ({"ted": {"device": "cpu"}}, set()),
    "pivot.device": ({"pivot": {"device": "cpu"}}, set()),
}
RESULTS = {
    # a label: the tables that print it, never a training
    "paper_rows.variant_note": (_label_changed(), {"train_retrieval", "extract_features"}),
    "features.dtype": ({"features": {"dtype": "float16"}}, set()),
    "retrieval.defaults.epochs": ({"retrieval": {"defaults": {"epochs": 3}}}, set()),
}
MUST_RERUN = {
    "paper_rows.variant_note": {"retrieval_tables_kadar2018"},
    "features.dtype": {"extract_features", "train_retrieval"},
    "retrieval.defaults.epochs": {"train_retrieval"},
}


def _snakemake(workdir: Path, *args: str) -> subprocess.CompletedProcess:
    return subprocess.run(
        [str(BIN / "snakemake"), "-s", str(REPO / "Snakefile"), "-d", str(workdir), *args],
        env=tool_env(), stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, timeout=900,
    )  # fmt: skip


# the copy of the whole configuration (every setting in it), and the target rule
CONFIGURATION_COPY = {"configuration", "all"}


def _planned(output: str) -> set[str]:
    if "Nothing to be done" in output:
        return set()
    table = output.split("Job stats:", 1)[1].split("total", 1)[0]
    return {m.group(1) for m in re.finditer(r"^(\w+)\s+\d+$", table, flags=re.MULTILINE)}


@pytest.fixture(scope="module")
def finished(tmp_path_factory) -> Path:
    """A working directory whose every output exists and is recorded with its params."""
    workdir = tmp_path_factory.mktemp("finished")
    plan = _snakemake(workdir, "-n", "--forceall")
    assert plan.returncode == 0, plan.stdout[-3000:]
    for line in re.findall(r"^    output: (.*)$", plan.stdout, flags=re.MULTILINE):
        for path in line.split(", "):
            (workdir / path).parent.mkdir(parents=True, exist_ok=True)
            (workdir / path).touch()
    touched = _snakemake(workdir, "--touch", "--forceall", "-c1", "-q")
    assert touched.returncode == 0, touched.stdout[-3000:]
    again = _snakemake(workdir, "-n", "--rerun-triggers", "params")
    assert "Nothing to be done" in again.stdout, again.stdout[-3000:]
    return workdir


def _rerun(workdir: Path, change: dict, tmp_path: Path) -> set[str]:
    override = tmp_path / "change.yaml"
    override.write_text(yaml.safe_dump(change), encoding="utf-8")
    proc = _snakemake(workdir, "-n", "--rerun-triggers", "params",
                      "--configfile", str(REPO / "config.yaml"), str(override))  # fmt: skip
    assert proc.returncode == 0, proc.stdout[-3000:]
    return _planned(proc.stdout)


@pytest.mark.parametrize("key", [pytest.param(key, marks=SECOND_TIER) for key in NOT_RESULTS])
def test_a_throughput_setting_reruns_nothing(key, finished, tmp_path):
    change, _ = NOT_RESULTS[key]
    assert _rerun(finished, change, tmp_path) == CONFIGURATION_COPY


@pytest.mark.parametrize("key", [pytest.param(key, marks=SECOND_TIER) for key in RESULTS])
def test_a_result_setting_reruns_what_it_changes_only(key, finished, tmp_path):
    change, never = RESULTS[key]
    rerun = _rerun(finished, change, tmp_path)
    assert MUST_RERUN[key] <= rerun, rerun
    assert not rerun & never, rerun


def _checkout_paths(jobs: list[dict], *places: Path) -> list[str]:
    """'rule: param' for every param of every job that names one of ``places``."""
    names = {str(place) for place in places} | {str(place.resolve()) for place in places}
    return [f"{job['rule']}: {value}" for job in jobs for value in job["params"]
            if any(name in value for name in names)]  # fmt: skip


def test_no_job_parameter_names_the_checkout(tmp_path):
    """Every job of the planned demo: its params (what the params trigger compares) hold no
    absolute path of this checkout, or of the package the jobs run, or of a configured
    paper_tables directory, whose CSVs are inputs of the jobs that read them instead."""
    package = Path(mlmm.__file__).parent
    jobs = planned_jobs(tmp_path / "shipped")
    assert len(jobs) > 100 and {"claims", "kadar_table1"} <= {job["rule"] for job in jobs}
    assert _checkout_paths(jobs, REPO, package) == []
    mine = tmp_path / "my_tables"
    mine.mkdir()
    for csv in sorted((REPO / "resources/paper_tables").glob("*_table*.csv")):
        (mine / csv.name).write_bytes(csv.read_bytes())
    jobs = planned_jobs(tmp_path / "configured", {"paper_tables": str(mine)})
    assert _checkout_paths(jobs, REPO, package, mine) == []
    readers = {job["rule"]: job["input"] for job in jobs
               if any(Path(p).parent == mine for p in job["input"])}  # fmt: skip
    assert {"kadar_table1", "nmt_table", "pivot_table", "ted_tables", "claims"} <= set(readers)
    assert str(mine / "kadar2018_table2.csv") in readers["retrieval_tables_kadar2018"]
