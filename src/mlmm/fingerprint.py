"""Fingerprints of what a resumable artefact was made from: a resume never trusts stale work.

A resumable artefact (a retrieval ``checkpoint.pt``, the finished shards of a feature
extraction) records a fingerprint: a named digest of each of its inputs' contents (the bytes of
files, the values of arrays) and of the settings that shape it. Before resuming, the run
computes the fingerprint again; if any part differs, the artefact is discarded, one line says
which inputs changed, and the work starts over. Clocks are not part of it, contents are:
a file replaced under the same name does not resume.
"""

from __future__ import annotations

import hashlib
import json
import sys
from collections.abc import Callable, Iterable, Mapping
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import numpy as np

from mlmm.io import sha256_file

Fingerprint = dict[str, str]


def _update(digest, value: Any) -> None:
    """Feed ``value`` to ``digest`` canonically (type-tagged, dict keys sorted): equal values give
    equal bytes whatever their order of construction."""
    if isinstance(value, Mapping | list | tuple):
        try:  # plain data (caption lists, config records): serialised in C, one update
            text = json.dumps(value, sort_keys=True, allow_nan=True)
        except (TypeError, ValueError):  # arrays, tensors, sets, mixed keys: walked below
            pass
        else:
            digest.update(b"j" + text.encode() + b";")
            return
    if isinstance(value, Mapping):
        digest.update(b"{")
        for key in sorted(value, key=str):
            _update(digest, str(key))
            _update(digest, value[key])
        digest.update(b"}")
    elif isinstance(value, set | frozenset):
        _update(digest, sorted(value, key=repr))
    elif isinstance(value, list | tuple):
        digest.update(b"[%d" % len(value))
        for item in value:
            _update(digest, item)
        digest.update(b"]")
    elif isinstance(value, np.ndarray | np.generic):
        array = np.ascontiguousarray(value)
        digest.update(f"a{array.dtype.str}{array.shape}".encode())
        digest.update(array.view(np.uint8).reshape(-1) if array.size else b"")
    elif hasattr(value, "detach") and hasattr(value, "cpu"):  # a torch tensor
        _update(digest, value.detach().cpu().contiguous().numpy())
    elif isinstance(value, Path):
        _update(digest, str(value))
    else:  # str, int, float, bool, None
        digest.update(json.dumps(value).encode() + b";")


def value_digest(value: Any) -> str:
    """sha256 of a value: nested dicts, lists, strings, numbers, numpy arrays, tensors."""
    digest = hashlib.sha256()
    _update(digest, value)
    return digest.hexdigest()


def file_identity(path: str | Path, data: bytes | None = None) -> tuple[str, int, str]:
    """(name, size, sha256) of a file, from ``data`` (its bytes, already read by the caller: a
    feature extraction's loader workers) or read here; (name, -1, "missing") without it."""
    path = Path(path)
    if data is not None:
        return (path.name, len(data), hashlib.sha256(data).hexdigest())
    if not path.is_file():
        return (path.name, -1, "missing")
    return (path.name, path.stat().st_size, sha256_file(path))


def identities_digest(identities: Iterable[tuple[str, int, str] | list]) -> str:
    """The digest ``files_digest`` gives, from the files' ``file_identity`` in order."""
    return value_digest([list(identity) for identity in identities])


def files_digest(paths: Iterable[str | Path], threads: int = 1) -> str:
    """sha256 over the names, sizes and sha256 of ``paths`` in order (a missing file counts as
    such), read in ``threads`` threads; an image replaced under the same name changes it."""
    with ThreadPoolExecutor(max(1, threads)) as pool:
        return identities_digest(pool.map(file_identity, [Path(p) for p in paths]))


def changed_parts(recorded: Mapping | None, current: Mapping) -> list[str]:
    """Names of the parts of ``current`` that ``recorded`` lacks or records otherwise (all of
    them when nothing was recorded, as for an artefact written before fingerprints)."""
    recorded = recorded or {}
    names = [name for name in current if recorded.get(name) != current[name]]
    return names + [name for name in recorded if name not in current]


def stale(artefact: str | Path, recorded: Mapping | None, current: Mapping) -> bool:
    """True (after one line on stderr naming what changed) when ``artefact`` was made from
    other inputs than ``current``; the caller then discards it and starts over."""
    changed = changed_parts(recorded, current)
    if changed:
        what = "no fingerprint recorded" if not recorded else ", ".join(changed)
        print(f"{artefact}: inputs changed since it was written ({what}), starting over",
              file=sys.stderr)  # fmt: skip
    return bool(changed)


# ------------------------------------------------------------------------------------------
# finished artefacts: what they were made from, checked whenever they are read

