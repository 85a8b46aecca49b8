"""Atomic writes and strict text reading shared by every stage.

Outputs are written to a temporary name beside the target and renamed into place only when
complete, so an interrupted or failed run never leaves a partial file behind.

While a command runs (``command``, entered by ``mlmm.cli.main``), the output files it
declares to ``guard_outputs`` (and directories it owns, ``lock_output_dir``) are locked: one
``.NAME.mlmm-lock`` beside each, ``flock``ed, so a second command writing the same output is
refused. Its declared inputs are protected: nothing the layer writes, replaces or removes may
be one of them or hold one, ``--force`` or not. The
record of a written file carries its size and modification time with its sha256, so a file
unchanged since it was written is known as ours without reading it again (``sha256_file``
answers from the record too).
"""

from __future__ import annotations

import contextlib
import errno
import fcntl
import gzip
import hashlib
import json
import os
import re
import shutil
import socket
import tempfile
import zipfile
from collections.abc import Callable, Iterator
from pathlib import Path
from types import SimpleNamespace
from typing import TYPE_CHECKING, Any

from mlmm.catalogue import TABLE_SUFFIXES  # every file of a table: mlmm.tables.write_table
from mlmm.errors import InputError

if TYPE_CHECKING:
    import numpy as np

# The write layer ---------------------------------------------------------------------------
# Every file and directory an mlmm command writes passes through ``atomic_path`` or
# ``temp_dir_beside``/``replace_dir`` (tests/test_write_layer.py fails on a write
# elsewhere).
# They refuse to replace what no mlmm command wrote unless ``--force`` is in effect: a
# process-wide setting that ``mlmm.cli.main`` takes from every subcommand's ``--force``.

RECORD_SUFFIX = ".mlmm-written"  # .NAME.mlmm-written beside a file: "<sha256> <size> <mtime_ns>"
LOCK_SUFFIX = ".mlmm-lock"  # .NAME.mlmm-lock beside an output while a command writes it
DIR_RECORD = ".mlmm-written"  # inside a directory built by replace_dir: "<sha256>  <path>" lines
FORCE_HINT = "pass --force to replace it"

_FORCE = False
_BUILDING: set[Path] = set()  # directories from temp_dir_beside, not yet renamed into place
_COMMAND = False  # inside ``command()``: guard_outputs locks outputs and protects inputs
_PROTECTED: set[Path] = set()  # the running command's declared inputs (resolved)
_LOCKS: dict[Path, tuple[int, Path]] = {}  # output (resolved) -> (locked fd, lock file)
_PENDING: set[Path] = set()  # outputs not there yet: locked when written as a whole
_PENDING_DIRS: set[Path] = set()  # one command's directories not there yet: locked on a write
_DIGESTS: dict[tuple, str] = {}  # (path, device, inode, size, mtime_ns) -> sha256
_TOUCHING: list[tuple[str, Path]] = []  # files being read or written, innermost last
_FAILED_AT: list[tuple[str, Path]] = []  # where an unexpected error left the layer
_LAST: list[tuple[str, Path]] = []  # the last file the layer began to read or write


def set_force(force: bool) -> None:
    """Let (or stop letting) this process replace files and directories no mlmm command wrote."""
    global _FORCE
    _FORCE = bool(force)


def force_in_effect() -> bool:
    return _FORCE


@contextlib.contextmanager
def forcing(force: bool) -> Iterator[None]:
    """``--force`` in effect inside the block when ``force`` (a library caller's ``force=True``
    argument, e.g. ``generate_world(out, force=True)``); as it was otherwise and afterwards."""
    before = _FORCE
    set_force(before or force)
    try:
        yield
    finally:
        set_force(before)


def _is_record(path: Path) -> bool:
    """A record or a lock of the layer: never an artefact of its own."""
    return path.name.endswith((RECORD_SUFFIX, LOCK_SUFFIX))


def _inside_build(path: Path) -> bool:
    real = _resolved(path)
    return any(real.is_relative_to(root) for root in _BUILDING)


def _written_record(path: Path) -> Path:
    return path.with_name(f".{path.name}{RECORD_SUFFIX}")


