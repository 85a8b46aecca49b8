"""A quiet console: the demo configuration's dry run prints each job's shell command, and no
command carries a configuration record (those are files the job reads, under
results/records/); a command is at most about 1 KB unless it lists many input files."""

from __future__ import annotations

import re
import subprocess

from helpers.workflow import BIN, REPO, tool_env

# Rules whose commands list every run they collect (one path each): long by their inputs only
COLLECTORS = {"claims", "retrieval_tables_kadar2018", "retrieval_figures_kadar2018",
              "nbest_features"}  # fmt: skip


def demo_dry_run(workdir, *options: str) -> str:
    """What `snakemake -n` of the demo configuration prints (stdout and stderr)."""
    proc = subprocess.run(
        [str(BIN / "snakemake"), "-s", str(REPO / "Snakefile"), "-d", str(workdir), "-n",
         *options],
        env=tool_env(), stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, timeout=600,
    )  # fmt: skip
    assert proc.returncode == 0, proc.stdout[-3000:]
    return proc.stdout


def test_no_shell_command_carries_a_record(tmp_path):
    printed = demo_dry_run(tmp_path, "--forceall", "-p")
    rule, commands = None, []
    for line in printed.splitlines():
        match = re.match(r"^(?:local)?rule (\w+):$", line)
        if match:
            rule = match.group(1)
        elif line.startswith("Shell command: "):
            commands.append((rule, line.removeprefix("Shell command: ")))
    assert len(commands) > 100
    for rule, command in commands:
        assert '{"' not in command, (rule, command[:300])
        if rule not in COLLECTORS:
            assert len(command) <= 1100, (rule, len(command), command[:300])
    records = sorted(p.name for p in (tmp_path / "results/records").rglob("*.json"))
    assert "retrieval_tables.json" in records and len(records) > 10


def test_a_record_reads_back_the_numbers_it_was_written_with(tmp_path):
    """A record is JSON read by the commands' config reader: 6e-05 stays a number (YAML 1.1
    would read it as a string and the schema would refuse the paper's AME learning rate)."""
    from mlmm.config import read_sources
    from mlmm.records import write_record

    record = {"retrieval": {"variants": {"ame": {"optimizer": {"lr": 6e-05}, "eps": 1e-08}}}}
    path = write_record(tmp_path / "ame.json", record)
    assert read_sources([path]) == [(str(path), record)]


def test_the_documented_dry_run_of_the_demo_fits_a_screenful(tmp_path):
    """`snakemake -n --quiet rules` (README) prints the per-rule job counts, not every job."""
    printed = demo_dry_run(tmp_path, "--quiet", "rules")
    assert "train_retrieval" in printed and "total" in printed
    assert len(printed.encode()) < 50_000, len(printed.encode())
    assert "--quiet rules" in (REPO / "README.md").read_text(encoding="utf-8")
