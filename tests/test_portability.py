"""The workflow parses, lints and plans with a Snakemake that has nothing of the project
installed (issue 21): the usual setup for `--use-conda` and clusters is a conda, mamba or pipx
Snakemake, which has no mlmm, torch or numpy of its own."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest
from helpers.local_data import provide_local_data

REPO = Path(__file__).resolve().parents[1]
PAPER_LOCAL_DATA = (
    "flickr30k-images", "mic-test", "ted-cldc", "semeval-sts", "meteor-1.5/meteor-1.5.jar",
)


@pytest.fixture(scope="module")
def bare_snakemake(tmp_path_factory) -> Path:
    """A venv with Snakemake alone (the project's constraints), made once for the module."""
    venv = tmp_path_factory.mktemp("snakemake_only")
    subprocess.run([sys.executable, "-m", "venv", str(venv)], check=True)
    pip = subprocess.run(
        [str(venv / "bin/pip"), "install", "-q", "-c", str(REPO / "constraints.txt"),
         "snakemake"],
        capture_output=True, text=True,
    )  # fmt: skip
    if pip.returncode != 0:
        pytest.skip(f"pip could not install snakemake: {pip.stderr.strip().splitlines()[-1:]}")
    probe = subprocess.run([str(venv / "bin/python"), "-c", "import mlmm"], capture_output=True)
    assert probe.returncode != 0, "the bare venv must not see mlmm"
    return venv / "bin"


def _bare(bin_dir: Path, *args: str, cwd: Path) -> subprocess.CompletedProcess:
    # a fresh shell: no PYTHONPATH, no project venv on PATH
    env = {"PATH": f"{bin_dir}:/usr/bin:/bin", "HOME": str(Path.home())}
    return subprocess.run(
        [str(bin_dir / "snakemake"), *args], cwd=cwd, env=env, capture_output=True, text=True
    )


@pytest.mark.slow
@pytest.mark.full
def test_a_snakemake_without_mlmm_plans_and_lints_from_the_checkout(bare_snakemake):
    # --forceall: every job, whether or not `make demo` already made results/ in this checkout
    plan = _bare(bare_snakemake, "-n", "--forceall", cwd=REPO)
    assert plan.returncode == 0, plan.stderr[-2000:]
    assert "train_retrieval" in plan.stdout
    lint = _bare(bare_snakemake, "--lint", cwd=REPO)
    assert lint.returncode == 0, (lint.stdout + lint.stderr)[-2000:]


@pytest.mark.slow
@pytest.mark.full
def test_a_snakemake_without_mlmm_plans_the_paper_config_from_another_directory(
    bare_snakemake, tmp_path
):
    for name in PAPER_LOCAL_DATA:
        provide_local_data(tmp_path, name)
    plan = _bare(
        bare_snakemake, "-n", "-s", str(REPO / "Snakefile"), "-d", str(tmp_path),
        "--configfile", str(REPO / "config/paper.yaml"), cwd=tmp_path,
    )  # fmt: skip
    assert plan.returncode == 0, plan.stderr[-2000:]
    assert "pivot_train" in plan.stdout and "No module named" not in plan.stderr


@pytest.mark.parametrize("env", ["core", "torch"])
def test_conda_post_deploy_installs_the_checkout_from_any_working_directory(env, tmp_path):
    """Snakemake runs the script from a copy under .snakemake/conda/, in the working directory
    (`-d` anywhere): it installs a copy of the source tree MLMM_ROOT names, which the Snakefile
    exports (not an editable link to it: issue 30)."""
    fake = tmp_path / "bin"
    fake.mkdir()
    # records its arguments and what the directory it is given to install holds
    (fake / "python").write_text(
        '#!/bin/bash\necho "$@" > "$RECORD"\nfor last; do :; done\nls "$last" >> "$RECORD"\n'
    )
    (fake / "python").chmod(0o755)
    script = tmp_path / "copy.post-deploy.sh"
    script.write_text((REPO / f"envs/{env}.post-deploy.sh").read_text())
    base = {"PATH": f"{fake}:/usr/bin:/bin", "RECORD": str(tmp_path / "argv")}
    ok = subprocess.run(["bash", str(script)], cwd=tmp_path, env={**base, "MLMM_ROOT": str(REPO)})
    assert ok.returncode == 0
    argv, *listing = (tmp_path / "argv").read_text().splitlines()
    assert "--no-deps" in argv.split() and "--editable" not in argv
    assert str(REPO) not in argv and {"pyproject.toml", "src"} <= set(listing)
    unset = subprocess.run(["bash", str(script)], cwd=tmp_path, env=base, capture_output=True)
    assert unset.returncode != 0 and b"MLMM_ROOT" in unset.stderr


def test_the_snakefile_exports_its_checkout_for_the_post_deploy_scripts(tmp_path):
    snakefile = str(REPO / "Snakefile")
    code = (
        "import os; from pathlib import Path; from snakemake.api import SnakemakeApi;"
        "from snakemake.settings.types import OutputSettings, ResourceSettings\n"
        "with SnakemakeApi(OutputSettings(quiet=True)) as api:\n"
        "    wf = api.workflow(resource_settings=ResourceSettings(),"
        f" snakefile=Path({snakefile!r}))\n"
        "    assert wf._workflow.rules\n"
        "print(os.environ['MLMM_ROOT'])"
    )
    out = subprocess.run([sys.executable, "-c", code], cwd=tmp_path, capture_output=True, text=True)
    assert out.returncode == 0, out.stderr[-2000:]
    assert Path(out.stdout.strip().splitlines()[-1]) == REPO
