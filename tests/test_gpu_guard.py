"""A GPU rule's job that sees no GPU stops at its start with one line, unless the config chose
the CPU (`device: cpu`): the Snakefile marks the jobs that must see one (MLMM_REQUIRE_GPU:
any cluster executor, a job on a cluster node, a machine with an NVIDIA device), and `device:
auto` then never falls back to the CPU (mlmm.slurm.auto_device, called where each GPU stage
resolves its device). The guard is in the job, so it holds under any executor, as a module and
whatever resources a profile or --set-resources gave the job."""

from __future__ import annotations

import subprocess

import pytest
from helpers.snakefiles import module_snakefile
from helpers.workflow import tool_env

from mlmm.errors import InputError
from mlmm.slurm import ENV_REQUIRE_GPU, auto_device, gpu_requirement


def test_which_jobs_must_see_a_gpu():
    assert gpu_requirement(local_exec=True, remote_exec=False, nvidia=False) is None
    assert "NVIDIA" in gpu_requirement(local_exec=True, remote_exec=False, nvidia=True)
    assert "cluster executor" in gpu_requirement(local_exec=False, remote_exec=False, nvidia=False)
    assert "cluster node" in gpu_requirement(local_exec=True, remote_exec=True, nvidia=False)


def test_auto_never_falls_back_to_the_cpu_where_a_gpu_is_required(caplog):
    assert auto_device(True, {ENV_REQUIRE_GPU: "why"}) == "cuda"
    with caplog.at_level("INFO", logger="mlmm"):
        assert auto_device(False, {}) == "cpu"
    assert "running on the CPU" in caplog.text  # said in the job's log, not silent
    with pytest.raises(InputError, match=r"visible CUDA GPU for device 'auto' \(why\)"):
        auto_device(False, {ENV_REQUIRE_GPU: "why"})


def test_a_gpu_stage_job_without_a_gpu_stops_with_one_line(tmp_path):
    """The features command of a GPU rule's job, as the Snakefile marks it under a cluster
    executor, on this machine (CUDA sees no device here, or the test says nothing)."""
    torch = pytest.importorskip("torch")
    if torch.cuda.is_available():
        pytest.skip("CUDA sees a device here: the job would run on it")
    from PIL import Image

    images = tmp_path / "images"
    images.mkdir()
    Image.new("RGB", (32, 32)).save(images / "a.jpg")
    (tmp_path / "split.txt").write_text("a.jpg\n")
    argv = ["mlmm", "features", "--backbone", "efficientnet_lite0", "--images", str(images),
            "--split", str(tmp_path / "split.txt"), "--out", str(tmp_path / "out/f.npy"),
            "--device", "auto"]  # fmt: skip
    why = gpu_requirement(local_exec=False, remote_exec=False, nvidia=False)
    env = {**tool_env(), ENV_REQUIRE_GPU: why}
    proc = subprocess.run(argv, env=env, capture_output=True, text=True)
    assert proc.returncode != 0
    errors = [line for line in proc.stderr.splitlines() if ": error: " in line]
    assert len(errors) == 1 and "expected a visible CUDA GPU for device 'auto'" in errors[0]
    assert "Traceback" not in proc.stderr and not (tmp_path / "out/f.npy").exists()
    # device: cpu, the config's explicit choice, runs on the CPU under the same marking
    cpu = subprocess.run([*argv[:-1], "cpu"], env=env, capture_output=True, text=True)
    assert cpu.returncode == 0, cpu.stderr[-2000:]


@pytest.mark.full
@pytest.mark.slow  # the demo world and a features job through the SLURM plugin: about 60 s
def test_as_a_module_under_slurm_a_gpu_job_without_a_gpu_stops_at_its_start(
    tmp_path, monkeypatch
):
    """No onstart runs for a module, and --set-resources took the job's GPU away: the job
    itself stops, with the one line in its log (fake sbatch: the job runs here, no GPU)."""
    import shutil
    import sys
    from pathlib import Path

    import yaml
    from helpers import slurm_stub
    from helpers.workflow import REPO

    torch = pytest.importorskip("torch")
    if torch.cuda.is_available():
        pytest.skip("CUDA sees a device here: the job would run on it")
    monkeypatch.setenv("MLMM_SLURM_STUB", str(tmp_path / "stub/state"))
    slurm_stub.install(tmp_path / "stub/bin")
    user = tmp_path / "deployment"
    (user / "config").mkdir(parents=True)
    shutil.copy(REPO / "config.yaml", user / "config/config.yaml")
    (user / "Snakefile").write_text(module_snakefile(REPO / "workflow/Snakefile"))
    (user / "small.yaml").write_text(yaml.safe_dump({"demo_world": {"images": 30}}))
    target = "results/multi30k/features/efficientnet_lite0/val.npy"
    proc = subprocess.run(
        [str(Path(sys.executable).parent / "snakemake"), target, "--configfile", "small.yaml",
         "--workflow-profile", str(REPO / "profiles/slurm"), "--retries", "0",
         "--set-resources", "extract_features:gpu=0",
         "--slurm-init-seconds-before-status-checks", "1"],
        cwd=user, env=tool_env(tmp_path / "stub/bin"), stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT, text=True, timeout=900,
    )  # fmt: skip
    assert proc.returncode != 0, proc.stdout[-3000:]
    assert not (user / target).exists()
    log = user / "results/logs/features/multi30k_efficientnet_lite0_val.log"
    assert log.is_file(), proc.stdout[-3000:]
    errors = [line for line in log.read_text().splitlines() if ": error: " in line]
    assert len(errors) == 1, log.read_text()[-3000:]
    assert "expected a visible CUDA GPU for device 'auto' (a job on a cluster node" in errors[0]