# The kinds of artefact that record what they were made from, with the inputs each record
# names; tests/test_artefact_provenance.py damages every kind (another run's copy over it, its
# record missing, edited, read with another input) and expects its reader to refuse.
# Where the record lives: INSIDE the artefact, written in the same write (torch checkpoints:
# a key of the saved dict; npz archives: an entry; ``inside_record``/``check_inside_record``),
# so no copy separates them and no interrupted write leaves one without the other; in the
# sidecar written with it (feature arrays); in a hidden ``.NAME.made-from.json`` beside it
# (text files and directories, ``record_made_from``/``check_made_from``/``check_directory``).
# A missing record is an error, except where a tool reads files made outside mlmm (n-best
# lists and weights of another decoder: ``check_made_from(..., external=True)``).
ARTEFACT_KINDS = {
    # inside the sidecar <split>.json written with the array (made_from_record; read with
    # check_sidecar_made_from, mlmm.arrays.check_feature_record): bytes, image list in order,
    # split. A copy of the array with its sidecar carries it; an array without it is refused.
    "image feature array (mlmm features)": ("image list", "split"),
    # inside codes.npz (entry 'made_from'): content, run (lambda, its settings), bag of words
    # (mlmm.ted.experiment.codes_file: ted-tune with the run's lambda, ted-classify)
    "TED CorrNet codes (ted-train)": ("bag of words",),
    # inside model.pt (key 'made_from'): content, run (lambda, its settings), bag of words
    # (mlmm.ted.corrnet.load with the tuned lambda: ted-neighbours)
    "TED CorrNet model (ted-train)": ("bag of words",),
    # inside model.pt (key 'made_from'): content, run (variant, seed), the digests of
    # mlmm.retrieval.train.Run.fingerprint (mlmm.retrieval.api.load_trained:
    # nbest-features --feature NAME=KIND:MODEL, checked against the run's metrics.json)
    "retrieval model (train-retrieval)": (
        "config", "train features", "validation features", "captions", "vocabularies",
        "initial weights (word vectors)", "alignment lexicons",
    ),
    # inside model.pt (key 'made_from'): content, run (languages, seed, config), training
    # data (mlmm.nmt.model.load_translator: nbest, pivot-translate)
    "NMT model (train-nmt)": ("training data",),
    # .NAME.made-from.json: bytes, source text (mlmm.nbest.read_nbest); a list without it is
    # read as is (a Moses list of another decoder)
    "n-best list (nbest, nbest-features)": ("source",),
    # lambda.json: each chosen run relative to the file, the sha256 of its codes
    # (mlmm.ted.experiment.chosen_run)
    "TED tuning (ted-tune)": ("codes of the chosen runs",),
    # meta.json's record: the other files of the directory (record_directory; Bow.load)
    "TED bag-of-words directory (ted-bow)": ("files of the directory",),
    # metrics.json's record: the other files of the run (record_directory;
    # mlmm.results.pivot_table.read_runs, pivot-mt's direct run, pivot-examples' rankings)
    "pivot run directory (pivot-train, pivot-mt)": ("files of the directory",),
    # .NAME.made-from.json: bytes, corpus texts, threshold (mlmm.data.vocab.Vocabulary.load)
    "Multi30K vocabulary (multi30k-vocab)": ("corpus", "min count"),
    # .NAME.made-from.json: bytes, the tuning n-best list and references (read_weights:
    # rerank); weights without it are read as is (tuned by another decoder's tools)
    "MIRA weights (mira)": ("n-best list", "references"),
}


def made_from_path(artefact: str | Path) -> Path:
    """The record beside ``artefact``: ``.NAME.made-from.json``."""
    artefact = Path(artefact)
    return artefact.with_name(f".{artefact.name}.made-from.json")


def record_made_from(artefact: str | Path, inputs: Mapping[str, str]) -> None:
    """Record beside a finished ``artefact`` the sha256 of its own bytes and the digests of the
    inputs it was made from (``value_digest``/``files_digest``/``sha256_file``)."""
    from mlmm.io import write_json

    write_json(made_from_path(artefact), {"sha256": sha256_file(artefact), "inputs": dict(inputs)})


def directory_files(directory: str | Path, index: str) -> str:
    """Digest of a directory's files other than its ``index`` file and the records (names
    starting with a dot): what the index was written over."""
    files = sorted(
        p for p in Path(directory).iterdir() if p.is_file() and p.name[0] != "." and p.name != index
    )
    return files_digest(files)


