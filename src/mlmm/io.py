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


def _umask() -> int:
    umask = os.umask(0)
    os.umask(umask)
    return umask


def temp_dir_beside(out: str | Path) -> Path:
    """A fresh hidden directory beside ``out`` to build it in, with the mode the umask gives
    (mkdtemp's 0700 would otherwise stick to ``out`` once renamed onto it)."""
    out = Path(out)
    tmp = Path(tempfile.mkdtemp(prefix=f".{out.name}.", suffix=".tmp", dir=out.parent))
    tmp.chmod(0o777 & ~_umask())
    return tmp


@contextlib.contextmanager
def atomic_path(target: str | Path) -> Iterator[Path]:
    """Yield a temporary path beside ``target``; rename it onto ``target`` on success only.

    The file gets the mode a plain ``open`` would (0666 less the umask), not mkstemp's 0600, so
    collaborators sharing a project directory can read every table, figure and model.
    """
    target = Path(target)
    target.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=f".{target.name}.", suffix=".tmp", dir=target.parent)
    os.fchmod(fd, 0o666 & ~_umask())
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


def write_npz(target: str | Path, arrays: dict[str, np.ndarray]) -> None:
    """Named arrays in one uncompressed .npz, atomically."""
    with atomic_path(target) as tmp, open(tmp, "wb") as handle:
        np.savez(handle, **arrays)


def save_figure(fig, stem: str | Path) -> list[Path]:
    """`stem`.png and .pdf of a matplotlib figure, atomically; the PDF without a creation
    date, so that two runs write the same bytes."""
    paths = []
    for suffix in (".png", ".pdf"):
        path = Path(stem).with_suffix(suffix)
        metadata = {"CreationDate": None} if suffix == ".pdf" else None
        with atomic_path(path) as tmp:
            fig.savefig(tmp, format=suffix[1:], dpi=150, bbox_inches="tight", metadata=metadata)
        paths.append(path)
    return paths


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
    InputError naming the file and line. A UTF-8 byte order mark (Windows editors write one) is
    dropped, so it never becomes part of the first word (a vocabulary entry, a BLEU token).
    """
    path = Path(path)
    if not path.is_file():
        raise InputError(path, "an existing file", "no such file")
    try:
        data = path.read_bytes()
    except OSError as exc:
        raise InputError(path, "a readable file", exc.strerror or type(exc).__name__) from None
    if path.suffix == ".gz":
        try:
            data = gzip.decompress(data)
        except (OSError, EOFError, gzip.BadGzipFile) as exc:
            raise InputError(path, "a readable gzip file", f"corrupt data ({exc})") from None
    try:
        text = data.removeprefix(b"\xef\xbb\xbf").decode("utf-8")
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


def refuse_overwrite(out: str | Path, inputs: list[str | Path | None], force: bool = False) -> None:
    """InputError when ``out`` is one of ``inputs`` (same file, however spelt), unless ``force``.

    A command that writes its output over its input destroys the input before it has read it
    all (or leaves the user with only the derived file), so it must be asked for explicitly.
    """
    if force:
        return
    target = Path(out)
    for source in inputs:
        if source is None:
            continue
        source = Path(source)
        same = (
            os.path.samefile(source, target)
            if source.exists() and target.exists()
            else source.resolve() == target.resolve()
        )
        if same:
            raise InputError(
                target, f"an output path other than the input {source}", "the input itself"
            )


def tree_hashes(root: str | Path, skip: tuple[str, ...] = ()) -> dict[str, str]:
    """sha256 of every file under ``root`` by POSIX relative path (names in ``skip`` left out)."""
    root = Path(root)
    return {
        path.relative_to(root).as_posix(): sha256_file(path)
        for path in sorted(root.rglob("*"))
        if path.is_file() and path.relative_to(root).as_posix() not in skip
    }


def mark_output_dir(root: str | Path, marker: str) -> None:
    """Write ``root/marker``: the sha256 of every file under ``root``, so that a later run can
    tell an untouched directory of ours (which it may replace) from edited or foreign content."""
    entries = tree_hashes(root, skip=(marker,))
    write_text(Path(root) / marker, "".join(f"{h}  {rel}\n" for rel, h in entries.items()))


def claim_output_dir(
    out: str | Path, what: str, marker: str, force: bool = False
) -> None:
    """Refuse to replace ``out`` unless it is missing, empty, or an unedited output of ours.

    "Ours" means ``out/marker`` (written by ``mark_output_dir``) lists every file present with
    its hash; files it lists that are gone (e.g. deleted by Snakemake before a rerun) are fine.
    Anything else (a foreign directory, an edited or added file) needs ``force``.
    """
    out = Path(out)
    if not out.exists() or force:
        return
    if not out.is_dir():
        raise InputError(out, "a directory (or no such path)", "a file")
    if not any(out.iterdir()):
        return
    hint = "; pass --force to replace it"
    listed: dict[str, str] = {}
    marker_path = out / marker
    if not marker_path.is_file():
        raise InputError(
            out, f"an empty directory or {what} (with {marker})",
            f"a non-empty directory without {marker}{hint}",
        )
    for number, line in enumerate(read_lines(marker_path, allow_empty_lines=True), start=1):
        digest, sep, rel = line.partition("  ")
        if not sep or len(digest) != 64:
            raise InputError(marker_path, "'<sha256>  <path>' lines", repr(line[:60]), line=number)
        listed[rel] = digest
    for rel, digest in tree_hashes(out, skip=(marker,)).items():
        if listed.get(rel) != digest:
            change = "an added file" if rel not in listed else "an edited file"
            raise InputError(
                out, f"an empty directory or an unedited {what} (as {marker} lists)",
                f"{change} {rel}{hint}",
            )
