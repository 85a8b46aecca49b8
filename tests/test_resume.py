"""Kill and resume, stage by stage.

Each stage's command runs three times in a subprocess on CPU: uninterrupted (counting its
optimiser steps or module forwards), killed with SIGKILL at a seeded random one of them, and
rerun. The rerun's results must equal the uninterrupted run's exactly: stages that checkpoint
(features: shards; retrieval: checkpoint.pt) resume from the last one, the others start over,
and no stage may trip over what the killed run left behind. Snakemake interrupted with SIGINT
mid-job reruns to completion without cleanup (profiles/default: rerun-incomplete).
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
import torch
import yaml
from helpers.compare import assert_same
from helpers.workflow import BIN, copy_workflow, tool_env

# Runs `mlmm ARGV` with a kill switch: MLMM_TEST_KILL=count=<json path> records how many
# optimiser steps and module forwards the command makes; MLMM_TEST_KILL=<step|forward>=<k>
# SIGKILLs the process right after its k-th one.
KILLER = r"""
import atexit, json, os, signal, sys
import torch
from torch.optim.optimizer import register_optimizer_step_post_hook
from mlmm.cli import main

mode, value = os.environ["MLMM_TEST_KILL"].split("=", 1)
counts = {"step": 0, "forward": 0}

def bump(kind):
    counts[kind] += 1
    if mode == kind and counts[kind] == int(value):
        os.kill(os.getpid(), signal.SIGKILL)

register_optimizer_step_post_hook(lambda *args: bump("step"))
torch.nn.modules.module.register_module_forward_hook(lambda *args: bump("forward"))
if mode == "count":
    atexit.register(lambda: open(value, "w").write(json.dumps(counts)))
