"""Fixtures and hooks of the suite: a throw-away copy of the workflow for one test, and the demo
workflow runs that several tests inspect (run once per session). The plain helpers they use
live in tests/helpers/workflow.py."""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path

import pytest
from helpers.workflow import LOCAL_RUN, SMALL_DEMO_CONFIG, copy_workflow, run_snakemake

# Started before every other test (pytest_collection_modifyitems): the paper miniature is the
# longest test of `make test-full`, so the other worker runs the rest beside it instead of
# after it.
LONGEST_FIRST = (
    "tests/test_paper_miniature.py::test_the_paper_configuration_runs_every_rule_in_miniature",
)


def pytest_collection_modifyitems(config, items) -> None:
    """Moves the LONGEST_FIRST tests to the front, keeping every other test's order."""
    items.sort(key=lambda item: item.nodeid not in LONGEST_FIRST)


@pytest.fixture
def workflow_copy(tmp_path: Path) -> Path:
    """A fresh copy of the workflow for one test."""
    return copy_workflow(tmp_path / "workflow_copy")


# The demo runs, each once per session: the whole-workflow tests check them, the determinism
# test compares the small run's tables with a second run of a subset (tests/test_determinism.py).
# The tests of one run are marked xdist_group(DEMO_RUN_GROUP) so that `pytest -n 2 --dist
# loadgroup` sends them to one worker; the run itself is also shared by the workers through a
# lock in the session's base directory (the pattern of pytest-xdist's documentation), so that
# a test on another worker waits for the run instead of making it again.
def _shared_run(
    tmp_path_factory, name: str, *args: str
) -> tuple[Path, subprocess.CompletedProcess]:
    """(workdir, process) of `snakemake ARGS` in a copy of the workflow, once per session."""
    from filelock import FileLock

    shared = tmp_path_factory.getbasetemp()
    if os.environ.get("PYTEST_XDIST_WORKER"):
        shared = shared.parent  # every worker's base directory is beside the others
    root = shared / name
    record = root / "process.json"
    with FileLock(str(shared / f"{name}.lock")):
        if not record.is_file():
            workdir = copy_workflow(root / "workflow")
            proc = run_snakemake(workdir, *LOCAL_RUN, *args, timeout=3600)
            record.write_text(json.dumps([proc.args, proc.returncode, proc.stdout]))
        args, returncode, stdout = json.loads(record.read_text())
    return root / "workflow", subprocess.CompletedProcess(args, returncode, stdout)


@pytest.fixture(scope="session")
def small_demo_run(tmp_path_factory) -> tuple[Path, subprocess.CompletedProcess]:
    """(workdir, process) of `snakemake --cores 2` on the default config with the small sizes
    of .test/config/config.yaml laid over it."""
    return _shared_run(tmp_path_factory, "small_demo", "--configfile", SMALL_DEMO_CONFIG)


@pytest.fixture(scope="session")
def default_demo_run(tmp_path_factory) -> tuple[Path, subprocess.CompletedProcess]:
    """(workdir, process) of `snakemake --cores 2` on the default config (make test-full)."""
    return _shared_run(tmp_path_factory, "default_demo")
