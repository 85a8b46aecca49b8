"""The workflow deployed as the snakemake-workflows catalogue's are: `snakedeploy
deploy-workflow` (which looks for workflow/Snakefile and copies config/ and profiles/), and a
module whose snakefile is an HTTP URL (served here from a copy of the checkout on the loopback:
no external network). Every file the workflow reads is found through Snakemake's source-path
API or is package data of the installed mlmm, so both plan without the checkout on disk beside
the deployment."""

from __future__ import annotations

import functools
import http.server
import re
import shutil
import subprocess
import sys
import threading
import zipfile
from pathlib import Path

import pytest
import yaml
from helpers.workflow import REPO, copy_workflow, tool_env

# deployment checks (wheel, snakedeploy, a module over HTTP): the second tier
pytestmark = [pytest.mark.full]

SNAKEMAKE = str(Path(sys.executable).parent / "snakemake")
SMALL_TARGET = "results/demo/world/MANIFEST.sha256"


def planned(output: str) -> dict[str, int]:
    """Jobs per rule of a dry run's job stats."""
    table = output.split("Job stats:", 1)[1].split("\ntotal", 1)[0]
    return {m[1]: int(m[2]) for m in re.finditer(r"^(\w+)\s+(\d+)$", table, re.M)}


def dry_run(cwd: Path, *args: str) -> subprocess.CompletedProcess:
    return subprocess.run(
        [SNAKEMAKE, "-n", *args], cwd=cwd, env=tool_env(), capture_output=True, text=True
    )


def source_tree(dest: Path) -> Path:
    """What a clone of the repository holds for the workflow (the bridges included)."""
    copy_workflow(dest)
    shutil.copytree(REPO / "config", dest / "config", symlinks=True)
    shutil.copy2(REPO / "LICENSE", dest / "LICENSE")
    return dest


def test_the_catalogue_bridges_include_the_workflow_and_copy_nothing():
    """workflow/Snakefile includes the top-level Snakefile; config/config.yaml is a link to
    the top-level config.yaml (snakedeploy copies its content into a deployment)."""
    bridge = (REPO / "workflow/Snakefile").read_text()
    includes = re.findall(r"^include:\s*\"(.+)\"$", bridge, re.M)
    assert includes == ["../Snakefile"]
    assert not re.search(r"^rule ", bridge, re.M)
    link = REPO / "config/config.yaml"
    assert link.is_symlink() and link.resolve() == (REPO / "config.yaml").resolve()


def test_the_shipped_tables_registries_and_schema_are_package_data_with_one_copy():
    import mlmm.shipped as shipped

    tables = shipped.paper_tables()
    assert tables.is_symlink() and tables.resolve() == (REPO / "resources/paper_tables").resolve()
    assert len(list(tables.glob("*_table*.csv"))) >= 20
    registry = shipped.claims_registry("kadar2018")
    assert registry.is_file() and registry.resolve().parent == (REPO / "resources/claims")
    import mlmm.schema

    schema = REPO / "src/mlmm/config.schema.yaml"
    assert schema == mlmm.schema.SCHEMA_PATH and schema.is_symlink()
    assert schema.resolve() == REPO / "workflow/schemas/config.schema.yaml"
    pyproject = (REPO / "pyproject.toml").read_text()
    assert '"paper_tables/*"' in pyproject and '"claims/*"' in pyproject


@pytest.mark.slow  # builds a wheel (the MIRA extension compiles): about 20 s
def test_a_wheel_holds_the_paper_tables_and_claims_registries(tmp_path):
    source = tmp_path / "src tree"
    source.mkdir()
    for name in ("pyproject.toml", "setup.py", "README.md", "LICENSE"):
        shutil.copy2(REPO / name, source / name)
    shutil.copytree(REPO / "src", source / "src", ignore=shutil.ignore_patterns("__pycache__"))
    shutil.copytree(REPO / "resources", source / "resources")
    shutil.copytree(REPO / "workflow/schemas", source / "workflow/schemas")
    proc = subprocess.run(
        [sys.executable, "-m", "pip", "wheel", "--no-deps", "--no-build-isolation", "-q",
         "-w", str(tmp_path / "dist"), str(source)],
        capture_output=True, text=True,
    )  # fmt: skip
    assert proc.returncode == 0, proc.stderr[-3000:]
    (wheel,) = (tmp_path / "dist").glob("mlmm-*.whl")
    names = set(zipfile.ZipFile(wheel).namelist())
    for csv in (REPO / "resources/paper_tables").glob("*.csv"):
        assert f"mlmm/paper_tables/{csv.name}" in names, csv.name
    for registry in (REPO / "resources/claims").glob("*.yaml"):
        assert f"mlmm/claims/{registry.name}" in names, registry.name
    assert "mlmm/config.schema.yaml" in names


