"""Configuration records that workflow jobs read from files instead of their command lines.

A stage command run by the workflow takes its resolved configuration section as one file
(`--config FILE`): the rules files write it while the job is planned, under
``<results>/records/``, and rewrite it only when its content changes, so that the file is an
input whose modification time changes exactly when the record does (a rerun), and the job's
shell line stays short. Standard library only: imported while the workflow is parsed.
"""

from __future__ import annotations

import json
from pathlib import Path

from mlmm.io import write_text


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
