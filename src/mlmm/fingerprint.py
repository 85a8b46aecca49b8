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
from collections.abc import Iterable, Mapping
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
# names; tests/test_artefact_provenance.py damages every kind and expects its reader to refuse.
ARTEFACT_KINDS = {
    # inside the sidecar <split>.json written with the array (made_from_record; read with
    # check_sidecar_made_from, mlmm.arrays.check_feature_record): bytes, image list in order,
    # split. A copy of the array with its sidecar carries it; an array without it is refused.
    "image feature array (mlmm features)": ("image list", "split"),
    # .codes.npz.made-from.json: bytes, bag of words (mlmm.ted.experiment.codes_file)
    "TED CorrNet codes (ted-train)": ("bag of words",),
    # model.pt's record: bytes, the digests of mlmm.retrieval.train.Run.fingerprint
    # (mlmm.retrieval.api.load_trained: nbest-features --feature NAME=KIND:MODEL)
    "retrieval model (train-retrieval)": (
        "config", "train features", "validation features", "captions", "vocabularies",
        "initial weights (word vectors)", "alignment lexicons",
    ),
    # .NAME.made-from.json: bytes, training data (mlmm.nmt.model.load_translator)
    "NMT model (train-nmt)": ("training data",),
    # .NAME.made-from.json: bytes, source text (mlmm.nbest.read_nbest)
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
    # .NAME.made-from.json: bytes, the tuning n-best list and references (read_weights: rerank)
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


def check_directory(directory: str | Path, index: str) -> None:
    """Refuse a directory whose ``index`` or other files are not those ``record_directory``
    recorded (a directory without a record is read as is)."""
    index_path = Path(directory) / index
    if made_from_path(index_path).is_file():
        check_made_from(index_path, {"files of the directory": directory_files(directory, index)})


def check_made_from(artefact: str | Path, inputs: Mapping[str, str] | None = None) -> None:
    """Refuse ``artefact`` (InputError) when its bytes are not those recorded when it was
    written (another split's array copied over it, rows reordered inside it, a rerun of its
    maker since), or when an input it is read with has another digest than the one it was
    made from. An artefact without a record (made by hand, or before records) is read as is:
    the readers' own checks (row counts, list copies) still apply."""
    from mlmm.errors import InputError

    artefact, record_path = Path(artefact), made_from_path(artefact)
    if not record_path.is_file():
        return
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
