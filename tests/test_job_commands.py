"""Every job of the planned demo workflow runs a command line its command accepts: the
options parse (`mlmm`'s own parser), and the files the command declares it writes are
distinct outputs of the job's rule (or directories holding them). A rule that passes an option
its command no longer takes, or names one output twice, fails here and not in a workflow run."""

from __future__ import annotations

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
def jobs(tmp_path_factory) -> list[dict]:
    return [job for job in planned_jobs(tmp_path_factory.mktemp("plan")) if job["shell"]]


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
