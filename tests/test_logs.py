"""mlmm.logs: timestamped lines and progress bars that stay small in log files (issue 21)."""

from __future__ import annotations

import logging
import re
import sys

import pytest

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
