"""profiles/slurm composes with a site's profile (fake sbatch/sinfo/sacct: tests/slurm_stub.py).

The workflow profile says only what the workflow knows (executor, retries, keep-going); every
rule states its own gpu, mem_mb and runtime in its `resources:`. So the docs' recipes hold: a
site profile's account, partitions and default resources survive `--workflow-profile
profiles/slurm`; `--set-resources RULE:runtime=N` changes that rule alone; and the workflow
profile, named by its path, applies when snakemake runs from another directory with -s."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest
import yaml
from helpers import slurm_stub
from helpers.snakefiles import toy_snakefile
from helpers.workflow import REPO, tool_env

# cluster profile checks through the SLURM plugin: the second tier
pytestmark = [pytest.mark.full]

PROFILE = REPO / "profiles/slurm"

# Rules named as the workflow's, stating their needs as the workflow's rules do; one fails.
TOY_SNAKEFILE = toy_snakefile(("features.txt", "broken.txt"), features_seconds=2)


def test_the_workflow_profile_says_only_what_the_workflow_knows():
    profile = yaml.safe_load((PROFILE / "config.yaml").read_text())
    assert profile["executor"] == "slurm" and profile["retries"] >= 1
    assert profile["keep-going"] is True
    # a site's defaults and per-rule settings are not replaced: none are set here
    assert "default-resources" not in profile and "set-resources" not in profile
    assert "config" not in profile


def test_every_rule_of_the_workflow_states_its_memory_and_runtime():
    """What profiles/slurm used to set for every rule is in the rules themselves."""
    code = (
        "import json; from pathlib import Path; from snakemake.api import SnakemakeApi\n"
        "from snakemake.settings.enums import Quietness\n"
        "from snakemake.settings.types import OutputSettings, ResourceSettings\n"
        "with SnakemakeApi(OutputSettings(quiet={Quietness.ALL})) as api:\n"
        "    wf = api.workflow(resource_settings=ResourceSettings(),"
        " snakefile=Path('Snakefile'))._workflow\n"
        "    print(json.dumps({r.name: sorted(r.resources) for r in wf.rules"
        " if r.shellcmd}))\n"
    )
    proc = subprocess.run(
        [sys.executable, "-c", code], cwd=REPO, env=tool_env(), capture_output=True, text=True
    )
    assert proc.returncode == 0, proc.stderr[-3000:]
    resources = json.loads(proc.stdout.strip().splitlines()[-1])
    assert len(resources) > 30
    missing = {name: keys for name, keys in resources.items()
               if not {"mem_mb", "runtime"} <= set(keys)}  # fmt: skip
    assert not missing, missing


def argv_value(argv: list[str], flag: str) -> str:
    return argv[argv.index(flag) + 1]


@pytest.mark.slow  # three jobs through the SLURM plugin against the stubs: about 40 s
def test_a_site_profile_and_the_workflow_profile_compose_from_another_directory(
    tmp_path, monkeypatch
):
    monkeypatch.setenv("MLMM_SLURM_STUB", str(tmp_path / "stub/state"))
    slurm_stub.install(tmp_path / "stub/bin")
    workflow = tmp_path / "checkout"
    workflow.mkdir()
    (workflow / "Snakefile").write_text(TOY_SNAKEFILE)
    # the site's profile: its account, its default memory, and the plugin's partition file
    # (GPU jobs to the GPU partition, the others to the CPU one)
    site = tmp_path / "site"
    site.mkdir()
    (site / "partitions.yaml").write_text(yaml.safe_dump({"partitions": {
        "cpu": {"max_gpu": 0}, "gpu": {"max_gpu": 4, "max_runtime": 2880},
    }}))  # fmt: skip
    (site / "config.yaml").write_text(yaml.safe_dump({
        "executor": "slurm",
        "default-resources": {"slurm_account": slurm_stub.ACCOUNT, "mem_mb": 1234},
        "slurm-partition-config": str(site / "partitions.yaml"),
    }))  # fmt: skip
    run_dir = tmp_path / "run"
    run_dir.mkdir()
    proc = subprocess.run(
        [str(Path(sys.executable).parent / "snakemake"), "-s", str(workflow / "Snakefile"),
         "--profile", str(site), "--workflow-profile", str(PROFILE),
         "--set-resources", "extract_features:runtime=30", "--retries", "0",
         "--slurm-init-seconds-before-status-checks", "1"],
        cwd=run_dir, env=tool_env(tmp_path / "stub/bin"), stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT, text=True, timeout=900,
    )  # fmt: skip
    submitted = {}
    for path in (tmp_path / "stub/state/jobs").glob("*.json"):
        argv = [a for a in json.loads(path.read_text())["argv"] if not a.startswith("--wrap")]
        rule = argv_value(argv, "--comment").removeprefix("rule_").split("_wildcards_")[0]
        submitted.setdefault(rule, []).append(argv)
    # keep-going (the workflow profile): the failed job did not stop the GPU job after it
    assert proc.returncode != 0, proc.stdout[-3000:]
    assert (run_dir / "features.txt").is_file(), proc.stdout[-5000:]
    assert (run_dir / "features.txt").read_text() == "world\n"
    (cpu,) = submitted["demo_world"]
    (gpu,) = submitted["extract_features"]
    # the site's account survives (a resource of every job, not the plugin's guess)
    assert proc.stdout.count(f"slurm_account={slurm_stub.ACCOUNT}") >= 3, proc.stdout[-3000:]
    for argv in (cpu, gpu):
        assert argv_value(argv, "-A") == slurm_stub.ACCOUNT
    assert argv_value(cpu, "--mem") == "1234"  # the site's default memory survives
    assert argv_value(cpu, "-p") == "cpu" and "--cpus-per-task=2" in cpu
    # the rule's own memory and GPU; its runtime from --set-resources, and nothing else lost
    assert argv_value(gpu, "--mem") == "8000" and "--gpus=1" in gpu
    assert argv_value(gpu, "-t") == "30" and argv_value(gpu, "-p") == "gpu"
