"""Checks the Snakefile runs before it submits anything through a cluster executor.

Every GPU rule states its need in its own `resources:` (gpu=1, workflow/rules/common.smk), but
a profile's set-resources or a --set-resources can still replace it: a site-wide profile with
`gpu: 0`, or profiles/default applied beside it. Under any cluster executor, a GPU rule's job
that requests no GPU stops the run, naming the rule.

snakemake-executor-plugin-slurm (2.x) sends a job to its `slurm_partition`, else to the
partition `sinfo` marks with `*`, and never asks whether that partition exists or has GPUs: a
`gpu: 1` job on a CPU-only default partition is refused by sbatch at best, and only when that
job's turn comes, hours into a run. So the Snakefile's `onstart` (after the DAG, before the
first sbatch) asks `sinfo` which partitions have a GPU GRES and refuses, in one message naming
each rule, its partition and the line to change: GPU jobs bound for a partition without GPUs
or one sinfo does not list (a typo, or the profile's `gpu` on a cluster that names it
otherwise), and GPU jobs whose stage is configured `device: cpu` (e.g. by a `--config`).

Standard library only (imported by the Snakefile).
"""

from __future__ import annotations

import logging
import os
import subprocess
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path

# Set by the Snakefile for every job it runs or submits where a GPU rule's job must see a GPU
# (any cluster executor, a job on a cluster node, or this machine has an NVIDIA device); its
# value says why. mlmm.features.extraction.resolve_device then refuses `device: auto` without a
# visible CUDA device instead of running on the CPU; `device: cpu` still runs on the CPU.
ENV_REQUIRE_GPU = "MLMM_REQUIRE_GPU"


def gpu_requirement(local_exec: bool, remote_exec: bool, nvidia: bool) -> str | None:
    """Why a GPU rule's job must see a GPU (the value of MLMM_REQUIRE_GPU), or None where the
    local executor runs the jobs on a machine without an NVIDIA device (they run on its CPU:
    the GPU rules take no `gpu` there, workflow/rules/common.smk)."""
    if remote_exec:
        return "a job on a cluster node, where its GPU rule requested a GPU"
    if not local_exec:
        return "a cluster executor submits the GPU rules with a GPU"
    if nvidia:
        return "this machine has an NVIDIA device"
    return None


def auto_device(cuda_available: bool, environ: Mapping[str, str] = os.environ) -> str:
    """What `device: auto` runs on: ``cuda`` when CUDA sees a device; without one ``cpu``,
    said in the command's log, unless the workflow marked this job as one that must see a GPU
    (MLMM_REQUIRE_GPU): then one InputError, before any work (docs/gpu.md)."""
    if cuda_available:
        return "cuda"
    why = environ.get(ENV_REQUIRE_GPU)
    if why:
        from mlmm.errors import InputError

        raise InputError(
            "device",
            f"a visible CUDA GPU for device 'auto' ({why})",
            "none (CUDA sees no device); to run this stage on the CPU, configure `device: cpu`",
        )
    logging.getLogger(__name__).info("device auto: no CUDA device visible, running on the CPU")
    return "cpu"


# sinfo: partition name (the default one marked with "*") and its generic resources (GRES).
SINFO_COMMAND = ["sinfo", "--noheader", "--format=%P %G"]


@dataclass(frozen=True)
class GpuJob:
    rule: str
    partition: str | None  # the job's slurm_partition; None: the cluster's default
    device: str  # the stage's configured device (auto, cpu, cuda)
    gpus: int = 1  # the GPUs its job requests (requested_gpus)


def nvidia_present() -> bool:
    """Whether this machine has an NVIDIA card (its first device node), without importing
    torch: the Snakefile asks while it is parsed."""
    return Path("/dev/nvidia0").exists()


def requested_gpus(resources) -> int:
    """GPUs a job's resources request: `gpu` (the SLURM plugin's --gpus), else a GPU `gres`."""
    gpus = int(resources.get("gpu", 0) or 0)
    gres = str(resources.get("gres") or "")
    if not gpus and gres.startswith("gpu"):
        gpus = int(gres.rsplit(":", 1)[-1]) if gres.rsplit(":", 1)[-1].isdigit() else 1
    return gpus


def parse_sinfo(text: str) -> tuple[dict[str, bool], str | None]:
    """Partition -> has GPU GRES, and the default partition, from `sinfo --format='%P %G'`.

    sinfo prints one line per (partition, node configuration): a partition has GPUs when any of
    its lines names a `gpu` GRES (e.g. `gpu:a100:4(S:0-1)`; `(null)` is none).
    """
    has_gpu: dict[str, bool] = {}
    default = None
    for line in text.splitlines():
        fields = line.split()
        if not fields or fields[0] == "PARTITION":
            continue
        name = fields[0]
        if name.endswith("*"):
            name = name[:-1]
            default = name
        gres = " ".join(fields[1:])
        has_gpu[name] = has_gpu.get(name, False) or "gpu" in gres
    return has_gpu, default


def gpu_job_problems(
    jobs: Iterable[GpuJob], has_gpu: dict[str, bool], default: str | None
) -> list[str]:
    """One line per rule that asks for a GPU it cannot get or will not use."""
    problems = []
    seen = set()
    for job in jobs:
        partition = job.partition or default
        if job.gpus < 1:
            if (job.rule, "none") not in seen:
                seen.add((job.rule, "none"))
                problems.append(
                    f"rule {job.rule} needs a GPU but its job requests none (gpu=0): a"
                    " profile's set-resources or a --set-resources replaced the rule's own"
                    f" `gpu=1`; drop that `gpu` for {job.rule} (with a site-wide --profile, add"
                    " --workflow-profile profiles/slurm)"
                )
            continue
        if job.device == "cpu" and (job.rule, "cpu") not in seen:
            seen.add((job.rule, "cpu"))
            problems.append(
                f"rule {job.rule} requests a GPU but its stage is configured `device: cpu`"
                " (a --config or --configfile?): on a cluster it runs on a GPU node; set"
                " device auto or cuda"
            )
        if partition is None or not has_gpu or has_gpu.get(partition):
            continue  # no sinfo answer, or a partition with GPUs
        if (job.rule, partition) in seen:
            continue
        seen.add((job.rule, partition))
        where = (
            f"partition '{partition}'"
            if job.partition
            else f"the cluster's default partition '{partition}' (no slurm_partition set)"
        )
        listed = partition in has_gpu
        why = "which has no GPU GRES in sinfo" if listed else "which sinfo does not list"
        gpu_partitions = sorted(name for name, gpu in has_gpu.items() if gpu)
        problems.append(
            f"rule {job.rule} requests a GPU but would go to {where}, {why}; set"
            " `slurm_partition: <name>` for it in profiles/slurm/config.yaml (set-resources)"
            f" — partitions with GPUs: {', '.join(gpu_partitions) or 'none'}"
        )
    return problems


def check_gpu_jobs(jobs: list[GpuJob], sinfo: bool = True) -> list[str]:
    """gpu_job_problems, the partitions checked against this cluster's sinfo under SLURM
    (``sinfo``); no GPU job, no sinfo call."""
    if not jobs:
        return []
    if not sinfo:
        return gpu_job_problems(jobs, {}, None)
    try:
        out = subprocess.run(SINFO_COMMAND, capture_output=True, text=True, check=True).stdout
    except (OSError, subprocess.CalledProcessError):
        out = ""  # sinfo missing or failing: the partitions stay unchecked
    has_gpu, default = parse_sinfo(out)
    return gpu_job_problems(jobs, has_gpu, default)
