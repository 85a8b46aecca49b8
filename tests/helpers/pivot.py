"""A generated world for the pivot stage (COCO-like images, English captions, TED-like talks,
MIC-like test set) and its settings."""

from __future__ import annotations

from pathlib import Path

import numpy as np

from helpers.features import write_array
from mlmm.ted import TOPICS

PAPER_TABLES = Path(__file__).resolve().parents[2] / "resources" / "paper_tables"


WORDS = {"en": "cat", "fr": "chat", "de": "katze"}


FILLER = {"en": ["a", "the", "with"], "fr": ["un", "le", "avec"], "de": ["ein", "der", "mit"]}


SETTINGS = {
    "hidden": 24,
    "epochs": 12,
    "batch_size": 20,
    "learning_rate": 0.05,
    "input": "binary",
    "reconstruction": "cross_entropy",
    "min_count": 1,
    "validation_fraction": 0.1,
    "validation_max": 1000,
    "seed": 1,
    "standardise_images": True,
}


def _caption(rng, concepts, language) -> str:
    words = [f"{WORDS[language]}{c}" for c in concepts if rng.random() < 0.9]
    words += list(rng.choice(FILLER[language], size=2))
    return " ".join(rng.permutation(words))


def make_world(root: Path, n_train=300, n_mic=40, talks=80, dim=32, concepts=12, seed=0):
    """COCO layout + features + TED-CLDC layout where one concept set ties all views.

    Image features are the sum of their concepts' directions plus noise; captions (en, and
    translations fr/de for MIC) name the concepts; TED talks name three concepts in en and X.
    Returns (coco_root, features_dir, ted_root).
    """
    rng = np.random.default_rng(seed)
    directions = rng.normal(size=(concepts, dim))
    coco, feats, ted = root / "coco", root / "features", root / "ted-cldc"
    (coco / "data/task1/image_splits").mkdir(parents=True)
    (coco / "data/task2/tok").mkdir(parents=True)
    for split, n, languages in (
        ("pivot_train", n_train, ["en"]),
        ("mic", n_mic, ["en", "fr", "de"]),
    ):
        sets = [rng.choice(concepts, size=2, replace=False) for _ in range(n)]
        names = [f"{split}_{i:04d}.jpg" for i in range(n)]
        (coco / f"data/task1/image_splits/{split}.txt").write_text("\n".join(names) + "\n")
        x = np.stack([directions[s].sum(0) for s in sets]) + 0.3 * rng.normal(size=(n, dim))
        x = np.maximum(x, 0).astype(np.float32) + 1
        (feats / "alexnet_fc6").mkdir(parents=True, exist_ok=True)
        if split == "pivot_train":  # Z1 reads its rows of the train split's features
            others = [f"other_{i:04d}.jpg" for i in range(3)]  # train images not in pivot_train
            (coco / "data/task1/image_splits/train.txt").write_text("\n".join(others + names))
            write_array(feats / "alexnet_fc6/train.npy", np.concatenate([np.zeros((3, dim)), x]),
                        others + names)  # fmt: skip
        else:
            write_array(feats / "alexnet_fc6" / f"{split}.npy", x, names)
        for k in range(1, 6):
            lines = {lang: [] for lang in languages}
            for s in sets:
                state = rng.integers(1 << 30)  # the translations say the same as the English
                for lang in languages:
                    lines[lang].append(_caption(np.random.default_rng(state), s, lang))
            for lang in languages:
                path = coco / f"data/task2/tok/{split}.lc.norm.tok.{k}.{lang}"
                path.write_text("\n".join(lines[lang]) + "\n")
    for x in ("fr", "de"):
        for t in range(talks):
            chosen = rng.choice(concepts, size=3, replace=False)
            counts = rng.integers(1, 4, size=3)
            for lang, pair in ((x, f"{x}-en"), ("en", f"en-{x}")):
                words = [
                    f"{WORDS[lang]}{c}_{lang}"
                    for c, m in zip(chosen, counts, strict=True)
                    for _ in range(m)
                ]
                words += [f"{w}_{lang}" for w in FILLER[lang]]
                folder = ted / pair / "train" / TOPICS[t % len(TOPICS)] / "positive"
                folder.mkdir(parents=True, exist_ok=True)
                (folder / f"{t}.ted").write_text(" ".join(words) + "\n")
            for topic in TOPICS:
                for pair in (f"{x}-en", f"en-{x}"):
                    (ted / pair / "train" / topic / "negative").mkdir(parents=True, exist_ok=True)
    return coco, feats, ted


def fake_run(path: Path, model, language, lam, criteria, value, extra: dict | None = None):
    """A pivot run directory whose metrics.json holds the numbers a table test chooses (and
    ``extra`` keys), recorded by the real ``record_directory`` as pivot-train records it."""
    from mlmm.fingerprint import record_directory
    from mlmm.io import write_json

    test = {d: {f"R@{k}": value + k / 1000 for k in (5, 10, 50)} for d in ("i2t", "t2i")}
    path.mkdir(parents=True)
    run = {
        "model": model,
        "language": language,
        "lambda": lam,
        "criteria": criteria,
        "test": test,
        "provenance": {"config": {"backbone": "alexnet_fc6"}},
        **(extra or {}),
    }
    write_json(path / "metrics.json", run)
    record_directory(path, "metrics.json")
    return path
