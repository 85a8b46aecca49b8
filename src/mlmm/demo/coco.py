"""Write a demo world in the MS-COCO layouts: Karpathy's split file, STAIR Captions, MIC, TED.

What AME (Tables 3-4: COCO en/ja) and Bridge CorrNet (Table 5: pivot retrieval) read, in the
real on-disk formats so that the real readers run on it:

- ``images/{train2014,val2014}/COCO_<folder>_<cocoid:012d>.jpg``: rendered scenes;
- ``annotations/dataset_coco.json``: Karpathy's split file, 5 English captions per image (a few
  have 6 or 7, as in COCO); test/val/restval images are in val2014, train ones in train2014;
- ``annotations/stair_captions_v1.2_{train,val}.json``: STAIR Captions (COCO caption format),
  5 Japanese captions per image from annotators of their own (not translations);
- ``mic/``: the MIC test set of Rajendran et al. (2016): test images and their 5 English
  captions with French and German translations (same content), 5 lines per image;
- ``ted/``: English-French and English-German talks in the TED CLDC layout, made of captions of
  other scenes, so the pivot language shares its vocabulary with the COCO captions;
- ``muse/en-ja.txt`` and ``MANIFEST.sha256`` (every other file), written last.

Random streams differ from the Multi30K world's, so the scenes differ; the same seed gives the
same bytes, and the world is renamed into place only when complete.
"""

from __future__ import annotations

import io
import json
import math
from pathlib import Path

import numpy as np

from mlmm.demo.grammar import Content, dictionary, japanese, raw, sample_content, tokens
from mlmm.demo.scenes import SIZE, Scene, render, sample_scene
from mlmm.demo.world import JPEG_QUALITY, replace_directory
from mlmm.errors import InputError
from mlmm.io import sha256_file, write_bytes, write_text
from mlmm.logs import progress
from mlmm.ted import PIVOT, TOPICS
from mlmm.ted.demo import make_pair_dirs, write_everywhere

