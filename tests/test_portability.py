"""The workflow parses, lints and plans with a Snakemake that has nothing of the project but
the mlmm package itself (installed without dependencies): the usual setup for `--use-conda`
and clusters is a conda, mamba or pipx Snakemake, which has no torch or numpy of its own.
Without mlmm, the workflow stops with one line saying so. The envs install mlmm from the
workflow's own source (MLMM_SOURCE, which the Snakefile exports)."""

from __future__ import annotations

import os
import shutil
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
    probe = subprocess.run(
        [str(venv / "bin/python"), "-c", "import mlmm"], env=CLEAN_ENV, capture_output=True
    )
    assert probe.returncode != 0, "the bare venv must not see mlmm"
    return venv / "bin"


# a fresh shell: no PYTHONPATH, no project venv on PATH
CLEAN_ENV = {"PATH": "/usr/bin:/bin", "HOME": str(Path.home())}


def _bare(bin_dir: Path, *args: str, cwd: Path) -> subprocess.CompletedProcess:
    env = {**CLEAN_ENV, "PATH": f"{bin_dir}:/usr/bin:/bin"}
    return subprocess.run(
        [str(bin_dir / "snakemake"), *args], cwd=cwd, env=env, capture_output=True, text=True
    )


@pytest.fixture(scope="module")
def snakemake_with_mlmm(bare_snakemake, tmp_path_factory) -> Path:
    """The bare Snakemake venv plus `pip install --no-deps <checkout>`: what the docs ask of
    the Python that runs Snakemake (the parse needs only mlmm's standard-library modules)."""
    source = tmp_path_factory.mktemp("mlmm_source")
    for name in ("pyproject.toml", "setup.py", "README.md", "LICENSE"):
        shutil.copy2(REPO / name, source / name)
    for name in ("src", "resources", "workflow/schemas"):
        shutil.copytree(REPO / name, source / name, ignore=shutil.ignore_patterns("__pycache__"))
    pip = subprocess.run(
        [str(bare_snakemake / "pip"), "install", "-q", "--no-deps", str(source)],
        env=CLEAN_ENV, capture_output=True, text=True,
    )  # fmt: skip
    assert pip.returncode == 0, pip.stderr[-3000:]
    return bare_snakemake


@pytest.mark.slow
@pytest.mark.full
def test_a_snakemake_without_mlmm_stops_with_one_line(bare_snakemake, tmp_path):
    plan = _bare(bare_snakemake, "-n", "-s", str(REPO / "Snakefile"), cwd=tmp_path)
    assert plan.returncode != 0
    lines = [line for line in plan.stderr.splitlines() if line.startswith("mlmm:")]
    assert len(lines) == 1 and "needs the mlmm package" in lines[0], plan.stderr[-2000:]
    assert "Traceback" not in plan.stderr


@pytest.mark.slow
@pytest.mark.full
def test_a_snakemake_with_mlmm_alone_plans_and_lints_from_the_checkout(snakemake_with_mlmm):
    # --forceall: every job, whether or not `make demo` already made results/ in this checkout
    plan = _bare(snakemake_with_mlmm, "-n", "--forceall", cwd=REPO)
    assert plan.returncode == 0, plan.stderr[-2000:]
    assert "train_retrieval" in plan.stdout
    lint = _bare(snakemake_with_mlmm, "--lint", cwd=REPO)
    assert lint.returncode == 0, (lint.stdout + lint.stderr)[-2000:]


@pytest.mark.slow
@pytest.mark.full
def test_a_snakemake_with_mlmm_alone_plans_the_paper_config_from_another_directory(
    snakemake_with_mlmm, tmp_path
):
    for name in PAPER_LOCAL_DATA:
        provide_local_data(tmp_path, name)
    plan = _bare(
        snakemake_with_mlmm, "-n", "-s", str(REPO / "Snakefile"), "-d", str(tmp_path),
        "--configfile", str(REPO / "config/paper.yaml"), cwd=tmp_path,
    )  # fmt: skip
    assert plan.returncode == 0, plan.stderr[-2000:]
    assert "pivot_train" in plan.stdout and "No module named" not in plan.stderr