@pytest.mark.slow  # snakedeploy and three dry runs: about 30 s
def test_snakedeploy_from_a_local_path_plans(tmp_path):
    snakedeploy = Path(sys.executable).parent / "snakedeploy"
    if not snakedeploy.exists():
        pytest.skip("snakedeploy is not installed (pip install -e .[dev])")
    source = source_tree(tmp_path / "mlmm")
    dest = tmp_path / "deployment"
    deploy = subprocess.run(
        [str(snakedeploy), "deploy-workflow", str(source), str(dest), "--branch", "main"],
        env=tool_env(), capture_output=True, text=True,
    )  # fmt: skip
    assert deploy.returncode == 0, deploy.stderr[-3000:]
    assert "not found in traditional path" not in deploy.stderr
    # the deployment's config is a copy of the workflow's default configuration
    config = dest / "config/config.yaml"
    assert not config.is_symlink() and config.read_text() == (REPO / "config.yaml").read_text()
    assert (dest / "profiles/default/config.yaml").is_file()
    module = (dest / "workflow/Snakefile").read_text()
    assert re.search(r"^configfile: \"config/config.yaml\"$", module, re.M)
    # snakedeploy's local provider writes the snakefile relative to the repository root,
    # which Snakemake resolves from the deployment's workflow/ (docs/workflow.md says so)
    assert '"workflow/Snakefile"' in module
    (dest / "workflow/Snakefile").write_text(
        module.replace('"workflow/Snakefile"', repr(str(source / "workflow/Snakefile")))
    )
    small = dry_run(dest, SMALL_TARGET)
    assert small.returncode == 0, small.stdout[-3000:] + small.stderr[-3000:]
    assert planned(small.stdout) == {"demo_world": 1}
    # a plain `snakemake` plans rule all, the same DAG as the workflow run directly
    whole = dry_run(dest)
    assert whole.returncode == 0, whole.stdout[-3000:] + whole.stderr[-3000:]
    direct = dry_run(source, "--forceall")
    assert direct.returncode == 0, direct.stdout[-3000:] + direct.stderr[-3000:]
    assert planned(whole.stdout) == planned(direct.stdout)
    assert planned(whole.stdout)["all"] == 1 and planned(whole.stdout)["train_retrieval"] > 1


@pytest.fixture
def served_checkout(tmp_path):
    """A copy of the workflow's files served over HTTP on 127.0.0.1 (a port of its own)."""
    root = source_tree(tmp_path / "served")
    handler = functools.partial(QuietHandler, directory=str(root))
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}"
    finally:
        server.shutdown()
        server.server_close()


class QuietHandler(http.server.SimpleHTTPRequestHandler):
    requested: list[str] = []

    def log_message(self, format, *args):  # noqa: A002 (the base class's name)
        QuietHandler.requested.append(self.path)


@pytest.mark.slow  # two dry runs: about 20 s
def test_a_module_from_an_http_url_plans(tmp_path, served_checkout):
    user = tmp_path / "deployment"
    (user / "config").mkdir(parents=True)
    shutil.copy(REPO / "config.yaml", user / "config/config.yaml")
    (user / "Snakefile").write_text(
        'configfile: "config/config.yaml"\n\n\n'
        "module mlmm:\n"
        f'    snakefile:\n        "{served_checkout}/workflow/Snakefile"\n'
        "    config:\n        config\n\n\n"
        "use rule * from mlmm\n"
    )
    (user / "small.yaml").write_text(yaml.safe_dump({"demo_world": {"images": 30}}))
    QuietHandler.requested.clear()
    small = dry_run(user, SMALL_TARGET, "--configfile", "small.yaml")
    assert small.returncode == 0, small.stdout[-3000:] + small.stderr[-3000:]
    assert planned(small.stdout) == {"demo_world": 1}
    # the rules files and the schema came from the server, not from a local path
    assert "/workflow/schemas/config.schema.yaml" in QuietHandler.requested
    assert "/workflow/rules/report.smk" in QuietHandler.requested
    whole = dry_run(user, "--forceall")
    assert whole.returncode == 0, whole.stdout[-3000:] + whole.stderr[-3000:]
    assert planned(whole.stdout)["all"] == 1 and planned(whole.stdout)["claims"] == 1
