"""Configuration records that workflow jobs read from files instead of their command lines.

A stage command run by the workflow takes its resolved configuration section as one file
(`--config FILE`): the rules files write it while the job is planned, under
``<results>/records/``, and rewrite it only when its content changes, so that the file is an
input whose modification time changes exactly when the record does (a rerun), and the job's
shell line stays short. Standard library only: imported while the workflow is parsed.
"""

from __future__ import annotations

import json
import os
from pathlib import Path


def write_record(path: str | Path, record: dict) -> Path:
    """``record`` as JSON at ``path``, written (atomically) only when the file does not hold
    it already; returns the path."""
    path = Path(path)
    text = json.dumps(record, indent=1, sort_keys=True) + "\n"
    try:
        if path.read_text(encoding="utf-8") == text:
            return path
    except OSError:
        pass
    path.parent.mkdir(parents=True, exist_ok=True)
    partial = path.with_name(f".{path.name}.{os.getpid()}")
    partial.write_text(text, encoding="utf-8")
    os.replace(partial, path)
    return path
