"""Write a demo world in the upstream Multi30K layout, with its images, STS pairs and MUSE lists.

Everything is drawn from numpy generators seeded by (seed, stream, index), so a world is the
same bytes for a seed (JPEG quality fixed, gzip without timestamps). The world is built in a
temporary directory beside OUT and renamed into place only when complete.
"""

from __future__ import annotations

import gzip
import io
from collections.abc import Callable
from pathlib import Path

import numpy as np

from mlmm.demo.grammar import LANGUAGES, dictionary, raw, sample_content, tok, tokens
from mlmm.demo.scenes import render, sample_scene
from mlmm.demo.sts import sample_pairs
from mlmm.errors import InputError
from mlmm.io import (
    claim_output_dir,
    discard_build,
    forcing,
    mark_output_dir,
    replace_dir,
    sha256_file,
    temp_dir_beside,
    write_bytes,
    write_text,
)
from mlmm.logs import progress

MIN_IMAGES = 30
CAPTIONS = 5  # task2 captions per image and language
TASK2_LANGUAGES = ("en", "de")
# task1 split -> task2 split of the same images
SPLITS = {"train": "train", "val": "val", "test_2016_flickr": "test_2016"}
STS_PAIRS = {"2014": (250, 0), "2015": (300, 60)}  # year -> (pairs, of which unscored)
JPEG_QUALITY = 90
# Hashes of everything written, so that only an unedited earlier world is ever replaced
MARKER = ".mlmm-demo-world.sha256"
_SCENE, _CAPTION, _SPLIT, _STS = range(4)  # random streams


def split_sizes(images: int) -> dict[str, int]:
    """Validation and test get 1/12 of the images each (100 of the default 1200), at least 5."""
    held_out = max(5, round(images / 12))
    return {"train": images - 2 * held_out, "val": held_out, "test_2016_flickr": held_out}


def generate_world(out: Path, seed: int, images: int, force: bool = False) -> None:
    """Generate the demo world under ``out`` (replacing an unedited earlier world there, or
    anything with ``force``)."""
    out = Path(out)
    if images < MIN_IMAGES:
        raise InputError("--images", f"at least {MIN_IMAGES} images", str(images))
    if seed < 0:
        raise InputError("--seed", "a non-negative integer", str(seed))
    replace_directory(
        out, "earlier demo world", MARKER, lambda tmp: _write_world(tmp, seed, images), force
    )


def replace_directory(
    out: Path, what: str, marker: str, write: Callable[[Path], None], force: bool = False
) -> None:
    """``write`` a fresh directory beside ``out``, then rename it onto ``out``.

    ``out`` may be missing, empty, or an unedited earlier output (``what``, recognised by the
    hashes ``mlmm.io.mark_output_dir`` leaves in ``marker``); anything else needs ``force``, so a
    mistyped OUT or an edited world is never deleted silently.
    """
    out = Path(out)
    claim_output_dir(out, what, marker, force)
    out.parent.mkdir(parents=True, exist_ok=True)
    with forcing(force):
        tmp = temp_dir_beside(out)
        try:
            write(tmp)
            mark_output_dir(tmp, marker)
            replace_dir(tmp, out)
        finally:
            discard_build(tmp)


def _write_world(root: Path, seed: int, images: int) -> None:
    names = [f"{i:06d}.jpg" for i in range(images)]
    (root / "images").mkdir()
    task1: dict[str, list[list[str]]] = {lang: [] for lang in LANGUAGES}  # image -> tokens
    task2: dict[str, list[list[list[str]]]] = {lang: [] for lang in TASK2_LANGUAGES}
    for i in progress(range(images), desc="demo world", unit="image"):
        rng = np.random.default_rng([seed, _SCENE, i])
        scene = sample_scene(rng)
        buffer = io.BytesIO()
        render(scene, rng).save(buffer, "JPEG", quality=JPEG_QUALITY)
        write_bytes(root / "images" / names[i], buffer.getvalue())
        rng = np.random.default_rng([seed, _CAPTION, i])
        annotators = {lang: [sample_content(scene, rng) for _ in range(CAPTIONS)] for lang in task2}
        for lang, contents in annotators.items():
            task2[lang].append([tokens(c, lang) for c in contents])
        # As upstream, the task1 English caption is one of the five task2 English ones, and
        # the other languages translate it.
        translated = annotators["en"][int(rng.integers(CAPTIONS))]
        for lang in LANGUAGES:
            task1[lang].append(tokens(translated, lang))

    order = np.random.default_rng([seed, _SPLIT]).permutation(images)
    start = 0
    data = root / "data"
    for split, size in split_sizes(images).items():
        members = [int(i) for i in order[start : start + size]]
        start += size
        split2 = SPLITS[split]
        _text(data / f"task1/image_splits/{split}.txt", [names[i] for i in members])
        _text(data / f"task2/image_splits/{split2}_images.txt", [names[i] for i in members])
        for lang in LANGUAGES:
            lines = [task1[lang][i] for i in members]
            _gzip(data / f"task1/raw/{split}.{lang}.gz", [raw(t, lang) for t in lines])
            _text(data / f"task1/tok/{split}.lc.norm.tok.{lang}", [tok(t) for t in lines])
        for lang in TASK2_LANGUAGES:
            for k in range(CAPTIONS):
                lines = [task2[lang][i][k] for i in members]
                _gzip(data / f"task2/raw/{split2}.{k + 1}.{lang}.gz", [raw(t, lang) for t in lines])
                _text(
                    data / f"task2/tok/{split2}.lc.norm.tok.{k + 1}.{lang}", [tok(t) for t in lines]
                )

    for year, (n, unscored) in STS_PAIRS.items():
        rng = np.random.default_rng([seed, _STS, int(year)])
        pairs = sample_pairs(rng, n)
        blank = set(rng.choice(n, size=unscored, replace=False).tolist())
        fmt = "{:.1f}" if year == "2014" else "{:.2f}"  # as the real files
        _text(root / f"sts/{year}/STS.input.images.txt", [f"{a}\t{b}" for a, b, _ in pairs])
        gold = ["" if j in blank else fmt.format(s) for j, (_, _, s) in enumerate(pairs)]
        _text(root / f"sts/{year}/STS.gs.images.txt", gold)
    for lang in LANGUAGES[1:]:
        _text(root / f"muse/en-{lang}.txt", [f"{e} {t}" for e, t in dictionary(lang)])

    manifest = [
        f"{sha256_file(path)}  {path.relative_to(root).as_posix()}"
        for path in sorted(data.rglob("*"))
        if path.is_file()
    ]
    _text(root / "MANIFEST.sha256", manifest)


def _text(path: Path, lines: list[str]) -> None:
    write_text(path, "".join(f"{line}\n" for line in lines))


def _gzip(path: Path, lines: list[str]) -> None:
    """Gzip without file name or timestamp in the header, so the bytes depend on the text only."""
    text = "".join(f"{line}\n" for line in lines).encode("utf-8")
    write_bytes(path, gzip.compress(text, compresslevel=9, mtime=0))