Entry = tuple[str, int, int]  # (sha256, size, mtime_ns) of one recorded state of a file


def _entry(path: Path, hashed: Any = None) -> Entry:
    """``path``'s sha256 (read once, unless ``hashed``: a sha256 fed its bytes as they were
    written), size and modification time."""
    stat = path.stat()
    digest = _hash(path, stat) if hashed is None else hashed.hexdigest()
    return digest, stat.st_size, stat.st_mtime_ns


def _record_entries(path: Path) -> list[Entry]:
    """The states of ``path`` its record lists (an old record's bare sha256: size -1)."""
    record = _written_record(path)
    if not record.is_file():
        return []
    entries = []
    for line in record.read_text(encoding="utf-8", errors="replace").splitlines():
        fields = line.split()
        if not fields or len(fields[0]) != 64:
            continue
        try:
            size, mtime = (int(fields[1]), int(fields[2])) if len(fields) == 3 else (-1, -1)
        except ValueError:
            size, mtime = -1, -1
        entries.append((fields[0], size, mtime))
    return entries


def _unchanged_entry(path: Path, stat: os.stat_result | None = None) -> Entry | None:
    """The entry of ``path``'s record with its current size and modification time."""
    stat = stat or path.stat()
    for entry in _record_entries(path):
        if entry[1:] == (stat.st_size, stat.st_mtime_ns):
            return entry
    return None


def _write_record(path: Path, entries: list[Entry]) -> None:
    """Write ``path``'s record (its states ``entries``) beside it, through a temporary name."""
    record = _written_record(path)
    fd, tmp = tempfile.mkstemp(prefix=_temp_prefix(record), suffix=".tmp", dir=path.parent)
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as handle:
            handle.write("".join(f"{d} {size} {mtime}\n" for d, size, mtime in entries))
        os.chmod(tmp, 0o666 & ~_umask())
        os.replace(tmp, record)
    finally:
        if os.path.exists(tmp):
            os.unlink(tmp)


def _record_written(path: Path) -> None:
    """Record ``path`` as ours: its sha256, size and modification time."""
    _write_record(path, [_entry(path)])


def _dir_record(root: Path) -> dict[str, str]:
    record = root / DIR_RECORD
    if not record.is_file():
        return {}
    listed = {}
    for line in record.read_text(encoding="utf-8", errors="replace").splitlines():
        digest, sep, rel = line.partition("  ")
        if sep and len(digest) == 64:
            listed[rel] = digest
    return listed


def _ours(path: Path, records: dict[Path, dict[str, str]]) -> bool:
    """Whether the file ``path`` is as an mlmm command wrote it: its own record, or the record
    of a directory above it that we built, names its current sha256 (``records``: the
    directory records read so far, so that a directory of many files reads each once)."""
    stat = path.stat()
    if _unchanged_entry(path, stat) is not None:
        return True  # unchanged since the layer recorded it: not read again
    digest = _hash(path, stat)
    if any(entry[0] == digest for entry in _record_entries(path)):
        return True
    real = _resolved(path)
    for root in real.parents:
        if root not in records:
            records[root] = _dir_record(root)
        if records[root].get(real.relative_to(root).as_posix()) == digest:
            return True
    return False


def foreign_file(path: str | Path) -> tuple[Path, str] | None:
    """The first file at or under ``path`` that no mlmm command wrote or that was edited since,
    with what it is; None when every one is ours (records themselves are not asked about)."""
    path = Path(path)
    files = [path] if not path.is_dir() else sorted(p for p in path.rglob("*") if p.is_file())
    records: dict[Path, dict[str, str]] = {}
    for file in files:
        if _is_record(file) or _inside_build(file):
            continue
        if not file.exists():
            return file, "a dangling symbolic link"
        if not _ours(file, records):
            edited = _written_record(file).is_file()
            return file, "an edited file" if edited else "a file no mlmm command wrote"
    return None


