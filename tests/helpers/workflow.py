"""Running Snakemake from the tests: a throw-away copy of the workflow (so that no test writes
into the user's results/ or .snakemake/), Snakemake run from this venv, and the threads each
xdist worker may use."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
BIN = Path(sys.executable).parent  # the venv's bin: snakemake, mlmm, ruff, snakefmt
SHARED = REPO.parent / "shared"
WORKFLOW_FILES = (
    "Snakefile", "config.yaml", "workflow", "profiles", "envs", "resources/paper_tables",
    "resources/claims",  # rule claims reads the registries
    ".test",  # the demo at test size (.test/config/config.yaml)
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
# with one (docs/workflow.md, "Test tiers").
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


# The xdist group of the tests that inspect one shared demo run (conftest.py): one worker runs
# them all, after the run.
DEMO_RUN_GROUP = "demo_run"

# The demo at test size: the default config with the sizes of this file laid over it (the same
# rules and jobs, small data and models), as `--configfile` in a copy of the workflow.
SMALL_DEMO_CONFIG = ".test/config/config.yaml"


# Plans the workflow (every job, as with --forceall) with Snakemake's own API and dumps each
# job's rule, params, input and output as JSON: what a dry run would run, with the values the
# params rerun trigger compares.
_PLAN = """
import json, sys
from pathlib import Path
from snakemake.api import SnakemakeApi
from snakemake.settings.enums import Quietness
from snakemake.settings.types import (
    ConfigSettings, DAGSettings, OutputSettings, ResourceSettings,
)

snakefile, workdir, config = Path(sys.argv[1]), Path(sys.argv[2]), json.loads(sys.argv[3])
with SnakemakeApi(OutputSettings(quiet={Quietness.ALL})) as api:
    workflow_api = api.workflow(
        resource_settings=ResourceSettings(cores=1), config_settings=ConfigSettings(config=config),
        snakefile=snakefile, workdir=workdir,
    )
    workflow_api.dag(DAGSettings(forceall=True))
    wf = workflow_api._workflow
    wf._prepare_dag(forceall=True, ignore_incomplete=True, lock_warn_only=True, nolock=True)
    wf._build_dag()
    jobs = [
        {"rule": job.rule.name, "params": [str(value) for value in job.params],
         "input": [str(f) for f in job.input], "output": [str(f) for f in job.output],
         "shell": job.shellcmd or ""}
        for job in wf.dag.jobs
    ]
print(json.dumps(jobs))
"""


def planned_jobs(workdir: Path, config: dict | None = None) -> list[dict]:
    """Every job of the default target planned in ``workdir`` with this checkout's Snakefile
    (``config``: --config values): {"rule", "params", "input", "output", "shell"}, values as
    text (``shell``: the job's command line as Snakemake runs it)."""
    proc = subprocess.run(
        [sys.executable, "-c", _PLAN, str(REPO / "Snakefile"), str(workdir),
         json.dumps(config or {})],
        env=tool_env(), capture_output=True, text=True, check=False, timeout=600,
    )  # fmt: skip
    assert proc.returncode == 0, (proc.stdout + proc.stderr)[-3000:]
    return json.loads(proc.stdout.strip().splitlines()[-1])
