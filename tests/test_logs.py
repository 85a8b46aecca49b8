"""mlmm.logs: timestamped lines and progress bars that stay small in log files."""

from __future__ import annotations

import argparse
import logging
import re
import signal
import subprocess
import sys
import time

import pytest
from helpers.workflow import DEMO_RUN_GROUP

from mlmm.logs import progress, setup_logging


@pytest.fixture(autouse=True)
def _no_handler_left_on_a_closed_file():
    yield
    logging.getLogger("mlmm").handlers.clear()


def test_a_bar_in_a_file_writes_lines_not_redraws_whatever_the_steps(tmp_path, monkeypatch):
    path = tmp_path / "job.log"
    with open(path, "w") as log_file:
        monkeypatch.setattr(sys, "stderr", log_file)
        for _ in progress(range(300_000), desc="steps"):
            pass
    text = path.read_text()
    lines = text.splitlines()
    assert "\r" not in text
    # first and last state (and one line per 30 s, none in this fast loop)
    assert 1 <= len(lines) <= 3, lines
    assert "300000/300000" in lines[-1] and len(text) < 400


def test_every_command_logs_timestamped_lines(tmp_path, monkeypatch):
    path = tmp_path / "job.log"
    with open(path, "w") as log_file:
        monkeypatch.setattr(sys, "stderr", log_file)
        setup_logging("train-nmt")
        setup_logging("train-nmt")  # a second setup replaces the first: one line, not two
        logging.getLogger("mlmm.nmt.train").info("epoch %d: nll %.3f", 1, 2.5)
        logging.getLogger("mlmm.nmt.train").debug("not shown")
    lines = path.read_text().splitlines()
    assert len(lines) == 1
    assert re.fullmatch(
        r"\d{4}-\d\d-\d\d \d\d:\d\d:\d\d mlmm train-nmt INFO: epoch 1: nll 2\.500", lines[0]
    ), lines


def _parser_and_subcommands() -> tuple[argparse.ArgumentParser, dict]:
    from mlmm.cli import build_parser

    parser = build_parser()
    sub = next(a for a in parser._actions if isinstance(a, argparse._SubParsersAction))
    return parser, sub.choices


def _required_argv(parser: argparse.ArgumentParser, root) -> list[str]:
    """The fewest arguments that parse: each required option and positional with a value of
    its type (for paths and strings, a path that does not exist)."""
    argv: list[str] = []
    chosen = {g._group_actions[0] for g in parser._mutually_exclusive_groups if g.required}
    for action in parser._actions:
        if action.option_strings and not (action.required or action in chosen):
            continue
        if action.choices:
            value = str(next(iter(action.choices)))
        elif action.type in (int, float):
            value = "1"
        else:
            value = str(root / f"absent_{action.dest}")
        argv += [*action.option_strings[:1], value]
    return argv


LINE = r"\d{4}-\d\d-\d\d \d\d:\d\d:\d\d mlmm %s INFO: "
END = r"end: %s after \d+\.\d s \(CPU \d+\.\d s, peak memory \d+ MB\)"


@pytest.mark.parametrize("command", sorted(_parser_and_subcommands()[1]))
def test_every_subcommand_logs_a_start_and_an_end_line(command, tmp_path, monkeypatch):
    """The log of a job whose command logs nothing else still says when it ran and
    for how long: `main` writes both lines for every subcommand of the parser (the
    subcommand's own work is stubbed here; its options are checked as in a real run)."""
    import mlmm.cli

    parser, subcommands = _parser_and_subcommands()
    for subparser in subcommands.values():
        subparser.set_defaults(func=lambda args: None)
    monkeypatch.setattr(mlmm.cli, "build_parser", lambda: parser)
    path = tmp_path / "job.log"
    argv = [command, *_required_argv(subcommands[command], tmp_path)]
    with open(path, "w") as log_file:
        monkeypatch.setattr(sys, "stderr", log_file)
        status = mlmm.cli.main(argv)
    lines = path.read_text().splitlines()
    prefix = LINE % re.escape(command)
    assert re.match(prefix + "start: mlmm " + re.escape(command), lines[0]), lines
    outcome = "done" if status == 0 else f"failed \\(exit status {status}\\)"
    assert re.fullmatch(prefix + END % outcome, lines[-1]), lines