def record_directory(directory: str | Path, index: str) -> None:
    """Record, beside a directory's ``index`` file (written last), the files written with it:
    a file of the directory replaced, edited or added since is then refused by
    ``check_directory`` (a vocabulary of another build, a ranking of another run)."""
    files = directory_files(directory, index)
    record_made_from(Path(directory) / index, {"files of the directory": files})


def check_directory(directory: str | Path, index: str, maker: str) -> None:
    """Refuse a directory whose ``index`` or other files are not those ``record_directory``
    recorded, or whose record is missing (``maker``: the command to rerun)."""
    index_path = Path(directory) / index
    recorded = made_from_path(index_path).is_file()  # without: refused below, nothing digested
    inputs = {"files of the directory": directory_files(directory, index)} if recorded else {}
    check_made_from(index_path, inputs, maker=maker)


def check_made_from(
    artefact: str | Path, inputs: Mapping[str, str] | None = None, *,
    maker: str = "the command that wrote it", external: bool = False,
) -> None:  # fmt: skip
    """Refuse ``artefact`` (InputError) when its bytes are not those recorded when it was
    written (another split's array copied over it, rows reordered inside it, a rerun of its
    maker since), or when an input it is read with has another digest than the one it was
    made from. An artefact without its record is refused, naming ``maker`` to rerun (made
    before records, or its record left behind by a copy), unless ``external``: a tool that
    reads files made outside mlmm (a Moses n-best list or weights of another decoder) then
    reads it as is, its own format checks still applying."""
    from mlmm.errors import InputError

    artefact, record_path = Path(artefact), made_from_path(artefact)
    if not record_path.is_file():
        if external or not artefact.is_file():
            return  # a missing artefact: its reader names it
        raise InputError(
            artefact, f"its record {record_path.name} beside it (what it was made from)",
            f"none: made before records, or copied without it; rerun {maker}",
        )  # fmt: skip
    from mlmm.io import read_json_object

    record = read_json_object(record_path, ("sha256", "inputs"), "a record written by mlmm")
    try:
        recorded, made_from = record["sha256"], dict(record["inputs"])
    except (ValueError, TypeError) as exc:
        raise InputError(record_path, "a record written by mlmm", f"unreadable ({exc})") from None
    _compare(artefact, record_path, recorded, made_from, inputs or {})


def _compare(artefact: Path, record_path: Path, recorded: str, made_from: Mapping[str, str],
             inputs: Mapping[str, str]) -> None:  # fmt: skip
    """Refuse ``artefact`` whose bytes are not ``recorded`` or that was made from another
    input than one of ``inputs`` (the record read from ``record_path``)."""
    from mlmm.errors import InputError

    if sha256_file(artefact) != recorded:
        raise InputError(
            artefact, f"the bytes it was written with ({record_path.name})",
            "other bytes: replaced or edited since (another split's copy, reordered rows?)",
        )  # fmt: skip
    for name, digest in inputs.items():
        if name in made_from and made_from[name] != digest:
            raise InputError(
                artefact, f"an artefact made from the {name} it is read with",
                f"one made from another {name} ({record_path.name})",
            )  # fmt: skip


# ------------------------------------------------------------------------------------------
# artefacts whose record is inside the visible sidecar written with them (image feature
# arrays): copying the artefact with its sidecar copies the record, and an artefact read
# without it is refused, never read as is

SIDECAR_RECORD = ("sha256", "made_from")


def made_from_record(artefact: str | Path, inputs: Mapping[str, str]) -> dict[str, Any]:
    """The keys a finished ``artefact``'s sidecar carries as its record: the sha256 of its
    bytes and the digests of the inputs it was made from (read by
    ``check_sidecar_made_from``)."""
    return {"sha256": sha256_file(artefact), "made_from": dict(inputs)}


def check_sidecar_made_from(
    artefact: str | Path, sidecar: str | Path, inputs: Mapping[str, str], expected: str
) -> None:
    """Refuse ``artefact`` (InputError naming it, ``expected`` and what was found) without its
    ``sidecar`` or whose sidecar lacks the record of ``made_from_record`` or the digest of
    one of ``inputs``; then as ``check_made_from``: bytes other than the recorded ones, or
    made from another input than one of ``inputs``, are refused."""
    from mlmm.errors import InputError
    from mlmm.io import read_json

    artefact, sidecar = Path(artefact), Path(sidecar)
    if not sidecar.is_file():
        raise InputError(artefact, expected, f"no {sidecar.name} beside it")
    record = read_json(sidecar, expected)
    if not isinstance(record, dict):
        raise InputError(
            artefact, expected, f"{sidecar.name} holding a JSON {type(record).__name__}"
        )
    missing = [key for key in SIDECAR_RECORD if key not in record]
    if missing:
        keys = " or ".join(repr(key) for key in missing)
        raise InputError(artefact, expected, f"{sidecar.name} without {keys} (no record)")
    recorded, made_from = record["sha256"], record["made_from"]
    if not isinstance(recorded, str) or not isinstance(made_from, dict):
        raise InputError(
            sidecar, "'sha256' a hex digest and 'made_from' a mapping of digests",
            f"{type(recorded).__name__} and {type(made_from).__name__}",
        )  # fmt: skip
    unrecorded = [name for name in inputs if name not in made_from]
    if unrecorded:
        raise InputError(artefact, expected,
                         f"{sidecar.name} without the digest of its {unrecorded[0]}")  # fmt: skip
    _compare(artefact, sidecar, recorded, made_from, inputs)


