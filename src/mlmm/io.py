"""Atomic writes and strict text reading shared by every stage.

Outputs are written to a temporary name beside the target and renamed into place only when
complete, so an interrupted or failed run never leaves a partial file behind.
"""

from __future__ import annotations

import contextlib
import gzip
import hashlib
import json
import os
import tempfile
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import numpy as np

from mlmm.errors import InputError


@contextlib.contextmanager
def atomic_path(target: str | Path) -> Iterator[Path]:
    """Yield a temporary path beside ``target``; rename it onto ``target`` on success only."""
    target = Path(target)
    target.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=f".{target.name}.", suffix=".tmp", dir=target.parent)
    os.close(fd)
    tmp_path = Path(tmp)
    try:
        yield tmp_path
        os.replace(tmp_path, target)
    finally:
        if tmp_path.exists():
            tmp_path.unlink()


def write_text(target: str | Path, text: str) -> None:
    with atomic_path(target) as tmp:
        tmp.write_text(text, encoding="utf-8")


def write_json(target: str | Path, obj: Any) -> None:
    write_text(target, json.dumps(obj, indent=2, sort_keys=False, default=_json_default) + "\n")


def write_npy(target: str | Path, array: np.ndarray) -> None:
    with atomic_path(target) as tmp, open(tmp, "wb") as handle:
        np.save(handle, array)


def _json_default(obj: Any) -> Any:
    if isinstance(obj, np.generic):
        return obj.item()
    if isinstance(obj, np.ndarray):
        return obj.tolist()
    if isinstance(obj, Path):
        return str(obj)
    raise TypeError(f"not JSON serialisable: {type(obj).__name__}")


def read_lines(path: str | Path, allow_empty_lines: bool = False) -> list[str]:
    """Read a UTF-8 text file (gzip if it ends in .gz) as a list of lines without newlines.

    A missing file, a corrupt gzip, invalid UTF-8 or (unless allowed) an empty line is an
    InputError naming the file and line.
    """
    path = Path(path)
    if not path.is_file():
        raise InputError(path, "an existing file", "no such file")
    try:
        if path.suffix == ".gz":
            with gzip.open(path, "rb") as handle:
                data = handle.read()
        else:
            data = path.read_bytes()
    except (OSError, EOFError, gzip.BadGzipFile) as exc:
        raise InputError(path, "a readable gzip file", f"corrupt data ({exc})") from None
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as exc:
        line = data[: exc.start].count(b"\n") + 1
        raise InputError(
            path, "UTF-8 text", f"invalid byte 0x{data[exc.start]:02x}", line=line
        ) from None
    lines = text.split("\n")
    if lines and lines[-1] == "":
        lines.pop()
    lines = [line.rstrip("\r") for line in lines]
    if not allow_empty_lines:
        for number, line in enumerate(lines, start=1):
            if not line.strip():
                raise InputError(path, "a non-empty line", "an empty line", line=number)
    return lines


def sha256_file(path: str | Path) -> str:
    """Hex sha256 of a file, read in 1 MiB blocks (manifests, provenance of inputs)."""
    digest = hashlib.sha256()
    with open(path, "rb") as handle:
        for block in iter(lambda: handle.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()
