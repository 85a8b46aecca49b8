"""Atomic writes and strict text reading shared by every stage.

Outputs are written to a temporary name beside the target and renamed into place only when
complete, so an interrupted or failed run never leaves a partial file behind.
"""

from __future__ import annotations

import contextlib
import errno
import gzip
import hashlib
import json
import os
import re
import shutil
import socket
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


def _temp_prefix(out: Path) -> str:
    """Hidden temporary names beside ``out`` carry the host and process that made them, so a
    later run can tell the leftovers of a killed one (its process gone) from a live one's."""
    return f".{out.name}.{socket.gethostname().split('.')[0]}-{os.getpid()}."


def remove_stale_temps(out: str | Path) -> list[Path]:
    """Delete the temporary files and directories a killed run left beside ``out`` (made on
    this host by a process that no longer exists); returns them. A kill (SIGKILL, a job's
    time limit) runs no cleanup, and a half-built demo world is megabytes kept for good."""
    out = Path(out)
    host = socket.gethostname().split(".")[0]
    pattern = re.compile(re.escape(f".{out.name}.{host}-") + r"(\d+)\..*\.tmp")
    removed = []
    if not out.parent.is_dir():
        return removed
    for path in out.parent.iterdir():
        match = pattern.fullmatch(path.name)
        if match is None or _alive(int(match.group(1))):
            continue
        if path.is_dir() and not path.is_symlink():
            shutil.rmtree(path, ignore_errors=True)
        else:
            path.unlink(missing_ok=True)
        removed.append(path)
    return removed


def _alive(pid: int) -> bool:
    if pid == os.getpid():
        return True
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:  # another user's live process
        return True
    return True


def temp_dir_beside(out: str | Path) -> Path:
    """A fresh hidden directory beside ``out`` to build it in, with the mode the umask gives
    (mkdtemp's 0700 would otherwise stick to ``out`` once renamed onto it). Leftovers of a
    killed earlier run beside ``out`` are removed first."""
    out = Path(out)
    remove_stale_temps(out)
    tmp = Path(tempfile.mkdtemp(prefix=_temp_prefix(out), suffix=".tmp", dir=out.parent))
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
    remove_stale_temps(target)
    fd, tmp = tempfile.mkstemp(prefix=_temp_prefix(target), suffix=".tmp", dir=target.parent)
    os.fchmod(fd, 0o666 & ~_umask())
    os.close(fd)
    tmp_path = Path(tmp)
    try:
        yield tmp_path
        os.replace(tmp_path, target)
    except OSError as exc:
        raise _naming(exc, target) from None
    finally:
        if tmp_path.exists():
            tmp_path.unlink()


def _naming(exc: OSError, target: Path) -> Exception:
    """A system error while writing ``target`` (a full disk: the write itself fails, with no
    file name), as one that names ``target`` rather than its temporary file."""
    if exc.errno == errno.ENOSPC:
        return InputError(target, "free space on its disk to write it", "the disk full (ENOSPC)")
    if exc.filename is None or ".tmp" in str(exc.filename):
        return OSError(exc.errno, exc.strerror or str(exc), str(target))
    return exc


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
    if "\x00" in text:  # a binary file or a damaged caption: no tokenizer sees words in it
        line = text[: text.index("\x00")].count("\n") + 1
        raise InputError(path, "text without NUL bytes", "a NUL byte (0x00)", line=line)
    lines = text.split("\n")
    if lines and lines[-1] == "":
        lines.pop()
    lines = [line.rstrip("\r") for line in lines]
    if not allow_empty_lines:
        for number, line in enumerate(lines, start=1):
            if not line.strip():
                raise InputError(path, "a non-empty line", "an empty line", line=number)
    return lines


def read_npy(path: str | Path, what: str = "a .npy array", mmap_mode: str | None = None):
    """A .npy array, never unpickled (a pickled .npy could run code, and holds no numbers):
    a missing, pickled or unreadable file is an InputError naming it."""
    path = Path(path)
    if not path.is_file():
        raise InputError(path, what, "no such file")
    try:
        array = np.load(path, mmap_mode=mmap_mode, allow_pickle=False)
    except ValueError as exc:
        if "pickle" in str(exc) or "Python objects" in str(exc):
            found = "a pickled array of Python objects (not loaded: allow_pickle=False)"
        else:
            found = f"unreadable data ({exc})"
        raise InputError(path, what, found) from None
    except (OSError, EOFError) as exc:
        raise InputError(path, what, f"unreadable data ({exc})") from None
    if not isinstance(array, np.ndarray):  # an .npz archive under a .npy name
        array.close()
        raise InputError(path, what, "an .npz archive")
    return array


