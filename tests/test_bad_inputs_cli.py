"""Bad values given to a subcommand by hand (issue 22): the workflow's schema checks them.

Each numeric option is declared against a key of ``workflow/schemas/config.schema.yaml``
(``mlmm.schema.checked_option``), and a config record a command reads itself is validated with
the schema's sub-schema, so a value Snakemake would refuse is refused on the command line too:
one line naming the option (or file and key), what was expected and what was found, exit 2,
nothing written. The rows are in docs/bad_inputs.md.
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path

import pytest
from test_bad_inputs import one_line_error

from mlmm.cli import build_parser
from mlmm.schema import CHECKS, subschema, value_error

OPTION_CASES = {
    "mira --iters 0": (
        ["mira", "--nbest", "n", "--ref", "r", "--out", "OUT/w", "--iters", "0"],
        "--iters: expected a number >= 1, found 0",
    ),
    "mira --c nan": (
        ["mira", "--nbest", "n", "--ref", "r", "--out", "OUT/w", "--c", "nan"],
        "--c: expected a finite number, found nan",
    ),
    "mira --c -1": (
        ["mira", "--nbest", "n", "--ref", "r", "--out", "OUT/w", "--c", "-1"],
        "--c: expected a number > 0, found -1.0",
    ),
    "nbest --beam 0": (
        ["nbest", "--model", "m.pt", "--source", "s", "--out", "OUT/n", "--beam", "0"],
        "--beam: expected a number >= 1, found 0",
    ),
    "train-nmt --batch-size 0": (
        ["train-nmt", "--data", "d", "--out", "OUT/m.pt", "--history", "OUT/h.csv",
         "--metrics", "OUT/m.json", "--batch-size", "0"],
        "--batch-size: expected a number >= 1, found 0",
    ),
    "train-nmt --dropout 1": (
        ["train-nmt", "--data", "d", "--out", "OUT/m.pt", "--history", "OUT/h.csv",
         "--metrics", "OUT/m.json", "--dropout", "1"],
        "--dropout: expected a number < 1, found 1.0",
    ),
    "ted-train --lambda -1": (
        ["ted-train", "--bow", "b", "--out-dir", "OUT/run", "--lambda", "-1"],
        "--lambda: expected a number >= 0, found -1.0",
    ),
    "ted-train --epochs 0": (
        ["ted-train", "--bow", "b", "--out-dir", "OUT/run", "--lambda", "1", "--epochs", "0"],
        "--epochs: expected a number >= 1, found 0",
    ),
    "ted-train --learning-rate inf": (
        ["ted-train", "--bow", "b", "--out-dir", "OUT/run", "--lambda", "1",
         "--learning-rate", "inf"],
        "--learning-rate: expected a finite number, found inf",
    ),
    "ted-tune --validation-fraction 1": (
        ["ted-tune", "--bow", "b", "--runs", "r", "--out", "OUT/t.json",
         "--validation-fraction", "1"],
        "--validation-fraction: expected a number < 1, found 1.0",
    ),
    "ted-tune --jobs 0": (
        ["ted-tune", "--bow", "b", "--runs", "r", "--out", "OUT/t.json", "--jobs", "0"],
        "--jobs: expected a number >= 1, found 0",
    ),
}  # fmt: skip


@pytest.mark.parametrize("case", list(OPTION_CASES), ids=list(OPTION_CASES))
def test_an_impossible_option_value_is_one_line_naming_the_option(case, tmp_path, capsys,
                                                                  monkeypatch):
    argv, says = OPTION_CASES[case]
    monkeypatch.chdir(tmp_path)
    (tmp_path / "OUT").mkdir()
    line = one_line_error(argv, capsys)
    assert says in line, line
    assert not any((tmp_path / "OUT").iterdir())


def _retrieval_argv(tmp_path: Path, source: list[str]) -> list[str]:
    return ["train-retrieval", *source, "--variant", "a", "--seed", "1",
            "--out", str(tmp_path / "OUT" / "a"), "--data-root", str(tmp_path / "d"),
            "--features-root", str(tmp_path / "f"), "--threads", "1"]  # fmt: skip


@pytest.mark.parametrize(
    "variant, says",
    [
        ("epochs: 0", "key 'retrieval.variants.a.epochs': expected a number >= 1, found 0"),
        ("batch_size: 1", "key 'retrieval.variants.a.batch_size': expected a number >= 2, found 1"),
        ("margin: -1", "key 'retrieval.variants.a.margin': expected a number >= 0, found -1"),
        ("margin: .nan", "key 'retrieval.variants.a.margin': expected a finite number, found nan"),
    ],
    ids=["epochs 0", "batch 1", "margin -1", "margin nan"],
)
def test_train_retrieval_config_is_validated_by_the_schema(variant, says, tmp_path, capsys):
    config = tmp_path / "mine.yaml"
    config.write_text(f"retrieval:\n  variants:\n    a:\n      {variant}\n", encoding="utf-8")
    line = one_line_error(_retrieval_argv(tmp_path, ["--config", str(config)]), capsys)
    assert f"mine.yaml, {says}" in line, line
    assert not (tmp_path / "OUT").exists()


def test_train_retrieval_record_json_is_validated_by_the_schema(tmp_path, capsys):
    record = json.dumps({"variants": {"a": {"epochs": 0}}})
    line = one_line_error(_retrieval_argv(tmp_path, ["--record-json", record]), capsys)
    assert "--record-json, key 'retrieval.variants.a.epochs': expected a number >= 1" in line
    assert not (tmp_path / "OUT").exists()


def test_every_checked_default_satisfies_the_schema():
    """A default the schema refuses would make every plain run fail; and each pointer exists."""
    parser = build_parser()
    subparsers = next(a for a in parser._actions if isinstance(a, argparse._SubParsersAction))
    checked = 0
    for name, sub in subparsers.choices.items():
        for dest, (option, pointer) in (sub.get_default(CHECKS) or {}).items():
            default = sub.get_default(dest)
            checked += 1
            if default is not None:
                assert value_error(default, subschema(pointer)) is None, (name, option, default)
    assert checked >= 40


def test_a_checked_option_takes_the_range_of_its_config_key():
    """The CLI range is the schema's, not a copy: nmt.mira.c is exclusiveMinimum 0."""
    node = subschema("nmt.mira.c")
    assert node["exclusiveMinimum"] == 0
    assert value_error(0.0, node) == ("a number > 0", "0.0")
    assert value_error(0.5, node) is None
    assert value_error(float("nan"), node) == ("a finite number", "nan")
    assert subschema("ted.lambdas[]") == {"type": "number", "minimum": 0}