def claim(path: str | Path) -> None:
    """Refuse (InputError naming it and --force) to replace ``path`` unless it is missing, an
    empty directory, our own unedited output (every file inside a directory included), or
    ``--force`` is in effect: ``--out thesis.txt`` must not silently destroy the thesis."""
    path = Path(path)
    if _FORCE or not (path.exists() or path.is_symlink()) or _inside_build(path):
        return
    found = foreign_file(path)
    if found is None:
        return
    file, what = found
    if file == path:
        expected = "no file, or one an mlmm command wrote and nobody changed"
        raise InputError(path, expected, f"{what}; {FORCE_HINT}")
    raise InputError(
        path,
        "no directory, an empty one, or one an mlmm command wrote and nobody changed",
        f"{what}: {file.relative_to(path)}; {FORCE_HINT}",
    )


def replace_dir(tmp: str | Path, out: str | Path) -> None:
    """Put the directory ``tmp`` (from ``temp_dir_beside(out)``) in place of ``out``: ``out``
    claimed again (it may have changed while ``tmp`` was built), ``tmp``'s files recorded in
    ``DIR_RECORD`` so a rerun may replace them, the old ``out`` removed only after the rename."""
    tmp, out = Path(tmp), Path(out)
    refuse_protected(out)
    claim(out)
    entries = tree_hashes(tmp)
    record = tmp / DIR_RECORD
    record.write_text("".join(f"{h}  {rel}\n" for rel, h in entries.items()), encoding="utf-8")
    old = None
    if out.exists() or out.is_symlink():
        old = Path(tempfile.mkdtemp(prefix=_temp_prefix(out), suffix=".tmp", dir=out.parent))
        os.replace(out, old / out.name)
    os.replace(tmp, out)
    _BUILDING.discard(_resolved(tmp))
    if old is not None:
        shutil.rmtree(old, ignore_errors=True)


def discard(path: str | Path) -> None:
    """Remove a file or directory tree of ours (a temporary build, a work directory, a stale
    checkpoint); one that no mlmm command wrote is refused like a replacement (``claim``)."""
    path = Path(path)
    if not (path.exists() or path.is_symlink()):
        return
    refuse_protected(path)
    claim(path)
    if path.is_dir() and not path.is_symlink():
        shutil.rmtree(path)
    else:
        path.unlink()
        _written_record(path).unlink(missing_ok=True)
    _BUILDING.discard(_resolved(path))


@contextlib.contextmanager
def scratch(path: str | Path) -> Iterator[Path]:
    """Treat ``path`` (a temporary file or directory a library made for us, e.g. pooch's
    download target) as being built: the layer may write and replace it without a record."""
    real = _resolved(path)
    _BUILDING.add(real)
    try:
        yield Path(path)
    finally:
        _BUILDING.discard(real)


@contextlib.contextmanager
def open_partial(path: str | Path, append: bool) -> Iterator[Any]:
    """A binary handle on a partial download of ours (a hidden ``.part`` kept so that a broken
    connection resumes it), recorded as ours when closed so that it may be discarded later."""
    path = Path(path)
    if not append:
        claim(path)
    with open(path, "ab" if append else "wb") as handle:
        try:
            yield handle
        finally:
            handle.flush()
            _record_written(path)


def move_file(source: str | Path, target: str | Path) -> None:
    """Rename ``source`` (a complete file of ours) onto ``target`` through the layer."""
    source, target = Path(source), Path(target)
    building = _inside_build(target)
    if not building:
        refuse_protected(target)
        claim(target)
    os.replace(source, target)
    _written_record(source).unlink(missing_ok=True)
    if not building:
        _record_written(target)


