"""Two jobs side by side on a small machine: torch threads per job (why the test suite's
workers each keep to their share of the cores, docs/workflow.md "The test suite's time").

Runs `mlmm features` (ResNet-152, ten crops, random weights) as whole processes: one job alone
with 1 and with 2 threads, then two jobs started together, each with 1 thread and each with 2.
Two two-thread jobs on two cores make their OpenMP threads wait on each other. Writes
results/benchmarks/threads_side_by_side.csv (wall and CPU seconds of every process, the
machine's core count). Nothing is asserted.

    .venv/bin/python benchmarks/threads_side_by_side.py [--images 20] [--backbone resnet152]
"""

from __future__ import annotations

import argparse
import os
import platform
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import pandas as pd

from mlmm.io import atomic_path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(Path(__file__).parent))
from features import make_images  # noqa: E402  (benchmarks/features.py: photograph-like JPEGs)


def features_command(work: Path, backbone: str, threads: int, name: str) -> list[str]:
    return [
        str(Path(sys.executable).parent / "mlmm"), "features", "--backbone", backbone,
        "--images", str(work / "images"), "--split", str(work / "split.txt"),
        "--out", str(work / name / "features.npy"), "--device", "cpu", "--weights", "none",
        "--threads", str(threads), "--no-progress",
    ]  # fmt: skip


def run_together(commands: list[list[str]]) -> list[dict]:
    """Start every command at once; wall seconds of each, CPU seconds of all together."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    start = time.perf_counter()
    procs = [subprocess.Popen(c, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
             for c in commands]  # fmt: skip
    walls = []
    for proc in procs:
        _, err = proc.communicate()
        if proc.returncode != 0:
            raise SystemExit(err.decode()[-2000:])
        walls.append(time.perf_counter() - start)
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    return [{"job": i + 1, "wall_s": round(w, 2), "cpu_s_all_jobs": round(cpu, 2)}
            for i, w in enumerate(walls)]  # fmt: skip


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--images", type=int, default=20)
    parser.add_argument("--backbone", default="resnet152")
    parser.add_argument("--out", default=str(ROOT / "results/benchmarks/threads_side_by_side.csv"))
    args = parser.parse_args()
    rows = []
    with tempfile.TemporaryDirectory() as tmp:
        work = Path(tmp)
        names = make_images(work, args.images)
        (work / "split.txt").write_text("\n".join(names) + "\n")
        for jobs, threads in ((1, 1), (1, 2), (2, 1), (2, 2)):
            commands = [features_command(work, args.backbone, threads, f"j{jobs}t{threads}n{i}")
                        for i in range(jobs)]  # fmt: skip
            for row in run_together(commands):
                rows.append({"jobs_together": jobs, "threads_per_job": threads, **row})
                print(rows[-1], flush=True)
    frame = pd.DataFrame(rows).assign(
        backbone=args.backbone, images=args.images, cores=os.cpu_count(),
        machine=platform.node(), date=time.strftime("%Y-%m-%d"),
    )  # fmt: skip
    out = Path(args.out)
    out.parent.mkdir(parents=True, exist_ok=True)
    with atomic_path(out) as tmp_out:
        frame.to_csv(tmp_out, index=False)
    print(f"wrote {out}")


if __name__ == "__main__":
    main()
