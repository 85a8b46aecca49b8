"""Helpers for tests that run Snakemake: a throw-away copy of the workflow (so no test writes
into the user's results/ or .snakemake/), and Snakemake run from this venv."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
BIN = Path(sys.executable).parent  # the venv's bin: snakemake, mlmm, ruff, snakefmt
SHARED = REPO.parent / "shared"
WORKFLOW_FILES = (
    "Snakefile", "config.yaml", "workflow", "profiles", "envs", "resources/paper_tables",
    "resources/claims",  # rule claims reads the registries
)

# Dumps the parsed workflow as JSON: every rule with the directives the tests check, and the
# files `rule all` requests (FINAL_TARGETS).
_DESCRIBE = """
import json
from pathlib import Path
from snakemake.api import SnakemakeApi
from snakemake.settings.types import OutputSettings, ResourceSettings

with SnakemakeApi(OutputSettings(quiet=True)) as api:
    wf = api.workflow(resource_settings=ResourceSettings(), snakefile=Path("Snakefile"))._workflow
    rules = {
        r.name: {
            "runs_code": not r.norun,
            "local": r.name in wf._localrules,
            "conda": r.conda_env,
            "basedir": r.basedir.get_path_or_uri(secret_free=True),
            "log": [str(f) for f in r.log],
            "benchmark": str(r.benchmark) if r.benchmark else None,
            "input": [str(f) for f in r.input],
            "shell": r.shellcmd or "",
        }
        for r in wf.rules
    }
print(json.dumps(rules))
"""


# Started before every other test (pytest_collection_modifyitems): the paper miniature is about
# two thirds of `make test`'s wall time, so the fast tier runs on the other worker beside it
# instead of after it.
LONGEST_FIRST = (
    "tests/test_paper_miniature.py::test_the_paper_configuration_runs_every_rule_in_miniature",
)


def pytest_collection_modifyitems(config, items) -> None:
    """Moves the LONGEST_FIRST tests to the front, keeping every other test's order."""
    items.sort(key=lambda item: item.nodeid not in LONGEST_FIRST)


def copy_workflow(dest: Path) -> Path:
    """Copies what Snakemake needs (not results/) into dest."""
    dest.mkdir(parents=True, exist_ok=True)
    for name in WORKFLOW_FILES:
        src = REPO / name
        if src.is_dir():
            shutil.copytree(src, dest / name, ignore=shutil.ignore_patterns("__pycache__"))
        elif src.exists():
            shutil.copy2(src, dest / name)
    return dest


def tool_env(extra_path: Path | None = None) -> dict[str, str]:
    """The environment with the venv's bin (and extra_path before it) first on PATH."""
    env = dict(os.environ)
    first = [str(extra_path)] if extra_path else []
    env["PATH"] = os.pathsep.join([*first, str(BIN), env.get("PATH", "")])
    return env


# `make test` runs two xdist workers: each owns its share of the cores, and a job of a
# whole-workflow run (or torch in a test) takes no more threads than that share. Two-thread
# torch jobs of two workers on two cores spin against each other: measured on the 2-core
# machine, two ResNet-152 feature jobs side by side took 80 s with two threads each and 58 s
# with one (benchmarks/threads_side_by_side.py; docs/workflow.md, "The test suite's time").
WORKERS = int(os.environ.get("PYTEST_XDIST_WORKER_COUNT", "1"))
THREADS_PER_WORKER = max(1, (os.cpu_count() or 1) // WORKERS)
os.environ.setdefault("OMP_NUM_THREADS", str(THREADS_PER_WORKER))  # before torch is imported
# A whole-workflow run on the local machine: two jobs at once, each within the worker's threads.
LOCAL_RUN = ("--cores", "2", "--max-threads", str(THREADS_PER_WORKER))


def config_overrides() -> list[str]:
    """Points paper_tables at the real tables when ../shared is there (the copy has no ../);
    without it, the config's own null (the shipped copy) stands: Snakemake reads a
    `--config paper_tables=null` as the text "null", not as YAML's null."""
    tables = SHARED / "paper_tables"
    return ["--config", f"paper_tables={tables}"] if tables.is_dir() else []


def run_snakemake(
    workdir: Path,
    *args: str,
    extra_path: Path | None = None,
    timeout: int = 1800,
) -> subprocess.CompletedProcess:
    """Runs snakemake in workdir; stdout and stderr together in .stdout."""
    cmd = [str(BIN / "snakemake"), *args, *config_overrides()]
    return subprocess.run(
        cmd,
        cwd=workdir,
        env=tool_env(extra_path),
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
        timeout=timeout,
    )


def describe_workflow(workdir: Path) -> dict:
    """Rules of the workflow in workdir, as parsed by Snakemake itself."""
    proc = subprocess.run(
        [sys.executable, "-c", _DESCRIBE],
        cwd=workdir,
        env=tool_env(),
        capture_output=True,
        text=True,
        check=False,
    )
    assert proc.returncode == 0, proc.stderr[-3000:]
    return json.loads(proc.stdout.strip().splitlines()[-1])


@pytest.fixture
def workflow_copy(tmp_path: Path) -> Path:
    """A fresh copy of the workflow for one test."""
    return copy_workflow(tmp_path / "workflow_copy")


# The default demo run, once per session: the whole-workflow test checks it, the determinism
# test compares its tables with a second run of a subset (tests/test_determinism.py). Both are
# marked xdist_group(DEMO_RUN_GROUP) so that `pytest -n 2 --dist loadgroup` (make test) sends
# them to one worker. The run itself is shared by the workers through a lock in the session's
# base directory (the pattern of pytest-xdist's documentation): a fresh-clone `make test` once
# ran the two tests on different workers, and the demo twice (15 minutes more).
DEMO_RUN_GROUP = "default_demo_run"


@pytest.fixture(scope="session")
def default_demo_run(tmp_path_factory) -> tuple[Path, subprocess.CompletedProcess]:
    """(workdir, process) of `snakemake --cores 2` on the default config (about 13 min idle)."""
    from filelock import FileLock

    shared = tmp_path_factory.getbasetemp()
    if os.environ.get("PYTEST_XDIST_WORKER"):
        shared = shared.parent  # every worker's base directory is beside the others
    root = shared / "default_demo"
    record = root / "process.json"
    with FileLock(str(shared / "default_demo.lock")):
        if not record.is_file():
            workdir = copy_workflow(root / "workflow")
            proc = run_snakemake(workdir, *LOCAL_RUN, timeout=3600)
            record.write_text(json.dumps([proc.args, proc.returncode, proc.stdout]))
        args, returncode, stdout = json.loads(record.read_text())
    return root / "workflow", subprocess.CompletedProcess(args, returncode, stdout)
