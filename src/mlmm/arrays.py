"""Checks on image feature arrays that would otherwise give plausible numbers from wrong input.

A feature array is read by row number: row i must be image i of the split's list. Extraction
(``mlmm features``) writes a copy of the list it read beside the array (``<split>.txt``), so a
reader compares that copy with the split's list: swapped val/test arrays or reordered rows are
refused instead of scored. The sidecar written with the array (``<split>.json``) carries its
record: the sha256 of its bytes and the digests of the image list and split it was made from
(``check_feature_record``); an array without it, or whose bytes or split are not the recorded
ones, is refused. The rows themselves must carry a direction: an all-zero row (or one
so tiny or huge that float32 similarities underflow or overflow) has no cosine with anything,
so every image ties and the ranking is decided by index order; a complex array would silently
lose its imaginary part; a zero-width array has no similarity at all.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

import numpy as np

from mlmm.errors import InputError

# Row norms outside this range lose precision in float32 similarities (squares underflow
# below ~1e-19 and overflow above ~1e19); real CNN features lie near 1 to 1e3.
NORM_RANGE = (1e-15, 1e15)
ROWS_PER_BLOCK = 4096


def check_feature_rows(array: np.ndarray, where: str | Path) -> np.ndarray:
    """``array`` as float32 if it is a real (n, d>0) matrix of finite rows with usable norms;
    otherwise an InputError naming the first offending row."""
    if np.iscomplexobj(array):
        raise InputError(where, "a real-valued array", f"{array.dtype} values")
    if array.dtype.kind not in "fiub":
        raise InputError(where, "a numeric array", f"dtype {array.dtype}")
    if array.ndim != 2 or array.shape[1] == 0:
        raise InputError(where, "a 2-d array with at least one column", f"shape {array.shape}")
    # float64 in blocks of rows: exact norms for tiny/huge rows without a float64 copy of the
    # whole array (COCO's 113K x 2048 training features would take 1.9 GB)
    finite = np.empty(len(array), dtype=bool)
    norms = np.empty(len(array), dtype=np.float64)
    for start in range(0, len(array), ROWS_PER_BLOCK):
        block = np.asarray(array[start : start + ROWS_PER_BLOCK], dtype=np.float64)
        finite[start : start + len(block)] = np.isfinite(block).all(axis=1)
        norms[start : start + len(block)] = np.linalg.norm(block, axis=1)
    if not finite.all():
        bad = np.flatnonzero(~finite)
        raise InputError(
            where,
            "finite values in every row",
            f"NaN or inf in {len(bad)} of {len(array)} rows (first: row {int(bad[0])})",
        )
    low, high = NORM_RANGE
    zero = np.flatnonzero(norms == 0)
    if len(zero):
        raise InputError(
            where,
            "rows with a non-zero norm (an all-zero row ties with every image)",
            f"{len(zero)} all-zero row(s) of {len(array)} (first: row {int(zero[0])})",
        )
    odd = np.flatnonzero((norms < low) | (norms > high))
    if len(odd):
        first = int(odd[0])
        raise InputError(
            where,
            f"row norms within [{low:g}, {high:g}] (float32 similarities under- or overflow)",
            f"{len(odd)} row(s) outside it (first: row {first}, norm {norms[first]:.3g})",
        )
    return np.array(array, dtype=np.float32)  # a writable copy (not a read-only memmap)


def check_row_names(array_path: str | Path, names: Sequence[str], split: str) -> None:
    """The list copy beside ``array_path`` (``<split>.txt``, written by ``mlmm features``)
    must hold ``names`` (the split's image list) in order; an array without its copy is
    refused too, since its rows cannot be matched to images."""
    copy = Path(array_path).with_suffix(".txt")
    if not copy.is_file():
        raise InputError(
            copy, f"the image list copy written beside {Path(array_path).name}", "no such file"
        )
    from mlmm.io import read_lines

    rows = read_lines(copy)
    for number, (row, name) in enumerate(zip(rows, names, strict=False), start=1):
        if row != name:
            raise InputError(
                copy,
                f"{name!r} (row {number} of the {split} image list: rows in list order)",
                repr(row),
                line=number,
            )
    if len(rows) != len(names):
        raise InputError(copy, f"{len(names)} image names (the {split} list)", f"{len(rows)}")


def _record_expected(array_path: str | Path) -> str:
    """What a feature array is expected to have beside it, for a refusal naming the array."""
    sidecar = Path(array_path).with_suffix(".json").name
    return (
        f"the sidecar {sidecar} that `mlmm features` writes beside it, with the array's digest: "
        "copy it with the array, or rerun the features rule"
    )


def check_feature_record(array_path: str | Path, inputs: dict[str, str]) -> None:
    """Refuse the feature array at ``array_path`` without its sidecar ``<split>.json`` and the
    record inside it (``mlmm.fingerprint.made_from_record``), whose bytes are not the recorded
    ones (another split's array copied over it, rows reordered) or that was made from another
    image list or split than ``inputs`` (``mlmm.features.extraction.feature_inputs``) names."""
    from mlmm.fingerprint import check_sidecar_made_from

    array_path = Path(array_path)
    check_sidecar_made_from(
        array_path, array_path.with_suffix(".json"), inputs, _record_expected(array_path)
    )
