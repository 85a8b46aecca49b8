"""Every job of the planned demo workflow runs a command line its command accepts: the
options parse (`mlmm`'s own parser), and the files the command declares it writes are
distinct outputs of the job's rule (or directories holding them). A rule that passes an option
its command no longer takes, or names one output twice, fails here and not in a workflow run."""

from __future__ import annotations

import json
import shlex
from pathlib import Path

import pytest
from helpers.workflow import planned_jobs

from mlmm.cli import build_parser, declared_outputs

CONTROL = {">", ">>", "2>&1", "&&", ";", "|", "||"}


def _commands(shell: str) -> list[list[str]]:
    """The argument lists of the `mlmm` commands of a job's shell line (redirections cut)."""
    commands, current = [], []
    tokens = shlex.split(shell)
    skip = False
    for token in tokens:
        if skip:
            skip = False
        elif token in (">", ">>"):
            skip = True  # the redirection's target
        elif token in CONTROL:
            commands.append(current)
            current = []
        else:
            current.append(token)
    commands.append(current)
    return [c[1:] for c in commands if c and c[0] == "mlmm"]


@pytest.fixture(scope="module")
def plan_dir(tmp_path_factory) -> Path:
    return tmp_path_factory.mktemp("plan")


@pytest.fixture(scope="module")
def jobs(plan_dir) -> list[dict]:
    return [job for job in planned_jobs(plan_dir) if job["shell"]]


def test_every_job_command_parses_and_writes_only_its_rule_outputs(jobs):
    parser = build_parser()
    problems = []
    for job in jobs:
        commands = _commands(job["shell"])
        if not commands:
            problems.append(f"{job['rule']}: no mlmm command in {job['shell'][:80]!r}")
        outputs = {Path(o) for o in job["output"]}
        holders = outputs | {parent for o in outputs for parent in o.parents}
        for argv in commands:
            try:
                args = parser.parse_args(argv)
            except SystemExit:
                problems.append(f"{job['rule']}: `mlmm {' '.join(argv)[:120]}` does not parse")
                continue
            declared = [Path(p) for p in declared_outputs(args)]
            if len(set(declared)) != len(declared):
                problems.append(f"{job['rule']}: an output named twice in {declared}")
            foreign = [str(p) for p in declared if p not in holders]
            if foreign:
                problems.append(f"{job['rule']}: writes {foreign}, not outputs of the rule")
    assert problems == []
    assert len({job["rule"] for job in jobs}) > 30


def test_every_job_of_a_record_command_reads_a_valid_record_among_its_inputs(jobs, plan_dir):
    """A stage command that reads its settings from a record (mlmm.records.COMMANDS) gets it
    from the file its rule wrote while planning: one file, an input of the job (so that a
    changed setting reruns it), passing the command's own schema check; no setting of the
    record is also given on the command line."""
    from mlmm.records import COMMANDS, read_command_record

    parser = build_parser()
    records: dict[str, list[dict]] = {}
    commands: set[str] = set()
    for job in jobs:
        for argv in _commands(job["shell"]):
            if argv[0] not in COMMANDS:
                continue
            commands.add(argv[0])
            path = parser.parse_args(argv).config
            assert str(path) in job["input"], f"{job['rule']}: {path} not an input"
            record = read_command_record(argv[0], plan_dir / path)
            records.setdefault(job["rule"], []).append(record)
            keys = {key.split(".")[-1] for key in COMMANDS[argv[0]][1]}
            restated = [a for a in argv if a.startswith("--") and a[2:].replace("-", "_") in keys]
            assert restated == [], f"{job['rule']}: {restated} restate the record's settings"
    assert commands == set(COMMANDS)  # the demo plans every command that reads a record
    assert [(r["src"], r["tgt"]) for r in records["train_nmt"]] == [("en", "de")]
    assert {r["tgt"] for r in records["pivot_train_nmt"]} == {"en"}
    assert len(records["nbest_lists"]) == 2  # val and test, one record
    # the rules write every key the command reads, resolved (none left to the command's
    # defaults), and nothing else
    for job in jobs:
        for argv in _commands(job["shell"]):
            if argv[0] in COMMANDS:
                written = json.loads((plan_dir / parser.parse_args(argv).config).read_text())
                heads = {key.split(".")[0] for key in COMMANDS[argv[0]][1]}
                assert set(written) == heads, f"{job['rule']}: {sorted(written)}"
