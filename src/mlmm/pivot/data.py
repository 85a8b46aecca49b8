"""Inputs of the pivot experiment: COCO captions and image features, TED talks, bag-of-words.

COCO root R in the Multi30K-compatible layout: image lists `R/data/task1/image_splits/<split>.txt`
and captions `R/data/task2/tok/<split>.lc.norm.tok.<k>.<lang>` (k = 1..5, line i = image i).
Captions are kept flat and image-major: caption c belongs to image c // 5, the layout of
mlmm.evaluation. Image features: `F/<backbone>/<split>.npy`, row i = image i of the list.

A Z1 training instance is one (image, caption) pair, five per image; the image rows are not
copied five times (118K x 5 x 4096 floats would be 9.6 GB) but indexed (RepeatedRows).
Image features are used as extracted, as the paper and the authors' CorrNet code do
(apsarath/CorrNet `Model/NNUtil.py` `denseloader` only casts the array); with
`standardise_images` (the demo's choice) they are standardised per dimension with the Z1 training
statistics, which keeps the squared error of the dense inputs on the scale of the word
reconstructions.
"""

from __future__ import annotations

import mmap
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import scipy.sparse as sp

from mlmm.arrays import check_feature_record
from mlmm.data.multi30k import image_list, task_dir
from mlmm.errors import InputError
from mlmm.fingerprint import value_digest
from mlmm.io import read_json, read_lines, read_npy
from mlmm.ted.bow import count_matrix, vocabulary
from mlmm.ted.corpus import find_topics, read_pair

CAPTIONS_PER_IMAGE = 5
TRAIN_SPLIT, TEST_SPLIT = "pivot_train", "mic"
# Z1's image features are rows of the COCO Karpathy splits' arrays (pivot_train is train minus
# the MIC images with coco.pivot_split karpathy, every image minus MIC with paper), so no image is
# extracted twice.
FEATURE_SPLITS = ("train", "val", "test")
# Feature rows copied or checked at a time: bounded temporaries at COCO's 113K x 4096.
ROW_CHUNK = 8192


def read_captions(root: str | Path, split: str, language: str) -> list[list[str]]:
    """The five tokenised captions of every image of `split`, flat and image-major."""
    n = len(image_list(root, split))
    per_file = []
    for k in range(1, CAPTIONS_PER_IMAGE + 1):
        path = task_dir(root, 2) / "tok" / f"{split}.lc.norm.tok.{k}.{language}"
        lines = read_lines(path)
        if len(lines) != n:
            raise InputError(path, f"{n} lines (one per image of {split})", f"{len(lines)}")
        per_file.append([line.split() for line in lines])
    return [per_file[k][i] for i in range(n) for k in range(CAPTIONS_PER_IMAGE)]


def read_features(features: str | Path, backbone: str, split: str, n_images: int) -> np.ndarray:
    """`features/backbone/split.npy` as an in-memory float32 array (one copy of the file's
    rows, the caller's to change), checked to have one row per image."""
    return np.array(_mapped_features(features, backbone, split, n_images), dtype=np.float32)


def _mapped_features(features: str | Path, backbone: str, split: str, n_images: int):
    """The array memory-mapped (read-only), checked to have one row per image: rows are read
    as they are copied, so a 113K x 4096 array is never held twice (docs/scale.md)."""
    path = Path(features) / backbone / f"{split}.npy"
    array = read_npy(path, f"image features of {split} (mlmm features)", mmap_mode="r")
    check_feature_record(path, {"split": value_digest(split)})
    if array.ndim != 2 or array.shape[0] != n_images:
        raise InputError(
            path, f"a 2-d array of {n_images} rows (images of {split})", f"shape {array.shape}"
        )
    return array


def pivot_train_features(
    coco_root: str | Path, features: str | Path, backbone: str, names: list[str]
) -> np.ndarray:
    """Rows of the Karpathy splits' features for the images ``names`` (of pivot_train).

    Only the arrays of splits that hold one of ``names`` are read: with the Karpathy Z1 that is
    train alone, with the paper's Z1 train, val and test.
    """
    where: dict[str, tuple[str, int]] = {}
    sizes: dict[str, int] = {}
    missing = list(names)
    for split in FEATURE_SPLITS:  # the next split's list is opened only for images still missing
        if not missing:
            break
        split_names = image_list(coco_root, split)
        sizes[split] = len(split_names)
        for i, name in enumerate(split_names):
            where.setdefault(name, (split, i))
        missing = [name for name in missing if name not in where]
    if missing:
        raise InputError(
            task_dir(coco_root, 1) / "image_splits",
            f"every image of {TRAIN_SPLIT} in {', '.join(FEATURE_SPLITS)}.txt",
            f"{len(missing)} missing, e.g. {missing[0]}",
        )
    needed = sorted({where[name][0] for name in names}, key=FEATURE_SPLITS.index)
    arrays = {s: _mapped_features(features, backbone, s, sizes[s]) for s in needed}
    out = np.empty((len(names), next(iter(arrays.values())).shape[1]), dtype=np.float32)
    for split, array in arrays.items():  # gathered ROW_CHUNK rows at a time (no second copy)
        rows = [row for row, name in enumerate(names) if where[name][0] == split]
        for a in range(0, len(rows), ROW_CHUNK):
            chunk = rows[a : a + ROW_CHUNK]
            out[chunk] = array[[where[names[row]][1] for row in chunk]]
            _release_pages(array)
    return out