def test_a_failing_or_interrupted_command_still_logs_its_end(tmp_path, monkeypatch):
    import mlmm.cli

    parser, subcommands = _parser_and_subcommands()

    def interrupted(args):
        raise KeyboardInterrupt

    subcommands["mt-score"].set_defaults(func=interrupted)
    monkeypatch.setattr(mlmm.cli, "build_parser", lambda: parser)
    path = tmp_path / "job.log"
    argv = ["mt-score", *_required_argv(subcommands["mt-score"], tmp_path)]
    with open(path, "w") as log_file:
        monkeypatch.setattr(sys, "stderr", log_file)
        assert mlmm.cli.main(argv) == 130  # one line, no traceback (test_error_boundary)
    lines = path.read_text().splitlines()
    assert re.fullmatch(LINE % "mt-score" + END % r"failed \(exit status 130\)", lines[-1])
    # the failed attempt keeps its log: Snakemake deletes job.log before a retry
    (kept,) = tmp_path.glob("job.failed-*.log")
    assert kept.read_text() == path.read_text()


def test_every_failed_attempt_of_a_retried_job_keeps_its_log(tmp_path):
    """A rule whose command fails, run with --retries 1: Snakemake deletes the job's log before
    the second attempt; each attempt leaves its own copy, and a command that succeeds none."""
    from helpers.workflow import BIN, tool_env

    (tmp_path / "bad.json").write_text('{"retrieval": {"defaults": {"epochs": 0}}}')
    (tmp_path / "Snakefile").write_text(
        "rule bad:\n"
        "    input: 'bad.json'\n"
        "    output: 'out.yaml'\n"
        "    log: 'logs/bad.log'\n"
        "    shell: 'mlmm configuration {input} --out {output} > {log} 2>&1'\n"
    )
    proc = subprocess.run([str(BIN / "snakemake"), "-c1", "--retries", "1", "-d", str(tmp_path),
                           "-s", str(tmp_path / "Snakefile")], env=tool_env(),
                          capture_output=True, text=True, timeout=300)  # fmt: skip
    assert proc.returncode != 0
    kept = sorted((tmp_path / "logs").glob("bad.failed-*.log"))
    assert len(kept) == 2, proc.stderr[-2000:]
    for log in kept:
        assert "retrieval.defaults.epochs" in log.read_text()
        assert re.search(END % r"failed \(exit status 2\)", log.read_text().splitlines()[-1])
    assert not list(tmp_path.glob("*.failed-*"))  # nothing beside the outputs


def test_a_terminated_command_unwinds_logs_its_end_and_keeps_its_log(tmp_path):
    """SIGTERM (a time limit, preemption): the command unwinds as after Ctrl-C, exits 143 and
    its log, ended with a line that says so, is kept for the next attempt to leave alone."""
    script = (
        "import sys, time\n"
        "import mlmm.cli\n"
        "parser = mlmm.cli.build_parser()\n"
        "def slow(args):\n"
        "    print('started', file=sys.stderr, flush=True)\n"
        "    time.sleep(60)\n"
        "parser._subparsers._group_actions[0].choices['configuration'].set_defaults(func=slow)\n"
        "mlmm.cli.build_parser = lambda: parser\n"
        "sys.exit(mlmm.cli.main(['configuration', 'in.json', '--out', 'out.yaml']))\n"
    )
    log = tmp_path / "job.log"
    with open(log, "w") as handle:
        proc = subprocess.Popen([sys.executable, "-c", script], cwd=tmp_path, stderr=handle)
        deadline = time.monotonic() + 60
        while "started" not in log.read_text() and time.monotonic() < deadline:
            time.sleep(0.1)
        proc.send_signal(signal.SIGTERM)
        assert proc.wait(timeout=60) == 143
    text = log.read_text()
    assert "terminated (SIGTERM" in text
    assert re.search(END % r"failed \(exit status 143\)", text.splitlines()[-1])
    (kept,) = tmp_path.glob("job.failed-*.log")
    assert kept.read_text() == text


@pytest.mark.slow
@pytest.mark.xdist_group(DEMO_RUN_GROUP)
def test_every_job_log_of_the_demo_run_says_when_its_command_ran(small_demo_run):
    """Every job's log of the (small) demo run has the start and end lines: each rule runs one
    mlmm command with stdout and stderr into its log."""
    workdir, proc = small_demo_run
    assert proc.returncode == 0, proc.stdout[-3000:]
    logs = sorted((workdir / "results" / "logs").rglob("*.log"))
    assert logs
    start = re.compile(LINE % r"[\w-]+" + "start: mlmm ", re.MULTILINE)
    end = re.compile(LINE % r"[\w-]+" + END % "done", re.MULTILINE)
    missing = [
        str(path.relative_to(workdir))
        for path in logs
        if not (start.search(text := path.read_text(errors="replace")) and end.search(text))
    ]
    assert not missing, f"{len(missing)} of {len(logs)} job logs: {missing[:10]}"
