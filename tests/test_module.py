"""The workflow used as a Snakemake module: another workflow imports it with
`module mlmm: snakefile: <path>/Snakefile  config: config` and `use rule * from mlmm`, as
snakedeploy's deployed Snakefile does. Its repository files are found through Snakemake's
source-path API (from its own Snakefile, not from the importing workflow's directory), and its
jobs run the mlmm installed in their environment: no PYTHONPATH override puts the workflow's
src/ first (tests/test_deploy.py: snakedeploy and a module from an HTTP URL)."""

from __future__ import annotations

import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
import yaml
from helpers.snakefiles import module_snakefile
from helpers.workflow import REPO, copy_workflow, tool_env

SNAKEMAKE = str(Path(sys.executable).parent / "snakemake")
# the deployment's own rule beside the module's: which mlmm its jobs import
WHICH_MLMM = """

rule which_mlmm:
    output:
        "which_mlmm.txt",
    shell:
        "python -c 'import mlmm; print(mlmm.__file__)' > {output}"
"""


def planned_jobs(output: str) -> int:
    return int(re.search(r"^total\s+(\d+)$", output, flags=re.MULTILINE)[1])


@pytest.mark.slow  # two dry runs of the whole DAG and a demo world job: about 30 s
@pytest.mark.full
def test_the_workflow_runs_as_a_module_from_a_local_path(tmp_path):
    # the workflow with its own source tree, at a path of its own (not this checkout)
    source = copy_workflow(tmp_path / "mlmm workflow")
    shutil.copytree(REPO / "src", source / "src", ignore=shutil.ignore_patterns("__pycache__"))
    # the user's deployment: its own Snakefile and config/config.yaml (snakedeploy's layout)
    user = tmp_path / "deployment"
    (user / "config").mkdir(parents=True)
    shutil.copy(REPO / "config.yaml", user / "config/config.yaml")
    (user / "Snakefile").write_text(module_snakefile(source / "Snakefile", WHICH_MLMM))
    (user / "small.yaml").write_text(yaml.safe_dump({"demo_world": {"images": 30}}))
    env = tool_env()

    plan = subprocess.run(
        [SNAKEMAKE, "-n", "--forceall"], cwd=user, env=env, capture_output=True, text=True
    )
    assert plan.returncode == 0, plan.stdout[-3000:] + plan.stderr[-3000:]
    direct = subprocess.run(
        [SNAKEMAKE, "-n", "--forceall", "-s", str(source / "Snakefile"), "-d", str(tmp_path)],
        env=env, capture_output=True, text=True,
    )  # fmt: skip
    assert direct.returncode == 0, direct.stdout[-3000:] + direct.stderr[-3000:]
    # the same DAG as the workflow run directly, plus the importing workflow's own rule
    assert planned_jobs(plan.stdout) == planned_jobs(direct.stdout) > 100

    run = subprocess.run(
        [SNAKEMAKE, "--cores", "1", "which_mlmm", "results/demo/world/MANIFEST.sha256",
         "--configfile", "small.yaml"],
        cwd=user, env=env, capture_output=True, text=True,
    )  # fmt: skip
    assert run.returncode == 0, run.stdout[-3000:] + run.stderr[-3000:]
    assert (user / "results/demo/world/MANIFEST.sha256").is_file()
    imported = Path((user / "which_mlmm.txt").read_text().strip())
    import mlmm  # the environment's (here PYTHONPATH or the venv's), as the job's

    assert imported == Path(mlmm.__file__) and not imported.is_relative_to(source)


def test_the_version_is_one_and_has_a_changelog_section():
    """pyproject's version, mlmm.__version__ and a CHANGELOG.md section agree; the release tag
    is v<version> (CHANGELOG.md)."""
    import tomllib

    import mlmm

    version = tomllib.loads((REPO / "pyproject.toml").read_text())["project"]["version"]
    assert mlmm.__version__ == version
    assert re.search(rf"^## {re.escape(version)}\b", (REPO / "CHANGELOG.md").read_text(), re.M)


def test_config_readme_describes_every_config_file_and_key_group():
    schema = yaml.safe_load((REPO / "workflow/schemas/config.schema.yaml").read_text())
    readme = (REPO / "config/README.md").read_text()
    for key in schema["properties"]:
        assert f"| `{key}` |" in readme, key
    for path in (REPO / "config").glob("*.yaml"):
        assert f"`{path.name}`" in readme, path.name