def _release_pages(array: np.ndarray) -> None:
    """Drop a memory-mapped array's pages from this process's resident set once read (they
    stay in the page cache): the gather then holds one copy of Z1's features, not two."""
    mapping = getattr(array, "_mmap", None)
    if mapping is not None and hasattr(mmap, "MADV_DONTNEED"):
        mapping.madvise(mmap.MADV_DONTNEED)


class RepeatedRows:
    """Rows `base[index]` without materialising them: the dense view of Z1 for training."""

    def __init__(self, base: np.ndarray, index: np.ndarray) -> None:
        self.base, self.index = base, np.asarray(index, dtype=np.int64)
        self.shape = (len(self.index), base.shape[1])

    def __len__(self) -> int:
        return len(self.index)

    def __getitem__(self, rows) -> np.ndarray:
        return self.base[self.index[rows]]

    def mean(self, axis: int = 0) -> np.ndarray:
        if axis != 0:
            raise ValueError("only the mean over rows (axis 0) is defined")
        weights = np.bincount(self.index, minlength=len(self.base)).astype(np.float64)
        return (weights @ self.base) / len(self.index)


def held_out(n: int, fraction: float, maximum: int, seed: int) -> tuple[np.ndarray, np.ndarray]:
    """(fit, validation) row indices: a seeded `fraction` of n rows, at most `maximum`, at
    least one, held out for choosing lambda."""
    size = min(maximum, max(1, round(fraction * n)))
    if n - size < 2:
        raise InputError("training data", f"more than {size + 1} items to hold out {size}", str(n))
    order = np.random.default_rng(seed).permutation(n)
    return np.sort(order[size:]), np.sort(order[:size])


def standardiser(features: np.ndarray, chunk: int = 8192) -> tuple[np.ndarray, np.ndarray]:
    """Per-dimension mean and standard deviation (1 where a dimension is constant), summed in
    float64 over row chunks (no float64 copy of a 118K x 4096 array)."""
    total = np.zeros(features.shape[1])
    squares = np.zeros(features.shape[1])
    for a in range(0, len(features), chunk):
        block = features[a : a + chunk].astype(np.float64)
        total += block.sum(axis=0)
        squares += (block * block).sum(axis=0)
    mean = total / len(features)
    std = np.sqrt(np.maximum(squares / len(features) - mean * mean, 0.0))
    std[std < 1e-6] = 1.0
    return mean.astype(np.float32), std.astype(np.float32)


def standardise(features: np.ndarray, mean: np.ndarray, std: np.ndarray) -> np.ndarray:
    """(features - mean) / std, in place on the given (already copied) array."""
    features -= mean
    features /= std
    return features


@dataclass
class Z1:
    """Images with English captions: fit and validation portions."""

    images: np.ndarray  # fit images (n_fit, dim)
    captions: sp.csr_matrix  # their captions (n_fit * 5, |V_en|), image-major
    val_images: np.ndarray
    val_captions: sp.csr_matrix
    dropped: list[int]  # rows of the split list without features (NaN rows)

    def pairs(self) -> tuple[RepeatedRows, sp.csr_matrix]:
        """(image rows, caption rows): one training instance per caption."""
        index = np.arange(self.captions.shape[0]) // CAPTIONS_PER_IMAGE
        return RepeatedRows(self.images, index), self.captions


@dataclass
class Z2:
    """Talks in language X and their English side: fit and validation portions."""

    foreign: sp.csr_matrix
    english: sp.csr_matrix
    val_foreign: sp.csr_matrix
    val_english: sp.csr_matrix


@dataclass
class Mic:
    images: np.ndarray  # as Z1's (standardised with its statistics or raw)
    captions: sp.csr_matrix  # (n * 5, |V|) in the language of the caption vocabulary


@dataclass
class PivotData:
    """Everything one run needs, in the vocabularies it was built with."""

    z1: Z1
    z2: Z2 | None
    mic: Mic
    language: str  # caption language of the test: en (direct) or fr/de
    words: dict[str, list[str]]  # vocabulary per text view
    mean: np.ndarray
    std: np.ndarray

    def sizes(self) -> dict:
        out = {
            "z1_fit_images": len(self.z1.images),
            "z1_fit_captions": self.z1.captions.shape[0],
            "z1_validation_images": len(self.z1.val_images),
            "z1_dropped_images": len(self.z1.dropped),
            "mic_images": len(self.mic.images),
            "mic_captions": self.mic.captions.shape[0],
            "vocabulary": {view: len(w) for view, w in self.words.items()},
        }
        if self.z2 is not None:
            out["z2_fit_talks"] = self.z2.foreign.shape[0]
            out["z2_validation_talks"] = self.z2.val_foreign.shape[0]
        return out


