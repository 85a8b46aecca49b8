"""Tiny parallel corpora for the NMT trainer: the toy en-de word substitution corpus, the
`train-nmt` data directory and the settings records of `train-nmt` and `nbest` (`--config`)."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np


def write_lines(path: Path, lines: list[str]) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("".join(line + "\n" for line in lines), encoding="utf-8")
    return path


def nmt_data(root: Path) -> Path:
    data = root / "data"
    for split, n in (("train", 6), ("val", 3)):
        write_lines(data / f"{split}.lc.norm.tok.en", [f"a dog runs {i}" for i in range(n)])
        write_lines(data / f"{split}.lc.norm.tok.de", [f"ein hund läuft {i}" for i in range(n)])
    return data


def nmt_record(path: Path, model: dict | None = None, **train) -> Path:
    """A `train-nmt --config` record at ``path``: a tiny model (sizes 4, or ``model``) trained
    one epoch (or as ``train`` says); the schema's defaults for every other key."""
    record = {
        "model": {"embedding": 4, "hidden": 4, "attention": 4, **(model or {})},
        "train": {"max_epochs": 1, **train},
    }
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(record), encoding="utf-8")
    return path


def beam_record(path: Path, beam: int) -> Path:
    """An `nbest --config` record at ``path``: beam search of width ``beam``."""
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps({"beam": beam}), encoding="utf-8")
    return path


WORDS = {
    "red": "rot",
    "dog": "hund",
    "cat": "katze",
    "big": "gross",
    "runs": "rennt",
    "sleeps": "schlaeft",
    "a": "ein",
    "small": "klein",
}


def toy_parallel_corpus(n, seed):
    rng = np.random.default_rng(seed)
    keys = list(WORDS)
    src = [list(rng.choice(keys, size=rng.integers(2, 6))) for _ in range(n)]
    return src, [[WORDS[w] for w in s] for s in src]