def discard_build(tmp: str | Path) -> None:
    """Remove what is left of a ``temp_dir_beside`` directory after a failure (if anything)."""
    tmp = Path(tmp)
    shutil.rmtree(tmp, ignore_errors=True)
    _BUILDING.discard(_resolved(tmp))


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
    killed earlier run beside ``out`` are removed first. ``out`` is claimed first (``claim``):
    a directory or file there that no mlmm command wrote is refused before any work. What is
    written inside the new directory is covered by the record ``replace_dir`` leaves in it."""
    out = Path(out)
    refuse_protected(out)
    claim(out)
    out.parent.mkdir(parents=True, exist_ok=True)
    _lock_pending(out)
    remove_stale_temps(out)
    tmp = Path(tempfile.mkdtemp(prefix=_temp_prefix(out), suffix=".tmp", dir=out.parent))
    tmp.chmod(0o777 & ~_umask())
    _BUILDING.add(_resolved(tmp))
    return tmp


@contextlib.contextmanager
def atomic_path(target: str | Path, _hashed: Any = None) -> Iterator[Path]:
    """Yield a temporary path beside ``target``; rename it onto ``target`` on success only.

    This is the one write layer: an existing ``target`` that no mlmm command wrote (or that was
    edited since) is refused before anything is written, naming it and ``--force`` (``claim``),
    and a written ``target`` is recorded as ours (``.NAME.mlmm-written``, its sha256) so that a
    rerun may replace it. Inside a directory being built (``temp_dir_beside``) nothing can be
    foreign, and the directory's own record covers the files.

    The file gets the mode a plain ``open`` would (0666 less the umask), not mkstemp's 0600, so
    collaborators sharing a project directory can read every table, figure and model.
    ``_hashed``: the layer's own sha256 of every byte written to the temporary path, taken as it
    wrote them (``npy_rows``), recorded without reading the file again.
    """
    target = Path(target)
    recorded = not _inside_build(target) and not _is_record(target)
    if recorded:
        refuse_protected(target)
        claim(target)
    target.parent.mkdir(parents=True, exist_ok=True)
    if recorded:  # a directory being built is fresh: no leftovers to look for
        _lock_pending(target)
        remove_stale_temps(target)
    fd, tmp = tempfile.mkstemp(prefix=_temp_prefix(target), suffix=".tmp", dir=target.parent)
    os.fchmod(fd, 0o666 & ~_umask())
    os.close(fd)
    tmp_path = Path(tmp)
    _BUILDING.add(_resolved(tmp_path))
    try:
        with touching("writing", target):
            yield tmp_path
            if recorded:
                # the record names both the new file and the one it replaces before the
                # rename, so a stop between the two leaves neither looking foreign
                new = _entry(tmp_path, _hashed)
                old = _unchanged_entry(target) if target.is_file() else None
                _write_record(target, [new] + ([old] if old else []))
            os.replace(tmp_path, target)
            if recorded:
                _write_record(target, [new])
    except OSError as exc:
        raise _naming(exc, target) from None
    finally:
        _BUILDING.discard(_resolved(tmp_path))
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


def write_bytes(target: str | Path, data: bytes) -> None:
    with atomic_path(target) as tmp:
        tmp.write_bytes(data)


def copy_file(source: str | Path, target: str | Path) -> None:
    """A copy of ``source`` at ``target``, through the write layer."""
    with atomic_path(target) as tmp:
        shutil.copyfile(source, tmp)


def write_json(target: str | Path, obj: Any) -> None:
    write_text(target, json.dumps(obj, indent=2, sort_keys=False, default=_json_default) + "\n")


def write_npy(target: str | Path, array: np.ndarray) -> None:
    import numpy as np  # not at module level: the Snakefile's parse reads mlmm.config -> io
    with atomic_path(target) as tmp, open(tmp, "wb") as handle:
        np.save(handle, array)


@contextlib.contextmanager
def npy_rows(
    target: str | Path, shape: tuple[int, ...], dtype: Any
) -> Iterator[Callable[[np.ndarray], None]]:
    """Write the .npy array ``target`` of ``shape`` and ``dtype`` from blocks of rows handed,
    in order, to the function yielded; its sha256 is taken as the bytes are written, so its
    record costs no second read of the file. It is put in place only when the block ends with
    every row written (InputError naming it otherwise), like ``atomic_path``."""
    import numpy as np

    dtype, shape, hashed, rows = np.dtype(dtype), tuple(shape), hashlib.sha256(), [0]
    # "r+b": the temporary file is empty; truncating it ("wb") would make ext4 start writing
    # the whole file back when it is closed (auto_da_alloc), which its caller would wait for
    with atomic_path(target, _hashed=hashed) as tmp, open(tmp, "r+b") as handle:

        def write(data: Any) -> None:
            hashed.update(data)
            handle.write(data)

        header = {"descr": np.lib.format.dtype_to_descr(dtype), "fortran_order": False,
                  "shape": shape}  # fmt: skip
        np.lib.format.write_array_header_1_0(SimpleNamespace(write=write), header)

        def append(block: np.ndarray) -> None:
            block = np.ascontiguousarray(block, dtype=dtype)
            if block.shape[1:] != shape[1:] or rows[0] + len(block) > shape[0]:
                found = f"{len(block)} more of shape {block.shape[1:]} after {rows[0]}"
                raise ValueError(f"{target}: expected rows {shape}, found {found}")
            write(block.reshape(-1).view(np.uint8))
            rows[0] += len(block)

        yield append
        if rows[0] != shape[0]:
            raise InputError(target, f"{shape[0]} rows written", f"{rows[0]}")


def write_npz(target: str | Path, arrays: dict[str, np.ndarray]) -> None:
    """Named arrays in one uncompressed .npz, atomically."""
    import numpy as np
    with atomic_path(target) as tmp, open(tmp, "wb") as handle:
        np.savez(handle, **arrays)


def save_figure(fig, stem: str | Path) -> list[Path]:
    """`stem`.png and .pdf of a matplotlib figure, atomically; the PDF without a creation
    date, so that two runs write the same bytes. The title and provenance that
    `mlmm.origin.stamp_figure` kept go into the files' metadata and `stem`.caption.txt."""
    from mlmm.origin import caption_text, figure_caption

    caption = figure_caption(fig)
    text = " ".join(v for v in (caption.get("note"), caption.get("origin")) if v)
    paths = []
    for suffix in (".png", ".pdf"):
        path = Path(stem).with_suffix(suffix)
        if suffix == ".pdf":
            metadata = {"CreationDate": None, "Title": caption.get("title"), "Subject": text}
            metadata = {k: v for k, v in metadata.items() if v or k == "CreationDate"}
        else:
            metadata = {"Title": caption.get("title"), "Description": text}
            metadata = {k: v for k, v in metadata.items() if v} or None
        with atomic_path(path) as tmp:
            fig.savefig(tmp, format=suffix[1:], dpi=200, bbox_inches="tight", metadata=metadata)
        paths.append(path)
    if caption:
        write_text(Path(stem).with_suffix(".caption.txt"), caption_text(caption))
    return paths


