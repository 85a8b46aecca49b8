"""A tiny Multi30K-layout world for the retrieval trainer (images with three latent attributes,
features a noisy projection of them, captions in four languages), its small record, the
`train-retrieval` command line, and a toy RCSLS alignment."""

from __future__ import annotations

import gzip
import sys
from pathlib import Path

import numpy as np
import torch

from helpers.features import write_array
from mlmm.retrieval.config import resolve_variant
from mlmm.retrieval.model import JointEmbedding
from mlmm.retrieval.train import Paths

WORDS = {
    "en": (
        ["red", "blue", "green", "white", "black", "pink"],
        ["cat", "dog", "car", "ball", "man", "boat"],
        ["park", "street", "beach", "room"],
    ),
    "de": (
        ["rot", "blau", "grün", "weiß", "schwarz", "rosa"],
        ["katze", "hund", "auto", "ball", "mann", "boot"],
        ["park", "straße", "strand", "zimmer"],
    ),
    "fr": (
        ["rouge", "bleu", "vert", "blanc", "noir", "rose"],
        ["chat", "chien", "voiture", "balle", "homme", "bateau"],
        ["parc", "rue", "plage", "salle"],
    ),
    "cs": (
        ["červený", "modrý", "zelený", "bílý", "černý", "růžový"],
        ["kočka", "pes", "auto", "míč", "muž", "loď"],
        ["park", "ulice", "pláž", "pokoj"],
    ),
}


FRAMES = {
    "en": [
        "a {c} {o} in the {p}",
        "the {o} is {c} in a {p}",
        "one {c} {o} near the {p}",
        "{c} {o} at the {p}",
        "there is a {c} {o} in the {p}",
    ],
    "de": [
        "ein {c} {o} im {p}",
        "der {o} ist {c} im {p}",
        "ein {c} {o} am {p}",
        "{c} {o} im {p}",
        "da ist ein {c} {o} im {p}",
    ],
    "fr": ["un {o} {c} dans le {p}"],
    "cs": ["{c} {o} v {p}"],
}


SIZES = {"train": 300, "val": 40, "test_2016_flickr": 40}


TASK2 = {
    "train": ("train", "train_images"),
    "val": ("val", "val_images"),
    "test_2016_flickr": ("test_2016", "test_2016_images"),
}


def write_lines(path: Path, lines: list[str], gz: bool = False) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    text = "\n".join(lines) + "\n"
    if gz:
        with gzip.open(path, "wt", encoding="utf-8") as handle:
            handle.write(text)
    else:
        path.write_text(text, encoding="utf-8")


def save_features(root: Path, split: str, attrs: np.ndarray, projection, rng) -> None:
    """Features: a noisy random projection of the images' one-hot attribute codes."""
    n = len(attrs)
    onehot = np.zeros((n, 16))
    onehot[np.arange(n), attrs[:, 0]] = 1
    onehot[np.arange(n), 6 + attrs[:, 1]] = 1
    onehot[np.arange(n), 12 + attrs[:, 2]] = 1
    feats = (onehot @ projection + 0.3 * rng.normal(size=(n, 24))).astype(np.float32)
    names = (root / "data/task1/image_splits" / f"{split}.txt").read_text(encoding="utf-8")
    write_array(root / "features/toy" / f"{split}.npy", feats, names.splitlines())