@pytest.mark.parametrize("env", ["core", "torch"])
def test_conda_post_deploy_installs_the_source_from_any_working_directory(env, tmp_path):
    """Snakemake runs the script from a copy under .snakemake/conda/, in the working directory
    (`-d` anywhere): it installs what MLMM_SOURCE names (which the Snakefile exports): a copy
    of a local checkout (not an editable link to it), or a pip requirement as it is."""
    fake = tmp_path / "bin"
    fake.mkdir()
    # records its arguments and what the directory it is given to install holds
    (fake / "python").write_text(
        '#!/bin/bash\necho "$@" > "$RECORD"\nfor last; do :; done\n'
        'ls "$last" >> "$RECORD" 2>/dev/null || true\n'
    )
    (fake / "python").chmod(0o755)
    script = tmp_path / "copy.post-deploy.sh"
    script.write_text((REPO / f"envs/{env}.post-deploy.sh").read_text())
    base = {"PATH": f"{fake}:/usr/bin:/bin", "RECORD": str(tmp_path / "argv")}
    ok = subprocess.run(["bash", str(script)], cwd=tmp_path, env={**base, "MLMM_SOURCE": str(REPO)})
    assert ok.returncode == 0
    argv, *listing = (tmp_path / "argv").read_text().splitlines()
    assert "--no-deps" in argv.split() and "--editable" not in argv
    assert str(REPO) not in argv and {"pyproject.toml", "src", "resources"} <= set(listing)
    remote = "mlmm @ git+https://github.com/owner/mlmm@v1"
    ok = subprocess.run(["bash", str(script)], cwd=tmp_path, env={**base, "MLMM_SOURCE": remote})
    assert ok.returncode == 0 and (tmp_path / "argv").read_text().startswith(
        "-m pip install --no-deps --no-build-isolation --no-cache-dir mlmm @ git+https://"
    )
    unset = subprocess.run(["bash", str(script)], cwd=tmp_path, env=base, capture_output=True)
    assert unset.returncode != 0 and b"MLMM_SOURCE" in unset.stderr


def test_the_snakefile_exports_its_source_for_the_post_deploy_scripts(tmp_path):
    snakefile = str(REPO / "workflow/Snakefile")  # the catalogue's entry: the same source
    code = (
        "import os; from pathlib import Path; from snakemake.api import SnakemakeApi;"
        "from snakemake.settings.types import OutputSettings, ResourceSettings\n"
        "with SnakemakeApi(OutputSettings(quiet=True)) as api:\n"
        "    wf = api.workflow(resource_settings=ResourceSettings(),"
        f" snakefile=Path({snakefile!r}))\n"
        "    assert wf._workflow.rules\n"
        "print(os.environ['MLMM_SOURCE'])"
    )
    env = {k: v for k, v in os.environ.items() if k != "MLMM_SOURCE"}
    out = subprocess.run(
        [sys.executable, "-c", code], cwd=tmp_path, env=env, capture_output=True, text=True
    )
    assert out.returncode == 0, out.stderr[-2000:]
    assert Path(out.stdout.strip().splitlines()[-1]) == REPO


def test_pip_sources_of_each_kind_of_workflow_source(tmp_path):
    from snakemake.sourcecache import GithubFile, LocalGitFile, LocalSourceFile

    from mlmm.deployment import pip_source

    assert pip_source(LocalSourceFile(str(REPO / "workflow"))) == str(REPO)
    assert pip_source(LocalSourceFile(str(REPO))) == str(REPO)
    assert pip_source(LocalSourceFile(str(tmp_path))) is None  # no package source there
    github = GithubFile(repo="owner/mlmm", path="workflow", tag="v0.3.0")
    assert pip_source(github) == "mlmm @ git+https://github.com/owner/mlmm@v0.3.0"
    local_git = LocalGitFile(str(tmp_path), "workflow", tag="v0.3.0")
    assert pip_source(local_git) == f"mlmm @ git+file://{tmp_path}@v0.3.0"
    assert pip_source(LocalSourceFile("http://127.0.0.1:8765/workflow")) is None