MIN_IMAGES = 60
# A test-heavy world (split_sizes' test) keeps at least the smallest world's other images
MIN_OTHER_IMAGES = MIN_IMAGES - 5 * (MIN_IMAGES // 30)
CAPTIONS = 5
EXTRA_CAPTIONS = {5: 0.96, 6: 0.03, 7: 0.01}  # English captions per image, as COCO's few extras
MIC_FRACTION = 0.4  # of the test images (100 of the default 250)
MIC_LANGUAGES = ("en", "fr", "de")
TED_LANGUAGES = ("fr", "de")
TED_SENTENCES = (8, 15)  # captions per talk, inclusive
MAX_COCOID = 581929  # ids are drawn like real ones: sparse, below COCO 2014's largest
MAX_SENTID = 829717
# Random streams, apart from the Multi30K world's 0-3
_SCENE, _EN, _JA, _SPLIT, _MIC, _TED_TALK, _TED_PAIR = range(10, 17)


def split_sizes(images: int, test: int | None = None) -> dict[str, int]:
    """Karpathy-like splits scaled from 1500 images: test 250 (5 folds of 50), val 100,
    restval 150, train the rest; ``mic`` (a subset of test) 100.

    ``test``: the test split's size instead of a sixth (a multiple of the 5 folds), the other
    splits sharing the rest as above (val 8 %, restval 12 %, train 80 %): the paper miniature's
    test-heavy world, whose folds and MIC set pass the largest K scored at little feature cost."""
    if images < MIN_IMAGES:
        raise InputError("--images", f"at least {MIN_IMAGES} images", str(images))
    if test is None:
        test = 5 * (images // 30)
        val, restval = round(images / 15), round(images / 10)
    else:
        rest = images - test
        if test < 5 or test % 5 or rest < MIN_OTHER_IMAGES:
            raise InputError(
                "--coco-test-images",
                f"a multiple of 5 (the folds) leaving at least {MIN_OTHER_IMAGES} of the "
                f"{images} images to the other splits",
                str(test),
            )
        # 1/15 and 1/10 of a default world are 8 % and 12 % of its 5/6 that are not test
        val, restval = round(rest * 0.08), round(rest * 0.12)
    sizes = {"test": test, "val": val, "restval": restval, "train": images - test - val - restval}
    return {**sizes, "mic": round(MIC_FRACTION * test)}


# Hashes of everything written, so that only an unedited earlier world is ever replaced
MARKER = ".mlmm-demo-coco.sha256"


def generate_coco_world(
    out: Path,
    seed: int,
    images: int,
    ted_train: int = 150,
    ted_test: int = 30,
    force: bool = False,
    test_images: int | None = None,
) -> None:
    """Generate the COCO demo world under ``out`` (replacing an earlier one there).

    ``ted_train``/``ted_test``: talks per language pair in the TED train and test splits;
    ``test_images``: the test split's size (``split_sizes``' ``test``).
    """
    split_sizes(images, test_images)  # validates
    if seed < 0:
        raise InputError("--seed", "a non-negative integer", str(seed))
    for name, value in (("--ted-train", ted_train), ("--ted-test", ted_test)):
        if value < 1:
            raise InputError(name, "at least 1 talk", str(value))
    replace_directory(
        out,
        "earlier COCO demo world",
        MARKER,
        lambda tmp: _write_coco(tmp, seed, images, ted_train, ted_test, test_images),
        force,
    )


def _write_coco(
    root: Path, seed: int, images: int, ted_train: int, ted_test: int, test_images: int | None
) -> None:
    sizes = split_sizes(images, test_images)
    rng = np.random.default_rng([seed, _SPLIT])
    cocoids = (rng.choice(MAX_COCOID, size=images, replace=False) + 1).tolist()
    held_out = ["test"] * sizes["test"] + ["val"] * sizes["val"] + ["restval"] * sizes["restval"]
    # val2014 images first (held-out splits interleaved, as in Karpathy's file), then train2014
    splits = rng.permutation(held_out).tolist() + ["train"] * sizes["train"]
    folders = ["train2014" if s == "train" else "val2014" for s in splits]
    names = [f"COCO_{f}_{c:012d}.jpg" for f, c in zip(folders, cocoids, strict=True)]
    en_contents: list[list[Content]] = []
    ja_contents: list[list[Content]] = []
    for folder in ("train2014", "val2014"):
        (root / "images" / folder).mkdir(parents=True)
    counts, p = list(EXTRA_CAPTIONS), list(EXTRA_CAPTIONS.values())
    for i in progress(range(images), desc="COCO demo world", unit="image"):
        rng = np.random.default_rng([seed, _SCENE, i])
        scene = sample_scene(rng)
        buffer = io.BytesIO()
        render(scene, rng).save(buffer, "JPEG", quality=JPEG_QUALITY)
        write_bytes(root / "images" / folders[i] / names[i], buffer.getvalue())
        rng = np.random.default_rng([seed, _EN, i])
        en_contents.append(_annotators(scene, rng, int(rng.choice(counts, p=p))))
        ja_contents.append(_annotators(scene, np.random.default_rng([seed, _JA, i]), CAPTIONS))

    annotations = root / "annotations"
    annotations.mkdir()
    rng = np.random.default_rng([seed, _SPLIT, 1])
    sentids = iter(rng.choice(MAX_SENTID, size=sum(map(len, en_contents)), replace=False) + 1)
    karpathy = []
    for i, contents in enumerate(en_contents):
        ids = sorted(int(next(sentids)) for _ in contents)
        sentences = [
            {"tokens": _karpathy_tokens(c), "raw": _english(c), "imgid": i, "sentid": s}
            for c, s in zip(contents, ids, strict=True)
        ]
        karpathy.append(
            {
                "filepath": folders[i],
                "filename": names[i],
                "imgid": i,
                "cocoid": cocoids[i],
                "split": splits[i],
                "sentids": ids,
                "sentences": sentences,
            }
        )
    _json(annotations / "dataset_coco.json", {"dataset": "coco", "images": karpathy})
    annotation_id = 0
    for folder, part in (("val2014", "val"), ("train2014", "train")):
        members = [i for i in range(images) if folders[i] == folder]
        stair_images, captions = [], []
        for i in members:
            stair_images.append(
                {"id": cocoids[i], "file_name": names[i], "width": SIZE, "height": SIZE}
            )
            for c in ja_contents[i]:
                annotation_id += 1
                captions.append(
                    {"id": annotation_id, "image_id": cocoids[i], "caption": japanese(c)}
                )
        stair = {
            "info": {"description": "STAIR Captions (mlmm demo world)", "version": "1.2"},
            "licenses": [],
            "images": stair_images,
            "annotations": captions,
        }
        _json(annotations / f"stair_captions_v1.2_{part}.json", stair)

    test = [i for i in range(images) if splits[i] == "test"]
    rng = np.random.default_rng([seed, _MIC])
    mic = sorted(int(i) for i in rng.choice(test, size=sizes["mic"], replace=False))
    _text(root / "mic/images.txt", [f"{folders[i]}/{names[i]}" for i in mic])
    for lang in MIC_LANGUAGES:
        lines = [raw(tokens(c, lang), lang) for i in mic for c in en_contents[i][:CAPTIONS]]
        _text(root / f"mic/captions.{lang}", lines)

    _write_ted(root / "ted", seed, ted_train, ted_test)
    _text(root / "muse/en-ja.txt", [f"{e} {t}" for e, t in dictionary("ja")])
    manifest = [
        f"{sha256_file(path)}  {path.relative_to(root).as_posix()}"
        for path in sorted(root.rglob("*"))
        if path.is_file()
    ]
    _text(root / "MANIFEST.sha256", manifest)


def _annotators(scene: Scene, rng: np.random.Generator, n: int) -> list[Content]:
    """What n independent annotators say about one scene."""
    return [sample_content(scene, rng) for _ in range(n)]


def _english(c: Content) -> str:
    return raw(tokens(c, "en"), "en")


def _karpathy_tokens(c: Content) -> list[str]:
    """Karpathy's tokens: lowercased words, punctuation dropped."""
    return [t.lower() for t in tokens(c, "en") if t[0].isalnum()]


def _write_ted(out: Path, seed: int, train: int, test: int) -> None:
    """English-French/German talks of captions in the TED CLDC layout (see mlmm.ted.corpus).

    As in the real corpus, each pair samples its talks from shared train and test pools, and a
    talk's English side is the same text in every pair; each talk is filed under all 15 topics,
    positive for 1-3 topics drawn at random.
    """
    pools = {"train": math.ceil(1.5 * train), "test": math.ceil(1.5 * test)}
    offset = {"train": 0, "test": pools["train"]}  # talk ids unique across splits
    talks: dict[tuple[str, int], tuple[set[int], dict[str, str]]] = {}

    def talk(split: str, index: int) -> tuple[set[int], dict[str, str]]:
        if (split, index) not in talks:
            rng = np.random.default_rng([seed, _TED_TALK, offset[split] + index])
            topics = rng.choice(len(TOPICS), size=int(rng.integers(1, 4)), replace=False)
            length = int(rng.integers(TED_SENTENCES[0], TED_SENTENCES[1] + 1))
            contents = [sample_content(sample_scene(rng), rng) for _ in range(length)]
            texts = {
                lang: "".join(
                    " ".join(f"{t.lower()}_{lang}" for t in tokens(c, lang)) + "\n"
                    for c in contents
                )
                for lang in (PIVOT, *TED_LANGUAGES)
            }
            talks[split, index] = set(topics.tolist()), texts
        return talks[split, index]

    for p, lang in enumerate(TED_LANGUAGES):
        make_pair_dirs(out, lang)
        rng = np.random.default_rng([seed, _TED_PAIR, p])
        for split, size in (("train", train), ("test", test)):
            for index in sorted(rng.choice(pools[split], size=size, replace=False).tolist()):
                topics, texts = talk(split, index)
                name = f"{offset[split] + index}.ted"
                write_everywhere(out / f"{lang}-{PIVOT}" / split, topics, name, texts[lang])
                write_everywhere(out / f"{PIVOT}-{lang}" / split, topics, name, texts[PIVOT])


def _json(path: Path, obj: dict) -> None:
    """One line, keys sorted, UTF-8 (Japanese unescaped): the same bytes for the same data."""
    write_text(path, json.dumps(obj, ensure_ascii=False, sort_keys=True))


def _text(path: Path, lines: list[str]) -> None:
    write_text(path, "".join(f"{line}\n" for line in lines))