def ted_corpus_root(given: str | Path) -> Path:
    """A ted-cldc directory, or the TED stage's ``index.json`` naming it (rule ted_corpus)."""
    given = Path(given)
    if given.is_file():
        try:
            return Path(read_json(given)["root"])
        except (ValueError, KeyError, TypeError):
            raise InputError(
                given, "the TED stage's index.json with a 'root'", "another file"
            ) from None
    return given


def load(
    coco_root: str | Path,
    features: str | Path,
    backbone: str,
    ted_root: str | Path | None,
    language: str | None,
    min_count: int,
    validation_fraction: float,
    validation_max: int,
    seed: int,
    standardise_images: bool = False,
) -> PivotData:
    """Read and split Z1, Z2 (when `ted_root` is given) and the MIC test set.

    The English vocabulary is built from the Z1 captions and, with Z2, the English talks; the
    vocabulary of X from the X talks alone (the test captions in X never shape it). Without
    `language` (the En-Image CorrNet) the test captions are the English MIC captions.
    `standardise_images`: z-score the image features with the Z1 fit statistics (else raw, as
    the paper; mean 0 and std 1 are recorded then).
    """
    names = image_list(coco_root, TRAIN_SPLIT)
    feats = pivot_train_features(coco_root, features, backbone, names)
    captions = read_captions(coco_root, TRAIN_SPLIT, "en")
    dropped = [a + int(i) for a in range(0, len(feats), ROW_CHUNK)  # no N x 4096 bool array
               for i in np.flatnonzero(~np.isfinite(feats[a : a + ROW_CHUNK]).all(axis=1))]
    usable = np.setdiff1d(np.arange(len(names)), dropped)
    fit, val = held_out(len(usable), validation_fraction, validation_max, seed)
    fit, val = usable[fit], usable[val]  # both ascending (sorted indices into a sorted array)

    def caption_rows(images: np.ndarray) -> list[int]:
        return [CAPTIONS_PER_IMAGE * i + k for i in images for k in range(CAPTIONS_PER_IMAGE)]

    english_docs = [captions[c] for c in caption_rows(fit)]
    z2_sides = None
    if ted_root is not None:
        if language is None:
            raise ValueError("a TED root needs a language")
        root = ted_corpus_root(ted_root)  # its topics as they come (labels are not used here)
        foreign, english = read_pair(root, language, "train", find_topics(root, [language], None))
        z2_sides = (foreign.tokens, english.tokens)
        english_docs += english.tokens
    words = {"en": vocabulary(english_docs, min_count)[0]}
    if z2_sides is not None:
        words[language] = vocabulary(z2_sides[0], min_count)[0]
    for view, vocab in words.items():
        if not vocab:
            raise InputError(
                f"{view} training text",
                f"words seen at least {min_count} times",
                "none (lower min_count)",
            )

    # one copy of Z1's features (1.9 GB at the paper's size): the held-out rows are copied out,
    # then the fit rows are moved to the front in place, ROW_CHUNK at a time (`fit` ascends, so
    # every row is read before anything is written over it), and standardised in place there
    val_images = feats[val]
    for a in range(0, len(fit), ROW_CHUNK):
        rows = fit[a : a + ROW_CHUNK]
        feats[a : a + len(rows)] = feats[rows]
    fit_images = feats[: len(fit)]
    del feats
    if standardise_images:
        mean, std = standardiser(fit_images)
    else:
        mean = np.zeros(fit_images.shape[1], dtype=np.float32)
        std = np.ones(fit_images.shape[1], dtype=np.float32)
    en = words["en"]
    z1 = Z1(
        images=standardise(fit_images, mean, std),
        captions=count_matrix([captions[c] for c in caption_rows(fit)], en),
        val_images=standardise(val_images, mean, std),
        val_captions=count_matrix([captions[c] for c in caption_rows(val)], en),
        dropped=dropped,
    )
    z2 = None
    if z2_sides is not None:
        talks_fit, talks_val = held_out(len(z2_sides[0]), validation_fraction, validation_max, seed)
        x_matrix = count_matrix(z2_sides[0], words[language])
        en_matrix = count_matrix(z2_sides[1], en)
        z2 = Z2(
            x_matrix[talks_fit], en_matrix[talks_fit], x_matrix[talks_val], en_matrix[talks_val]
        )

    test_language = language or "en"
    mic_names = image_list(coco_root, TEST_SPLIT)
    mic_feats = read_features(features, backbone, TEST_SPLIT, len(mic_names))
    bad = np.flatnonzero(~np.isfinite(mic_feats).all(axis=1))
    if len(bad):
        raise InputError(
            Path(features) / backbone / f"{TEST_SPLIT}.npy",
            "features for every test image",
            f"NaN rows {bad[:10].tolist()}",
        )
    mic = Mic(
        images=standardise(mic_feats, mean, std),
        captions=count_matrix(
            read_captions(coco_root, TEST_SPLIT, test_language), words[test_language]
        ),
    )
    return PivotData(z1, z2, mic, test_language, words, mean, std)