def _json_default(obj: Any) -> Any:
    import numpy as np
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
    _LAST[:] = [("reading", path)]
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
    import numpy as np

    path = Path(path)
    if not path.is_file():
        raise InputError(path, what, "no such file")
    try:
        with touching("reading", path):
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


# The readers ---------------------------------------------------------------------------
# Every parse of a JSON, YAML, CSV, .npy/.npz or .pt file under src/mlmm goes through one of
# these (tests/test_error_boundary.py fails on a parse elsewhere): whatever is wrong with
# the file becomes one InputError naming it, and the line or key where that is known.


def _missing(path: Path, what: str) -> InputError:
    return InputError(path, f"an existing file ({what})", "no such file")


def _read_text(path: Path, what: str) -> str:
    if not path.is_file():
        raise _missing(path, what)
    _LAST[:] = [("reading", path)]
    data = path.read_bytes()
    try:
        return data.removeprefix(b"\xef\xbb\xbf").decode("utf-8")
    except UnicodeDecodeError as exc:
        line = data[: exc.start].count(b"\n") + 1
        found = f"invalid UTF-8 byte 0x{data[exc.start]:02x}"
        raise InputError(path, what, found, line=line) from None


def parse_json(text: str | bytes, where: str | Path, what: str = "JSON") -> Any:
    """``text`` parsed as JSON; a syntax error is an InputError naming ``where`` and the line."""
    try:
        return json.loads(text)
    except json.JSONDecodeError as exc:
        raise InputError(where, what, exc.msg, line=exc.lineno) from None
    except (UnicodeDecodeError, RecursionError) as exc:
        raise InputError(where, what, type(exc).__name__) from None