# ------------------------------------------------------------------------------------------
# artefacts that carry their record inside them (torch checkpoints: a key of the saved dict;
# npz archives: an entry), written in the same write: no copy leaves it behind, no interrupted
# write leaves the artefact without it

RECORD_KEY = "made_from"


def inside_record(
    content: Mapping[str, Any], run: Mapping[str, Any], inputs: Mapping[str, str]
) -> dict[str, Any]:
    """The record an artefact carries under ``RECORD_KEY``: the digest of its ``content``
    (everything it holds but the record), which ``run`` it is (variant and seed, lambda and
    settings: what its readers ask for) and the digests of the ``inputs`` it was made from."""
    return {"content": value_digest(dict(content)), "run": dict(run), "inputs": dict(inputs)}


def check_inside_record(
    artefact: str | Path, record: Any, content: Callable[[], Mapping[str, Any]], *,
    maker: str, run: Mapping[str, Any] | None = None, asked: str = "",
    inputs: Mapping[str, str] | None = None,
) -> None:  # fmt: skip
    """Refuse ``artefact`` (InputError naming it and the record's key, expected vs found)
    whose ``record`` (read from it, None when it has none) is missing (an artefact of an
    earlier version: ``maker`` says what to rerun), is of another run than ``run`` (what the
    reader asked for, ``asked`` saying whence: another variant's model, another lambda's
    codes), was made from another input than one of ``inputs``, or whose ``content()`` has
    another digest than the recorded one (edited since). The content is digested only when
    the file is not as the write layer wrote it (``mlmm.io.unchanged_since_written``): a read
    in place hashes nothing more than before."""
    from mlmm.errors import InputError
    from mlmm.io import unchanged_since_written

    artefact = Path(artefact)
    if record is None:
        raise InputError(
            artefact, f"its record (key '{RECORD_KEY}': what it was made from, which run it is)",
            f"none: made by an earlier version or outside mlmm; rerun {maker}",
        )  # fmt: skip
    if not (
        isinstance(record, dict)
        and all(isinstance(record.get(key), dict) for key in ("run", "inputs"))
        and isinstance(record.get("content"), str)
    ):
        raise InputError(
            artefact, "a record with 'content' (a digest), 'run' and 'inputs' (mappings)",
            f"{type(record).__name__} {str(record)[:80]!r}", key=RECORD_KEY,
        )  # fmt: skip
    for name, expected in (run or {}).items():
        found = record["run"].get(name)
        if found != expected:
            raise InputError(
                artefact, f"{name} {expected!r}{f' ({asked})' if asked else ''}",
                f"{name} {found!r}: another run's artefact", key=f"{RECORD_KEY}.run.{name}",
            )  # fmt: skip
    for name, digest in (inputs or {}).items():
        if record["inputs"].get(name, digest) != digest:
            raise InputError(
                artefact, f"an artefact made from the {name} it is read with",
                f"one made from another {name}", key=f"{RECORD_KEY}.inputs",
            )  # fmt: skip
    if not unchanged_since_written(artefact) and value_digest(dict(content())) != record["content"]:
        raise InputError(
            artefact, "the content it was written with",
            "other content: edited or replaced since", key=f"{RECORD_KEY}.content",
        )  # fmt: skip


def npz_record(record: Mapping[str, Any]) -> np.ndarray:
    """An inside record as an npz entry: its JSON text, a 0-d string array (no pickle)."""
    return np.array(json.dumps(record, sort_keys=True))


def read_npz_record(archive: Mapping[str, np.ndarray], where: str | Path) -> Any:
    """The record of an npz archive (``npz_record``), None when it has none."""
    if RECORD_KEY not in archive:
        return None
    from mlmm.io import parse_json

    return parse_json(str(archive[RECORD_KEY][()]), where, f"the record ('{RECORD_KEY}')")