def sha256_file(path: str | Path) -> str:
    """Hex sha256 of a file, read in 1 MiB blocks (manifests, provenance of inputs)."""
    digest = hashlib.sha256()
    with open(path, "rb") as handle:
        for block in iter(lambda: handle.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


def _resolved(path: str | Path) -> Path:
    """``path`` made absolute with every symlink followed (also for a path not there yet)."""
    return Path(os.path.realpath(Path(path).expanduser()))


def guard_outputs(
    outputs: list[str | Path | None],
    inputs: list[str | Path | None],
    force: bool | None = None,
) -> None:
    """InputError unless every output path is apart from every input path and from the other
    outputs: an output may not equal an input (however spelt: symlinks followed, hard links
    compared by inode), hold one (a directory an input lies in, which the command would
    replace) or lie inside one (writing into a directory the command reads, e.g. the papers'
    tables or the images). Every command that writes calls this before reading anything, so a
    wrong ``--out`` costs nothing. ``force`` given (True or False): the outputs are files whose
    writing is recorded (``mlmm.cli.declare_outputs``), and an existing one no mlmm command
    wrote is replaced only with ``force`` (``claim_output_files``); directories are protected
    by their own markers (``claim_output_dir``)."""
    outs = [Path(o) for o in outputs if o is not None]
    ins = [Path(i) for i in inputs if i is not None]
    for index, out in enumerate(outs):
        target = _resolved(out)
        for other in outs[:index]:
            if _resolved(other) == target:
                raise InputError(out, "distinct output paths", f"{other} named twice")
        for source in ins:
            real = _resolved(source)
            same = real == target or (
                source.exists() and out.exists() and os.path.samefile(source, out)
            )
            if same:
                raise InputError(
                    out, f"an output path other than the input {source}", "the input itself"
                )
            if real.is_relative_to(target):
                raise InputError(
                    out,
                    f"an output path that does not hold the input {source}",
                    "a directory the input lies in",
                )
            if target.is_relative_to(real):
                raise InputError(
                    out,
                    f"an output path outside the input {source}",
                    "a path inside it",
                )
    if force is not None:
        claim_output_files(outs, force)


# The papers' numbers shipped in the checkout: an input of every table command (the default of
# paper_tables), whatever --paper-tables says.
SHIPPED_PAPER_TABLES = Path(__file__).resolve().parents[2] / "resources" / "paper_tables"


TABLE_SUFFIXES = (".csv", ".md", ".tex", ".html")  # mlmm.tables.write_table


def table_outputs(
    stem_or_dir: str | Path, inputs: list, stem: bool = False, force: bool | None = None
) -> None:
    """``guard_outputs`` for a table command: the papers' tables (given and shipped) are
    inputs, and a stem's .csv/.md/.tex are its outputs."""
    path = Path(stem_or_dir)
    outs = [path.with_suffix(s) for s in TABLE_SUFFIXES] if stem else [path]
    guard_outputs(outs, [*inputs, SHIPPED_PAPER_TABLES], force)


def local_paths(locations: list[str | Path | None]) -> list[str | Path]:
    """The local ones of paths-or-URLs (``file://`` URLs as paths): inputs for the guard."""
    from urllib.parse import urlparse
    from urllib.request import url2pathname

    out: list[str | Path] = []
    for location in locations:
        if location is None:
            continue
        parsed = urlparse(str(location))
        if parsed.scheme == "file":
            out.append(url2pathname(parsed.path))
        elif len(parsed.scheme) <= 1:  # a path (a one-letter scheme: a Windows drive)
            out.append(location)
    return out


def refuse_overwrite(
    out: str | Path, inputs: list[str | Path | None], force: bool | None = None
) -> None:
    """``guard_outputs([out], inputs, force)`` for a command with one output."""
    guard_outputs([out], inputs, force)


def _written_record(path: Path) -> Path:
    return path.with_name(f".{path.name}.mlmm-written")


def mark_written(paths: list[Path]) -> None:
    """Record beside each written file (``.NAME.mlmm-written``: its sha256) that a command of
    ours wrote it, so that a rerun may replace it (``claim_output_files``)."""
    for path in paths:
        if path.is_file():
            write_text(_written_record(path), sha256_file(path) + "\n")


def claim_output_files(paths: list[Path], force: bool = False) -> None:
    """Refuse to replace an existing output file that no command of ours wrote, or that was
    edited since (its ``.NAME.mlmm-written`` record missing or naming another hash), unless
    ``force``: ``--out thesis.txt`` must not silently destroy the thesis."""
    for path in paths:
        if not path.exists() or force:
            continue
        if path.is_dir():
            raise InputError(path, "a file path (or no such path)", "a directory")
        record = _written_record(path)
        recorded = record.read_text(encoding="utf-8").strip() if record.is_file() else None
        if recorded != sha256_file(path):
            found = "a file no mlmm command wrote" if recorded is None else "an edited file"
            raise InputError(
                path,
                f"no file, or one an mlmm command wrote and nobody changed ({record.name})",
                f"{found}; pass --force to replace it",
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
