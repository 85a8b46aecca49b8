"""The configuration the report links (rule configuration, `mlmm configuration`): the resolved
settings of every config file given, defaults filled in, as YAML that reads back as the
configuration the jobs were planned with; a damaged record is one line and writes nothing."""

from __future__ import annotations

import copy
from pathlib import Path

import yaml
from helpers.workflow import REPO, planned_jobs

from mlmm.cli import main
from mlmm.config import read_sources, validate_config
from mlmm.records import write_record
from mlmm.schema import SCHEMA_PATH

CONFIGS = [REPO / "config.yaml", REPO / "config/paper.yaml"]


def _resolved(*paths: Path) -> dict:
    """The configuration Snakemake merges from ``paths``, then validated with defaults."""
    config: dict = {}
    for _, data in read_sources(paths):
        _merge(config, copy.deepcopy(data))
    return validate_config(config, SCHEMA_PATH, paths)


def _merge(into: dict, update: dict) -> None:
    for key, value in update.items():
        if isinstance(value, dict) and isinstance(into.get(key), dict):
            _merge(into[key], value)
        else:
            into[key] = value


def test_the_resolved_configuration_reads_back_as_the_one_planned(tmp_path):
    for configs in ([CONFIGS[0]], CONFIGS):
        resolved = _resolved(*configs)
        record = write_record(tmp_path / "configuration.json", resolved)
        out = tmp_path / "configuration.yaml"
        out.unlink(missing_ok=True)
        assert main(["configuration", str(record), "--out", str(out)]) == 0
        text = out.read_text(encoding="utf-8")
        assert text.startswith("# The configuration")
        assert yaml.safe_load(text) == resolved


def test_a_record_with_a_bad_value_is_one_line_naming_its_key(tmp_path, capsys):
    resolved = _resolved(CONFIGS[0])
    resolved["retrieval"]["defaults"]["epochs"] = "many"
    record = write_record(tmp_path / "configuration.json", resolved)
    out = tmp_path / "configuration.yaml"
    assert main(["configuration", str(record), "--out", str(out)]) == 2
    errors = [line for line in capsys.readouterr().err.splitlines() if "INFO" not in line]
    assert len(errors) == 1, errors
    assert "configuration.json" in errors[0] and "retrieval.defaults.epochs" in errors[0]
    assert not out.exists()


def test_the_workflow_writes_the_configuration_it_plans_with(tmp_path):
    """The demo's plan has one configuration job, a final target flagged for the report,
    whose record is the resolved configuration of config.yaml."""
    jobs = [job for job in planned_jobs(tmp_path) if job["rule"] == "configuration"]
    assert len(jobs) == 1 and jobs[0]["output"] == ["results/configuration.yaml"]
    record = tmp_path / jobs[0]["input"][0]
    assert yaml.safe_load(record.read_text(encoding="utf-8")) == _resolved(CONFIGS[0])
