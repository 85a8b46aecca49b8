"""Configuration records that workflow jobs read from files instead of their command lines.

A stage command run by the workflow takes its resolved configuration section as one file
(`--config FILE`): the rules files write it while the job is planned, under
``<results>/records/``, and rewrite it only when its content changes, so that the file is an
input whose modification time changes exactly when the record does (a rerun), and the job's
shell line stays short. Standard library only: imported while the workflow is parsed.

``COMMANDS`` is the one list of what each such command reads: the config section and its keys
(``mt.beam`` is the key ``beam`` of the section's mapping ``mt``). The rules write a record
with ``record_of``; the command reads it with ``read_command_record`` (checked against the
schema, which fills in the defaults of the keys a hand-written record leaves out). The job's
identity (a lambda, a language, a model: its wildcards) stays on the command line, and so do
throughput settings (device, threads, jobs).
"""

from __future__ import annotations

import json
from pathlib import Path

from mlmm.io import write_text

COMMANDS: dict[str, tuple[str, tuple[str, ...]]] = {
    "train-nmt": ("nmt", ("src", "tgt", "model", "train")),
    "nbest": ("nmt", ("beam",)),
    "pivot-train": (
        "pivot",
        (
            "backbone",
            "hidden",
            "epochs",
            "batch_size",
            "learning_rate",
            "input",
            "reconstruction",
            "min_count",
            "validation_fraction",
            "validation_max",
            "seed",
            "standardise_images",
        ),
    ),
    "pivot-mt-data": (
        "pivot",
        ("validation_fraction", "validation_max", "seed", "mt.max_length"),
    ),
    "pivot-translate": ("pivot", ("mt.beam",)),
    "pivot-mt": ("pivot", ("backbone",)),
    "pivot-examples": ("pivot", ("examples",)),
    "ted-bow": ("ted", ("languages", "corpus_codes", "topics", "min_count")),
    "ted-train": (
        "ted",
        ("hidden", "epochs", "batch_size", "learning_rate", "input", "reconstruction", "seed"),
    ),
    "ted-tune": ("ted", ("validation_fraction", "perceptron_epochs", "seed")),
    "ted-classify": ("ted", ("perceptron_epochs",)),
    "ted-neighbours": ("ted", ("table4_words", "table4_k")),
}


def record_of(command: str, section: dict) -> dict:
    """What ``command`` reads of the resolved config ``section``: its keys, nested ones
    (``mt.beam``) as nested mappings."""
    record: dict = {}
    for key in COMMANDS[command][1]:
        *heads, last = key.split(".")
        source, target = section, record
        for head in heads:
            source, target = source[head], target.setdefault(head, {})
        target[last] = source[last]
    return record


def read_command_record(command: str, path: str | Path) -> dict:
    """The record file ``path`` of ``command``, checked (``mlmm.schema.read_record``): a bad
    value or an unknown key is one InputError naming the file and the key."""
    from mlmm.schema import read_record

    section, keys = COMMANDS[command]
    return read_record(path, section, keys)


def write_record(path: str | Path, record: dict) -> Path:
    """``record`` as JSON at ``path``, written through the write layer (atomically) only when
    the file does not hold it already; returns the path."""
    path = Path(path)
    text = json.dumps(record, indent=1, sort_keys=True) + "\n"
    try:
        if path.read_text(encoding="utf-8") == text:
            return path
    except OSError:
        pass
    write_text(path, text)
    return path


def add_record_option(parser, command: str) -> None:
    """The required ``--config RECORD`` option of ``command`` (an argparse parser), its help
    naming the keys the record holds."""
    section, keys = COMMANDS[command]
    parser.add_argument(
        "--config",
        required=True,
        type=Path,
        metavar="RECORD",
        help=f"JSON record of the run's settings: {', '.join(keys)} of the config's {section} "
        "section (a dotted key is a key of a nested mapping); a key left out takes the "
        "schema's default",
    )