def read_json(path: str | Path, what: str = "a JSON file") -> Any:
    path = Path(path)
    return parse_json(_read_text(path, what), path, what)


def read_json_object(path: str | Path, keys: tuple[str, ...] = (), what: str = "") -> dict:
    """A JSON object holding every one of ``keys``; anything else names the file and key."""
    path = Path(path)
    what = what or "a JSON object" + (f" with {', '.join(keys)}" if keys else "")
    data = read_json(path, what)
    if not isinstance(data, dict):
        raise InputError(path, what, f"a JSON {type(data).__name__}")
    for key in keys:
        if key not in data:
            raise InputError(path, what, "no such key", key=key)
    return data


def parse_yaml(text: str, where: str | Path, what: str = "YAML") -> Any:
    import yaml

    # the C loader when PyYAML has one (the same mappings, several times faster: the config
    # schema is read at every command's start-up)
    loader = getattr(yaml, "CSafeLoader", yaml.SafeLoader)
    try:
        return yaml.load(text, Loader=loader)  # noqa: S506 (a safe loader)
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        line = mark.line + 1 if mark is not None else None
        found = str(getattr(exc, "problem", None) or exc).replace("\n", " ")
        raise InputError(where, what, found, line=line) from None


def read_yaml(path: str | Path, what: str = "a YAML file") -> Any:
    path = Path(path)
    return parse_yaml(_read_text(path, what), path, what)


def read_csv(
    path: str | Path, what: str = "a CSV file", columns: tuple[str, ...] = (), **options: Any
):
    """A pandas frame of a UTF-8 CSV file holding ``columns`` (``options`` go to
    ``pandas.read_csv``)."""
    import pandas as pd

    path = Path(path)
    if not path.is_file():
        raise _missing(path, what)
    try:
        with touching("reading", path):
            frame = pd.read_csv(path, encoding="utf-8", **options)
    except UnicodeDecodeError as exc:
        raise InputError(path, f"{what} in UTF-8", f"invalid byte ({exc.reason})") from None
    except pd.errors.ParserError as exc:
        match = re.search(r"line (\d+)", str(exc))
        line = int(match.group(1)) if match else None
        raise InputError(path, what, str(exc).strip().splitlines()[-1], line=line) from None
    except (pd.errors.EmptyDataError, ValueError) as exc:
        raise InputError(path, what, str(exc).strip().splitlines()[-1]) from None
    missing = [column for column in columns if column not in frame.columns]
    if missing:
        found = f"no column {', '.join(missing)} (columns: {', '.join(map(str, frame.columns))})"
        raise InputError(path, f"{what} with columns {', '.join(columns)}", found)
    return frame


def read_npz(path: str | Path, what: str = "an .npz archive") -> dict[str, np.ndarray]:
    """Every array of an .npz archive (never unpickled), read at once and the file closed."""
    import numpy as np

    path = Path(path)
    if not path.is_file():
        raise _missing(path, what)
    try:
        with touching("reading", path), np.load(path, allow_pickle=False) as archive:
            if not hasattr(archive, "files"):
                raise InputError(path, what, "a single .npy array")
            return {name: archive[name] for name in archive.files}
    except ValueError as exc:
        raise InputError(path, what, f"unreadable data ({exc})") from None
    except (OSError, EOFError, zipfile.BadZipFile) as exc:
        raise InputError(path, what, f"unreadable data ({exc})") from None


def read_torch(path: str | Path, what: str = "a PyTorch file", **options: Any) -> Any:
    """``torch.load(path, **options)``: a missing, truncated or foreign file is an InputError."""
    import pickle

    import torch

    path = Path(path)
    if not path.is_file():
        raise _missing(path, what)
    try:
        with touching("reading", path):
            return torch.load(path, **options)
    except (RuntimeError, EOFError, pickle.UnpicklingError, ValueError, KeyError) as exc:
        found = str(exc).strip().splitlines()[0][:200] if str(exc).strip() else type(exc).__name__
        raise InputError(path, what, f"unreadable data ({found})") from None