def make_world(root: Path, seed: int = 0) -> Paths:
    rng = np.random.default_rng(seed)
    projection = rng.normal(size=(16, 24))
    data = root / "data"
    start = 0
    for split, n in SIZES.items():
        attrs = rng.integers([0, 0, 0], [6, 6, 4], size=(n, 3))
        names = [f"{start + i:06d}.jpg" for i in range(n)]
        start += n
        write_lines(data / "task1/image_splits" / f"{split}.txt", names)
        prefix, list_name = TASK2[split]
        write_lines(data / "task2/image_splits" / f"{list_name}.txt", names)
        save_features(root, split, attrs, projection, rng)
        for lang, (cs, os_, ps) in WORDS.items():
            frames = FRAMES[lang]
            lines = [frames[0].format(c=cs[a], o=os_[b], p=ps[c]) for a, b, c in attrs]
            write_lines(data / "task1/tok" / f"{split}.lc.norm.tok.{lang}", lines)
            if lang in ("en", "de"):
                for k in range(5):
                    order = rng.permutation(5)
                    lines = [
                        frames[order[i % 5]].format(c=cs[a], o=os_[b], p=ps[c])
                        for i, (a, b, c) in enumerate(attrs)
                    ]
                    write_lines(data / "task2/tok" / f"{prefix}.lc.norm.tok.{k + 1}.{lang}", lines)
    for lang in ("de", "fr", "cs"):
        pairs = [
            f"{e} {t}"
            for group in range(3)
            for e, t in zip(WORDS["en"][group], WORDS[lang][group], strict=True)
        ]
        write_lines(root / "muse" / f"en-{lang}.txt", pairs)
    sts = root / "sts/2014"
    write_lines(
        sts / "STS.input.images.txt",
        [
            "A red cat in the park.\tA red cat in a park.",
            "A blue dog.\tA green boat on the beach.",
            "A white ball.\tA white ball in the room.",
        ],
    )
    write_lines(sts / "STS.gs.images.txt", ["5.0", "0.4", "3.8"])
    return Paths(root, root / "features", root / "vectors", root / "muse", root / "sts")


SMALL = {
    "embed_dim": 16,
    "hidden": 32,
    "joint": 32,
    "batch_size": 32,
    "epochs": 3,
    "min_count": 1,
    "backbone": "toy",
    "checkpoint_every": 10,
    "device": "cpu",
    "optimizer": {"lr": 0.005},
    "early_stopping": {"every": 10, "patience": 20},
}


def section(**variants) -> dict:
    return {"defaults": SMALL, "variants": variants}


def trainer_argv(config: Path, out: Path, world: Paths) -> list[str]:
    return [
        sys.executable,
        "-m",
        "mlmm",
        "train-retrieval",
        "--config",
        str(config),
        "--variant",
        "four",
        "--seed",
        "2",
        "--out",
        str(out),
        "--no-progress",
        "--threads",
        "1",
        "--data-root",
        str(world.data_root),
        "--features-root",
        str(world.features_root),
    ]


def toy_alignment(**settings):
    """6-row table: rows 1-3 English, 4-5 German; en-de pairs (1,4),(2,5); de-en (4,1),(5,3)."""
    from mlmm.retrieval.word_embeddings import Alignment, Direction

    torch.manual_seed(3)
    model = JointEmbedding(2, {"shared": 6}, 3, 4, 4, 0.0, "cosine")
    cpu = torch.device("cpu")
    en, de = torch.tensor([1, 2, 3]), torch.tensor([4, 5])
    directions = [Direction("en-de", en, de, torch.tensor([[0, 0], [1, 1]]), {0: {0}}, cpu)]
    if settings.get("mappings") == "two":
        directions.append(Direction("de-en", de, en, torch.tensor([[0, 0], [1, 2]]), {}, cpu))
    alignment = {
        "lr": 2.0,
        "knn": 2,
        "mappings": "one",
        "lr_schedule": "constant",
        "lr_halving": "float",
        "orthogonalise": True,
        "normalise": True,
        **settings,
    }
    record = {"word_embeddings": "ame", "alignment": alignment}
    return Alignment(model, directions, record, cpu)


def rcsls_update(run):
    run.zero_grad()
    run.loss().backward()
    before = [d.mapping.detach().clone() for d in run.directions]
    grads = [d.mapping.grad.clone() for d in run.directions]
    run.step()
    return before, grads


def tiny_world(root: Path, n: int = 6) -> None:
    data = root / "data"
    for task, name in ((1, "train.txt"), (2, "train_images.txt")):
        path = data / f"task{task}/image_splits/{name}"
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text("".join(f"{i}.jpg\n" for i in range(n)))
    for lang in ("en", "de", "fr"):
        path = data / f"task1/tok/train.lc.norm.tok.{lang}"
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text("".join(f"t{lang} {i}\n" for i in range(n)))
    for k in range(1, 6):
        for lang in ("en", "de"):
            path = data / f"task2/tok/train.lc.norm.tok.{k}.{lang}"
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_text("".join(f"c{lang} {i} {k}\n" for i in range(n)))


def record_of(**changes) -> dict:
    return resolve_variant({"variants": {"v": changes}}, "v")
