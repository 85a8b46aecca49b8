"""Readers for the upstream Multi30K layout (github.com/multi30k/dataset).

``root`` is the directory holding ``data/task1`` and ``data/task2``. Task 1 (the translation
portion) has one caption per image in en/de/fr/cs; task 2 (the comparable portion) has five
independent captions per image in en and de. Line i of every caption file is image i of the
split's image list; a count mismatch is an InputError naming the file.
"""

from __future__ import annotations

from pathlib import Path

from mlmm.degenerate import unique_ids
from mlmm.errors import InputError
from mlmm.io import read_lines

TRANSLATION_LANGUAGES = ("en", "de", "fr", "cs")
COMPARABLE_LANGUAGES = ("en", "de")
# Multi30K languages with translations only; every other language (ja of the prepared MS-COCO
# layout, mlmm.data.coco) has task2-style independent captions.
TRANSLATION_ONLY = tuple(sorted(set(TRANSLATION_LANGUAGES) - set(COMPARABLE_LANGUAGES)))
CAPTIONS_PER_IMAGE = 5
# task1 split name -> task2 file prefix and task2 image list name; any other split s (the
# prepared MS-COCO layout) is (s, "s_images").
TASK2_SPLITS = {
    "train": ("train", "train_images"),
    "val": ("val", "val_images"),
    "test_2016_flickr": ("test_2016", "test_2016_images"),
}


def task_dir(root: str | Path, task: int) -> Path:
    return Path(root) / "data" / f"task{task}"


def image_list(root: str | Path, split: str) -> list[str]:
    """Image file names of a split, in the order every caption file and feature array follows."""
    path = task_dir(root, 1) / "image_splits" / f"{split}.txt"
    names = read_lines(path)
    if not names:
        raise InputError(path, "at least one image name", "an empty list")
    unique_ids(names, path, "image name")  # a repeated image would be scored twice
    return names


def _checked(path: Path, expected: int) -> list[list[str]]:
    lines = read_lines(path)
    if len(lines) != expected:
        raise InputError(path, f"{expected} lines (one per image of the split)", f"{len(lines)}")
    return [line.split() for line in lines]


def translation_captions(root: str | Path, split: str, language: str) -> list[list[str]]:
    """Tokenised lowercased task1 captions: one token list per image."""
    n_images = len(image_list(root, split))
    path = task_dir(root, 1) / "tok" / f"{split}.lc.norm.tok.{language}"
    return _checked(path, n_images)


def comparable_captions(root: str | Path, split: str, language: str) -> list[list[list[str]]]:
    """Tokenised lowercased task2 captions: for every image, its five token lists."""
    prefix, list_name = TASK2_SPLITS.get(split, (split, f"{split}_images"))
    task2_list = task_dir(root, 2) / "image_splits" / f"{list_name}.txt"
    n_images = len(read_lines(task2_list))
    per_annotator = [
        _checked(task_dir(root, 2) / "tok" / f"{prefix}.lc.norm.tok.{k}.{language}", n_images)
        for k in range(1, CAPTIONS_PER_IMAGE + 1)
    ]
    return [list(captions) for captions in zip(*per_annotator, strict=True)]
