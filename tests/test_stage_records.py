"""The settings records of the stage commands the workflow runs (mlmm.records): a record holds
some keys of its config section, takes the schema's defaults for the rest, and a bad value or
an unknown key stops the command with one line naming the record file and the key."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from helpers.one_line import message_lines

from mlmm.cli import main
from mlmm.errors import InputError
from mlmm.records import COMMANDS, read_command_record, record_of
from mlmm.schema import subschema


def _default(section: str, key: str):
    """The schema's default of a key; of a mapping, its properties' defaults filled in."""
    node = subschema(f"{section}.{key}")
    if "properties" not in node:
        return node["default"]
    return {
        name: _default(section, f"{key}.{name}")
        for name, child in node["properties"].items()
        if "default" in child or "properties" in child
    }


def _nested(section: str, keys) -> dict:
    """{key: the schema's default}, dotted keys as nested mappings."""
    defaults: dict = {}
    for key in keys:
        *heads, last = key.split(".")
        target = defaults
        for head in heads:
            target = target.setdefault(head, {})
        target[last] = _default(section, key)
    return defaults


@pytest.mark.parametrize("command", [c for c in COMMANDS if COMMANDS[c][0] != "nmt"])
def test_an_empty_record_reads_as_the_schema_defaults(tmp_path, command):
    section, keys = COMMANDS[command]
    path = tmp_path / "record.json"
    path.write_text("{}")
    record = read_command_record(command, path)
    expected = _nested(section, keys)
    # a nested mapping is filled with every default of it, the keys the command reads among them
    for key in keys:
        *heads, last = key.split(".")
        got, want = record, expected
        for head in heads:
            got, want = got[head], want[head]
        assert got[last] == want[last], key
    assert set(record) == set(expected)


@pytest.mark.parametrize("command", list(COMMANDS))
def test_record_of_takes_only_the_keys_the_command_reads(command):
    """What a rule writes: the command's keys of the resolved section, nothing else."""
    section, keys = COMMANDS[command]
    resolved = _nested(section, keys) | {"threads": 3, "not_read": 1}
    assert record_of(command, resolved) == _nested(section, keys)


@pytest.mark.parametrize("command", list(COMMANDS))
def test_an_unknown_key_names_the_file_and_the_key(tmp_path, command):
    path = tmp_path / "record.json"
    path.write_text(json.dumps({"threads": 2}))  # a throughput setting: never in a record
    with pytest.raises(InputError) as error:
        read_command_record(command, path)
    assert str(path) in str(error.value) and "threads" in str(error.value)


def _argv(command: str, tmp_path: Path, record: Path) -> list[str]:
    """A command line of ``command`` with stand-in inputs: the record is read first."""
    for name in ("bow/meta.json", "index.json", "tuning.json", "m.pt", "coco/x", "f/x"):
        (tmp_path / name).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / name).write_text("stand-in\n")
    t = str(tmp_path)
    return {
        "ted-bow": ["ted-bow", "--index", f"{t}/index.json", "--out-dir", f"{t}/out"],
        "ted-train": ["ted-train", "--bow", f"{t}/bow", "--out-dir", f"{t}/out", "--lambda", "1"],
        "pivot-train": ["pivot-train", "--coco-root", f"{t}/coco", "--features", f"{t}/f",
                        "--model", "direct", "--lambda", "1", "--out", f"{t}/out"],
        "pivot-translate": ["pivot-translate", "--model", f"{t}/m.pt", "--coco-root", f"{t}/coco",
                            "--language", "de", "--out", f"{t}/out"],
    }[command] + ["--config", str(record)]  # fmt: skip


@pytest.mark.parametrize(
    ("command", "content", "says"),
    [
        ("ted-train", {"hidden": 0}, ["key 'hidden'", "expected a number >= 1", "found 0"]),
        ("ted-train", {"hidden": 8, "lambda": 1}, ["key 'lambda'", "unknown key 'lambda'"]),
        ("ted-bow", {"languages": ["de"], "min_count": 0}, ["key 'min_count'", "found 0"]),
        ("ted-bow", {"language": ["de"]}, ["key 'language'", "unknown key 'language'"]),
        ("pivot-train", {"learning_rate": float("inf")},
         ["key 'learning_rate'", "expected a finite number", "found inf"]),
        ("pivot-train", {"device": "cpu"}, ["key 'device'", "unknown key 'device'"]),
        ("pivot-translate", {"mt": {"beam": 0}},
         ["key 'mt.beam'", "expected a number >= 1", "found 0"]),
        ("pivot-translate", {"mt": {"beam": 3, "max_length": 50}},
         ["key 'mt.max_length'", "unknown key 'max_length'"]),
    ],
    ids=["ted-train value", "ted-train unknown", "ted-bow value", "ted-bow unknown",
         "pivot-train value", "pivot-train unknown", "pivot-translate value",
         "pivot-translate unknown"],
)  # fmt: skip
def test_a_bad_record_is_one_line_naming_the_file_and_key(tmp_path, capsys, command, content,
                                                          says):  # fmt: skip
    record = tmp_path / "record.json"
    record.write_text(json.dumps(content))
    code = main(_argv(command, tmp_path, record))
    lines = message_lines(capsys.readouterr().err)
    assert code == 2 and len(lines) == 1, lines
    for fragment in [f"{record}, ", *says]:
        assert fragment in lines[0], f"{fragment!r} not in {lines[0]!r}"
    assert not (tmp_path / "out").exists()