sys.exit(main(sys.argv[1:]))
"""


def mlmm(argv: list, kill: str) -> subprocess.CompletedProcess:
    env = tool_env() | {"MLMM_TEST_KILL": kill, "OMP_NUM_THREADS": "1", "CUDA_VISIBLE_DEVICES": ""}
    return subprocess.run(
        [sys.executable, "-c", KILLER, *map(str, argv)],
        env=env, capture_output=True, text=True, timeout=300,
    )  # fmt: skip


def kill_and_resume(
    tmp_path: Path, argv: Callable[[Path], list], kind: str, seed: int
) -> tuple[Path, Path]:
    """Run argv(out) uninterrupted in tmp/full, killed then rerun in tmp/killed."""
    counts = tmp_path / "counts.json"
    full = mlmm(argv(tmp_path / "full"), f"count={counts}")
    assert full.returncode == 0, full.stderr[-3000:]
    total = json.loads(counts.read_text())[kind]
    assert total > 3, f"too few {kind}s ({total}) to kill in the middle"
    k = int(np.random.default_rng(seed).integers(total // 3, total - 1))
    killed = mlmm(argv(tmp_path / "killed"), f"{kind}={k}")
    assert killed.returncode == -signal.SIGKILL, f"not killed at {kind} {k} of {total}"
    rerun = mlmm(argv(tmp_path / "killed"), "none=0")
    assert rerun.returncode == 0, rerun.stderr[-3000:]
    return tmp_path / "full", tmp_path / "killed"


def load_any(path: Path):
    if path.suffix == ".pt":
        return torch.load(path, map_location="cpu", weights_only=False)
    if path.suffix == ".npz":
        with np.load(path) as archive:
            return {key: archive[key] for key in archive.files}
    if path.suffix == ".npy":
        return np.load(path)
    if path.suffix == ".json":
        return json.loads(path.read_text(encoding="utf-8"))
    if path.suffix == ".csv":  # a history: {column: values}, its clock columns dropped later
        frame = pd.read_csv(path)
        return {column: frame[column].tolist() for column in frame.columns}
    return path.read_bytes()


def assert_same_tree(full: Path, resumed: Path) -> None:
    """Both directories hold the same files (no leftovers of the kill) with equal contents."""
    names = sorted(p.relative_to(full).as_posix() for p in full.rglob("*") if p.is_file())
    other = sorted(p.relative_to(resumed).as_posix() for p in resumed.rglob("*") if p.is_file())
    assert names == other
    for name in names:
        if name.endswith((".mlmm-written", ".made-from.json")):  # an output's sha256: clocks too
            continue
        assert_same(load_any(full / name), load_any(resumed / name), name)


# ------------------------------------------------------------------------------ stages


@pytest.mark.slow
def test_features_resume_after_a_kill(tmp_path):
    from helpers.features import make_images

    make_images(tmp_path, 7)

    def argv(out: Path) -> list:
        return ["features", "--images", tmp_path / "images", "--split", tmp_path / "list.txt",
                "--out", out / "val.npy", "--backbone", "efficientnet_lite0", "--device", "cpu",
                "--batch-size", 2, "--shard-size", 2, "--workers", 0, "--no-progress"]  # fmt: skip

    full, resumed = kill_and_resume(tmp_path, argv, "forward", seed=3)
    assert json.loads((resumed / "val.json").read_text())["resumed_rows"] > 0
    assert_same_tree(full, resumed)


@pytest.mark.slow
def test_retrieval_training_resume_after_a_kill(tmp_path):
    from helpers.retrieval import make_world, section, trainer_argv

    from mlmm.demo import word_vectors as demo_vectors

    world = make_world(tmp_path / "world")
    demo_vectors.derive_demo(world.data_root, world.muse, ["en", "de"], 8, 0.8, world.vectors)
    variant = {
        "train_data": [{"portion": "translation", "languages": ["en", "de"]}],
        "c2c": True,
        "epochs": 6,
        "checkpoint_every": 5,
    }
    config = tmp_path / "config.yaml"
    config.write_text(yaml.safe_dump({"retrieval": section(four=variant)}))

    def argv(out: Path) -> list:
        return trainer_argv(config, out, world)[3:]  # without `python -m mlmm`

    full, resumed = kill_and_resume(tmp_path, argv, "step", seed=1)
    metrics = json.loads((resumed / "metrics.json").read_text())
    assert metrics["timings"]["resumed"]
    assert_same_tree(full, resumed)


@pytest.mark.slow
def test_nmt_training_restarts_after_a_kill(tmp_path):
    from helpers.nmt import nmt_record, toy_parallel_corpus

    data = tmp_path / "tok"
    data.mkdir()
    for split, n, seed in (("train", 60, 0), ("val", 8, 1)):
        src, tgt = toy_parallel_corpus(n, seed)
        (data / f"{split}.lc.norm.tok.en").write_text("".join(" ".join(s) + "\n" for s in src))
        (data / f"{split}.lc.norm.tok.de").write_text("".join(" ".join(t) + "\n" for t in tgt))

    record = nmt_record(tmp_path / "record.json", {"embedding": 8, "hidden": 8, "attention": 8},
                        batch_size=8, max_epochs=3, patience=3)

    def argv(out: Path) -> list:
        return ["train-nmt", "--config", record, "--data", data, "--device", "cpu",
                "--out", out / "model.pt",
                "--history", out / "history.csv", "--metrics", out / "metrics.json"]  # fmt: skip

    full, resumed = kill_and_resume(tmp_path, argv, "step", seed=2)
    assert_same_tree(full, resumed)


@pytest.mark.slow
def test_bridge_corrnet_restarts_after_a_kill(tmp_path):
    from mlmm.cli import main
    from mlmm.records import write_record

    corpus = tmp_path / "corpus"
    common = ["--languages", "fr", "de"]
    assert main(["ted-fetch", "--source", "demo", "--out-dir", str(corpus), "--train-docs", "30",
                 "--test-docs", "10", *common]) == 0  # fmt: skip
    bow = tmp_path / "bow"
    record = write_record(tmp_path / "bow.json", {"languages": ["fr", "de"], "min_count": 2})
    assert main(["ted-bow", "--index", str(corpus / "index.json"), "--out-dir", str(bow),
                 "--config", str(record)]) == 0  # fmt: skip
    train = write_record(tmp_path / "train.json", {"hidden": 8, "epochs": 4, "batch_size": 10})

    def argv(out: Path) -> list:
        return ["ted-train", "--config", train, "--bow", bow, "--out-dir", out, "--lambda", 1,
                "--device", "cpu"]  # fmt: skip

    full, resumed = kill_and_resume(tmp_path, argv, "step", seed=4)
    assert_same_tree(full, resumed)


@pytest.mark.slow
def test_pivot_training_restarts_after_a_kill(tmp_path):
    from helpers.pivot import make_world

    from mlmm.records import write_record

    coco, feats, ted = make_world(tmp_path / "world")
    record = write_record(tmp_path / "train.json", {"hidden": 16, "epochs": 3, "min_count": 1})

    def argv(out: Path) -> list:
        return ["pivot-train", "--coco-root", coco, "--features", feats, "--config", record,
                "--model", "bridge", "--language", "de",
                "--ted-root", ted, "--lambda", 1, "--device", "cpu", "--out", out]  # fmt: skip

    full, resumed = kill_and_resume(tmp_path, argv, "step", seed=5)
    assert_same_tree(full, resumed)


# ------------------------------------------------------------------------------ snakemake

SMALL_TED = {
    "ted": {
        "languages": ["fr"],
        "demo": {"train_docs": 30, "test_docs": 10},
        "lambdas": [1],
        "hidden": 8,
        "epochs": 1500,  # a few seconds: long enough to be interrupted mid-job
        "min_count": 2,
    }
}


def heed_ctrl_c() -> None:
    """SIGINT back to its default in the child: a suite started in the background by a
    non-interactive shell (`make test &`) inherits SIGINT ignored, and Snakemake would then run
    on as if no one had pressed Ctrl-C."""
    signal.signal(signal.SIGINT, signal.SIG_DFL)


@pytest.mark.slow
def test_snakemake_interrupted_mid_job_reruns_without_cleanup(tmp_path):
    workdir = copy_workflow(tmp_path / "workflow")
    (workdir / "small.yaml").write_text(yaml.safe_dump(SMALL_TED))
    target = "results/ted/lambda.json"
    cmd = [str(BIN / "snakemake"), target, "--cores", "1", "--configfile", "small.yaml"]
    log = workdir / "results/logs/ted/train_lambda1.log"
    proc = subprocess.Popen(cmd, cwd=workdir, env=tool_env(), stdout=subprocess.DEVNULL,
                            stderr=subprocess.DEVNULL, start_new_session=True,
                            preexec_fn=heed_ctrl_c)  # fmt: skip
    deadline = time.time() + 240
    while proc.poll() is None and time.time() < deadline:
        if log.exists() and "epoch 3" in log.read_text(errors="replace"):
            break  # ted_train is mid-way through its epochs
        time.sleep(0.1)
    assert proc.poll() is None, "snakemake finished before it could be interrupted"
    os.kill(proc.pid, signal.SIGINT)
    assert proc.wait(timeout=120) != 0
    assert not (workdir / target).exists()
    rerun = subprocess.run(cmd, cwd=workdir, env=tool_env(), capture_output=True, text=True,
                           timeout=600)  # fmt: skip
    assert rerun.returncode == 0, rerun.stdout[-3000:] + rerun.stderr[-3000:]
    assert json.loads((workdir / target).read_text())["chosen"]
