"""A one-machine stand-in for the SLURM commands that snakemake-executor-plugin-slurm calls.

tests/test_workflow.py writes one wrapper per command (sbatch, sacct, sinfo, sacctmgr, srun,
scontrol, squeue) into a directory on PATH; each runs `python slurm_stub.py <command> ARGS`.
State lives in $MLMM_SLURM_STUB: jobs/<id>.json records an sbatch call (argv, job name, and
when it was submitted and when its job ended, seconds since the epoch) and jobs/<id>.rc its
exit status; srun.jsonl records the srun calls made inside the jobs.

sbatch starts the job in the background and prints the job id at once, as `--parsable` asks
(a job that blocked sbatch would hold up every later submission); sacct answers RUNNING until
the job has ended, then COMPLETED or FAILED from the recorded exit status, which is what the
plugin polls.
"""

from __future__ import annotations

import fcntl
import json
import os
import shlex
import subprocess
import sys
import time
from pathlib import Path

ACCOUNT = "stubaccount"
# name (the default marked "*") -> GRES, as `sinfo --format=%G` prints it; override with
# MLMM_SLURM_STUB_PARTITIONS="name=gres,..." (e.g. "cpu*=(null),gpu=gpu:a100:4").
PARTITIONS = {"cpu*": "(null)", "gpu": "gpu:a100:4(S:0-1)"}


def state() -> Path:
    path = Path(os.environ["MLMM_SLURM_STUB"])
    (path / "jobs").mkdir(parents=True, exist_ok=True)
    return path


def next_job_id() -> str:
    """Job ids from a counter file, locked: two submission threads call sbatch at once."""
    with open(state() / "counter", "a+") as handle:
        fcntl.flock(handle, fcntl.LOCK_EX)
        handle.seek(0)
        last = int(handle.read().strip() or 1000)
        handle.seek(0)
        handle.truncate()
        handle.write(str(last + 1))
    return str(last + 1)


def option(argv: list[str], *names: str) -> str | None:
    """Value of `--name value`, `--name=value` or `-n value` in argv."""
    for i, arg in enumerate(argv):
        for name in names:
            if arg == name and i + 1 < len(argv):
                return argv[i + 1]
            if arg.startswith(name + "="):
                return arg[len(name) + 1 :]
    return None


def sbatch(argv: list[str]) -> int:
    """Records the job, starts it in the background and prints its id at once, as sbatch
    does: the plugin learns that it ended from sacct."""
    job_id = next_job_id()
    script = option(argv, "--wrap")
    if script is None:  # the plugin's pass-command-as-script mode: script on stdin
        script = sys.stdin.read()
    record = {"id": job_id, "argv": argv, "name": option(argv, "--job-name", "-J")}
    record.update(submitted=time.time(), script=script, cwd=os.getcwd())
    write_record(record)
    env = {k: v for k, v in os.environ.items() if not k.startswith("SLURM_JOB")}
    env.update(SLURM_JOB_ID=job_id, SLURM_JOBID=job_id)
    subprocess.Popen(
        [sys.executable, __file__, "run_job", job_id],
        env=env,
        stdin=subprocess.DEVNULL,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        start_new_session=True,
    )
    print(job_id)
    return 0


def write_record(record: dict) -> None:
    """jobs/<id>.json, replaced whole: sacct may be reading it."""
    jobs = state() / "jobs"
    partial = jobs / f"{record['id']}.json.partial"
    partial.write_text(json.dumps(record))
    partial.replace(jobs / f"{record['id']}.json")


def run_job(argv: list[str]) -> int:
    """The job of an sbatch call (in its own process): its script, then its end and exit
    status recorded."""
    (job_id,) = argv
    jobs = state() / "jobs"
    record = json.loads((jobs / f"{job_id}.json").read_text())
    options = record["argv"]
    log = Path((option(options, "--output", "-o") or "slurm-%j.out").replace("%j", job_id))
    workdir = Path(option(options, "-D", "--chdir") or record["cwd"])
    log = workdir / log
    log.parent.mkdir(parents=True, exist_ok=True)
    with open(log, "w") as out:
        proc = subprocess.run(
            ["/bin/sh", "-c", record["script"]], cwd=workdir, stdout=out, stderr=subprocess.STDOUT
        )
    record["ended"] = time.time()
    write_record(record)
    (jobs / f"{job_id}.rc").write_text(str(proc.returncode))
    return 0


def sacct(argv: list[str]) -> int:
    name = option(argv, "--name")
    if name is not None:  # status query: "-X --parsable2 ... --format=JobIdRaw,State"
        for record_file in sorted((state() / "jobs").glob("*.json")):
            record = json.loads(record_file.read_text())
            if record["name"] != name:
                continue
            rc_file = record_file.with_suffix(".rc")
            if not rc_file.exists():
                status = "RUNNING"
            else:
                status = "COMPLETED" if rc_file.read_text().strip() == "0" else "FAILED"
            print(f"{record['id']}|{status}")
        return 0
    if "-nu" in argv:  # the plugin guessing an account from the user's recent jobs
        print(ACCOUNT)
    return 0  # failure reasons ("--format=Reason") stay empty


def srun(argv: list[str]) -> int:
    """Records the step's options, then runs the command that follows them."""
    i = 0
    while i < len(argv) and argv[i].startswith("-"):
        i += 1
    with open(state() / "srun.jsonl", "a") as handle:
        handle.write(json.dumps({"job": os.environ.get("SLURM_JOB_ID"), "argv": argv}) + "\n")
    command = argv[i:]
    if command == ["sh", "-s"]:
        return subprocess.run(["/bin/sh", "-s"]).returncode
    return subprocess.run(command).returncode


def sinfo(argv: list[str]) -> int:
    """`-o %P` (the plugin's default-partition query) or `--format=%P %G` with `--noheader`."""
    spec = os.environ.get("MLMM_SLURM_STUB_PARTITIONS")
    partitions = dict(item.split("=", 1) for item in spec.split(",")) if spec else PARTITIONS
    fields = (option(argv, "--format", "-o") or "%P").split()
    if "--noheader" not in argv and "-h" not in argv:
        print(" ".join({"%P": "PARTITION", "%G": "GRES"}[f] for f in fields))
    for name, gres in partitions.items():
        print(" ".join({"%P": name, "%G": gres}[f] for f in fields))
    return 0


def sacctmgr(argv: list[str]) -> int:
    print(ACCOUNT)
    return 0


def scontrol(argv: list[str]) -> int:
    if argv[:2] == ["show", "config"]:
        print("MaxArraySize            = 1001")
        print("MinJobAge               = 300 sec")
    return 0


def squeue(argv: list[str]) -> int:
    return 0


COMMANDS = {f.__name__: f for f in (sbatch, sacct, srun, sinfo, sacctmgr, scontrol, squeue)}
JOB_RUNNER = {"run_job": run_job}


def install(directory: Path) -> None:
    """Writes the command wrappers into directory (to be put first on PATH)."""
    directory.mkdir(parents=True, exist_ok=True)
    for command in COMMANDS:
        wrapper = directory / command
        wrapper.write_text(
            "#!/bin/sh\n"
            f'exec {shlex.quote(sys.executable)} {shlex.quote(__file__)} {command} "$@"\n'
        )
        wrapper.chmod(0o755)


if __name__ == "__main__":
    sys.exit({**COMMANDS, **JOB_RUNNER}[sys.argv[1]](sys.argv[2:]))
