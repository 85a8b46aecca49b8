"""A tiny Multi30K copy in the upstream layout: line i of every file describes image i."""

from __future__ import annotations

import gzip
import itertools
from pathlib import Path

from mlmm.data.multi30k import COMPARABLE_LANGUAGES, TASK2_SPLITS, TRANSLATION_LANGUAGES

SIZES = {"train": 6, "val": 2, "test_2016_flickr": 2}


# Per language, the words of the training captions: shared 'ok' (all languages), 'x' in en+de.
WORDS = {
    "en": ["a", "dog", "ok", "x"],
    "de": ["ein", "hund", "ok", "x"],
    "fr": ["un", "chien", "ok"],
    "cs": ["pes", "ok"],
}


def caption(lang: str, i: int) -> str:
    return " ".join(WORDS[lang]) + f" w{i}"


def write_tree(root: Path) -> Path:
    """A tiny Multi30K copy in the upstream layout; line i of every file describes image i."""
    for split, (prefix, list_name) in TASK2_SPLITS.items():
        images = [f"{split}{i}.jpg" for i in range(SIZES[split])]
        for task, name in ((1, split), (2, list_name)):
            path = root / f"data/task{task}/image_splits/{name}.txt"
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_text("\n".join(images) + "\n")
        files = [(1, f"{split}.{{}}{lang}", lang) for lang in TRANSLATION_LANGUAGES]
        files += [
            (2, f"{prefix}.{{}}{k}.{lang}", lang)
            for k, lang in itertools.product(range(1, 6), COMPARABLE_LANGUAGES)
        ]
        for task, pattern, lang in files:
            text = "".join(caption(lang, i) + "\n" for i in range(len(images)))
            tok = root / f"data/task{task}/tok" / pattern.format("lc.norm.tok.")
            tok.parent.mkdir(parents=True, exist_ok=True)
            tok.write_text(text)
            raw = root / f"data/task{task}/raw" / (pattern.format("") + ".gz")
            raw.parent.mkdir(parents=True, exist_ok=True)
            raw.write_bytes(gzip.compress(text.capitalize().encode()))
    return root
