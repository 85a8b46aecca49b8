"""Published precomputed image features as a source: the arrays that ship with a data set's
release, read in place of extracting features from the images (docs/data.md).

The Multi30K / WMT multimodal releases ship ResNet-50 average-pool features per split as
``<split>-resnet50-avgpool.npy`` (row i = image i of ``image_splits/<split>.txt``; float16 or
float32, 2048 columns), which Kádár et al. 2018 trained on (mulisera's ``data.py`` reads
``data/imgfeats/<split>-resnet50-avgpool.npy``). An array is checked when it is read: one row
per image of the split list, the backbone's width, finite rows with usable norms. It is then
written where the extraction would write it (``<out>.npy`` with the ``.json`` sidecar and the
``.txt`` list copy), so every consumer reads it unchanged and records where it came from.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np

from mlmm.arrays import check_feature_rows
from mlmm.errors import InputError
from mlmm.features.extraction import write_features
from mlmm.io import read_lines, read_npy
from mlmm.origin import FEATURES
from mlmm.provenance import provenance

# backbone -> (file name pattern of a release, width, what the features are)
PUBLISHED = {
    "resnet50": (
        "{split}-resnet50-avgpool.npy", 2048, "ResNet-50 average pool, published features"
    ),
}
DTYPES = ("float16", "float32")


def published_file(directory: str | Path, backbone: str, split: str) -> Path:
    """The release's file of ``split`` for ``backbone`` under ``directory``."""
    if backbone not in PUBLISHED:
        raise InputError("backbone", f"one with published features ({', '.join(PUBLISHED)})",
                         repr(backbone))  # fmt: skip
    return Path(directory) / PUBLISHED[backbone][0].format(split=split)


def read_published(path: str | Path, names: list[str], backbone: str) -> np.ndarray:
    """The published array at ``path`` as float32, checked: float16 or float32, one row per
    name of the split list, the backbone's width, finite rows with usable norms."""
    array = read_npy(path, f"a published {backbone} feature array", mmap_mode="r")
    if array.dtype.name not in DTYPES:
        raise InputError(path, "a float16 or float32 array", f"dtype {array.dtype}")
    dim = PUBLISHED[backbone][1]
    if array.ndim != 2 or array.shape != (len(names), dim):
        raise InputError(
            path, f"shape ({len(names)}, {dim}): one row per image of the split list",
            f"shape {array.shape}",
        )  # fmt: skip
    return check_feature_rows(array, path)


def import_published(directory: str | Path, backbone: str, split: str | Path, out: str | Path
                     ) -> dict:  # fmt: skip
    """Read the published array of the split list ``split`` (``<stem>.txt``) from
    ``directory`` and write ``out`` (.npy) with its sidecar .json and list copy .txt, as
    ``mlmm features`` writes them. Returns the sidecar."""
    split = Path(split)
    names = read_lines(split)
    source = published_file(directory, backbone, split.stem)
    features = read_published(source, names, backbone)
    sidecar = {
        "backbone": backbone,
        "dim": int(features.shape[1]),
        "dtype": "float32",
        "n": len(names),
        "origin": PUBLISHED[backbone][2],
        "published_file": str(source),
        "published_dtype": str(read_npy(source, mmap_mode="r").dtype),
        "image_list": str(split),
        "skipped": [],
        # the release's arrays of Multi30K's images (its split list)
        "provenance": provenance({"backbone": backbone, "published": str(directory),
                                  "split": str(split)}, data=("multi30k", FEATURES)),  # fmt: skip
    }
    return write_features(out, features, names, split, sidecar)