def sha256_file(path: str | Path) -> str:
    """Hex sha256 of a file (manifests, provenance of inputs), computed once: a file unchanged
    (same size and modification time) since the layer wrote it answers from its record, and
    one already hashed in this process from memory."""
    path = Path(path)
    stat = path.stat()
    entry = _unchanged_entry(path, stat)
    if entry is not None:
        return entry[0]
    with touching("reading", path):
        return _hash(path, stat)


def unchanged_since_written(path: str | Path) -> bool:
    """Whether ``path`` is as the layer wrote it, by its record's size and modification time
    (nothing read): a reader may skip digesting its content again, as ``sha256_file`` does."""
    path = Path(path)
    return path.is_file() and _unchanged_entry(path) is not None


def _hash(path: Path, stat: os.stat_result) -> str:
    """sha256 of ``path`` read in 1 MiB blocks, remembered by (path, inode, size, mtime)."""
    key = (_resolved(path), stat.st_dev, stat.st_ino, stat.st_size, stat.st_mtime_ns)
    if key not in _DIGESTS:
        digest = hashlib.sha256()
        with open(path, "rb") as handle:
            for block in iter(lambda: handle.read(1 << 20), b""):
                digest.update(block)
        _DIGESTS[key] = digest.hexdigest()
    return _DIGESTS[key]


def _resolved(path: str | Path) -> Path:
    """``path`` made absolute with every symlink followed (also for a path not there yet)."""
    return Path(os.path.realpath(Path(path).expanduser()))


# A running command: its locks, its protected inputs, the file an error met ------------------


@contextlib.contextmanager
def command() -> Iterator[None]:
    """One command's run (``mlmm.cli.main``): ``guard_outputs`` locks its outputs and protects
    its inputs inside; both are released when it ends, however it ends."""
    global _COMMAND
    _COMMAND = True
    _FAILED_AT.clear()
    _LAST.clear()
    try:
        yield
    finally:
        _COMMAND = False
        _PROTECTED.clear()
        _PENDING.clear()
        _PENDING_DIRS.clear()
        release_locks()


def refuse_protected(path: str | Path) -> None:
    """InputError when ``path`` is, or holds, a declared input of the running command: no
    write, replacement or removal touches what the command reads, ``--force`` or not."""
    if not _PROTECTED:
        return
    real = _resolved(path)
    for source in sorted(_PROTECTED):
        if source == real:
            raise InputError(path, "an output apart from the command's inputs", "one of them")
        if source.is_relative_to(real):
            found = f"a directory holding its input {source}"
            raise InputError(path, "an output apart from the command's inputs", found)


def _lock(out: Path) -> None:
    """Hold ``.NAME.mlmm-lock`` beside ``out`` (``flock``) until the command ends; another
    process holding it is refused naming ``out``.

    ``guard_outputs`` locks an output file that exists at once; an output not there yet is
    locked when the layer writes it, or builds it as a directory, as a whole (a directory
    that several commands write files into, such as a tables directory, is not locked: the
    files written in it are the outputs)."""
    real = _resolved(out)
    if real in _LOCKS:
        return
    lock = real.parent / f".{real.name}{LOCK_SUFFIX}"
    while True:
        fd = os.open(lock, os.O_RDWR | os.O_CREAT, 0o666 & ~_umask())
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            holder = os.pread(fd, 200, 0).decode("utf-8", "replace").strip() or "unknown"
            os.close(fd)
            raise InputError(
                out, "no other command writing it at the same time",
                f"it is being written by another mlmm command (process {holder}); let that "
                "one finish first",
            ) from None  # fmt: skip
        try:  # the file locked may be one its last holder removed meanwhile: lock the new one
            current = os.stat(lock).st_ino == os.fstat(fd).st_ino
        except FileNotFoundError:
            current = False
        if current:
            break
        os.close(fd)
    os.ftruncate(fd, 0)
    os.pwrite(fd, f"{os.getpid()} on {socket.gethostname().split('.')[0]}\n".encode(), 0)
    _LOCKS[real] = (fd, lock)


def _lock_pending(target: Path) -> None:
    """Lock ``target`` (about to be written or replaced as a whole) when it is an output of
    the command not locked yet."""
    real = _resolved(target)
    if real in _PENDING:
        _PENDING.discard(real)
        _lock(real)
    for directory in [d for d in _PENDING_DIRS if real.is_relative_to(d)]:
        _PENDING_DIRS.discard(directory)
        _lock(directory)


def lock_output_dir(path: str | Path) -> None:
    """Lock the directory ``path`` as one command's own (a training run's directory: its
    checkpoints, model and metrics), from now if its parent is there, else from the first
    write into it: a second command writing into it is refused (``guard_outputs`` does not
    lock a directory, which several commands may write files into)."""
    if not _COMMAND:
        return
    real = _resolved(path)
    if real.parent.is_dir():
        _lock(real)
    else:
        _PENDING_DIRS.add(real)


def release_locks() -> None:
    """Remove and release every output lock this process holds."""
    while _LOCKS:
        _, (fd, lock) = _LOCKS.popitem()
        with contextlib.suppress(OSError):
            os.unlink(lock)
        os.close(fd)


@contextlib.contextmanager
def touching(verb: str, path: str | Path) -> Iterator[None]:
    """Mark ``path`` as being read or written (``verb``) inside the block: an unexpected error
    raised there is remembered with it, for ``error_place``."""
    _TOUCHING.append((verb, Path(path)))
    _LAST[:] = [(verb, Path(path))]
    try:
        yield
    except InputError:
        raise
    except Exception:
        if not _FAILED_AT:
            _FAILED_AT.append((verb, Path(path)))
        raise
    finally:
        _TOUCHING.pop()


def error_place() -> str:
    """Where an unexpected error met the layer: 'while writing X' / 'while reading X'; for
    one raised between reads and writes, the last file the command began to read or write;
    '' before any."""
    if _FAILED_AT:
        verb, path = _FAILED_AT[0]
        return f"while {verb} {path}"
    if _LAST:
        verb, path = _LAST[0]
        return f"after {verb} {path}"
    return ""


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
    wrong ``--out`` costs nothing: an existing output file that no mlmm command wrote is refused
    here already (``claim``; ``force`` or the process-wide ``--force`` lets it be replaced);
    directories are claimed by the layer that writes them (``atomic_path``, ``temp_dir_beside``).
    """
    outs = [Path(o) for o in outputs if o is not None]
    ins = [Path(i) for i in inputs if i is not None]
    if _COMMAND:
        _PROTECTED.update(_resolved(i) for i in ins if i.exists())
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
    claim_output_files([out for out in outs if not out.is_dir()], bool(force))
    if _COMMAND:
        for out in outs:
            if out.is_file():
                _lock(out)
            elif not out.exists():
                _PENDING.add(_resolved(out))


# The papers' numbers shipped with the package (mlmm.shipped): an input of every table command
# (the default of paper_tables), whatever --paper-tables says.
SHIPPED_PAPER_TABLES = (Path(__file__).parent / "paper_tables").resolve()


def table_outputs(
    stem_or_dir: str | Path, inputs: list, stem: bool = False, force: bool | None = None
) -> None:
    """``guard_outputs`` for a table command: the papers' tables (given and shipped) are
    inputs, and a stem's files (``TABLE_SUFFIXES``) are its outputs."""
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


def claim_output_files(paths: list[Path], force: bool = False) -> None:
    """``claim`` for the output files of a command before it reads anything (so a wrong
    ``--out`` costs nothing); an existing directory where a file goes is refused too."""
    for path in paths:
        if not path.exists() or force or _FORCE:
            continue
        if path.is_dir():
            raise InputError(path, "a file path (or no such path)", "a directory")
        claim(path)


def tree_hashes(root: str | Path, skip: tuple[str, ...] = ()) -> dict[str, str]:
    """sha256 of every file under ``root`` by POSIX relative path (names in ``skip`` and the
    write layer's records left out)."""
    root = Path(root)
    return {
        path.relative_to(root).as_posix(): sha256_file(path)
        for path in sorted(root.rglob("*"))
        if path.is_file()
        and path.relative_to(root).as_posix() not in skip
        and not _is_record(path)
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
    if not out.exists() or force or _FORCE:
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
