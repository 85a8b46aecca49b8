"""Small solid-colour images and the feature extractor run on them (features, fingerprints and
resume tests); ``write_array``, the one way a test writes a feature array by hand."""

from __future__ import annotations

import random
from pathlib import Path

from PIL import Image

from mlmm.features import extract, write_features

COLOURS = [(230, 20, 20), (20, 200, 30), (30, 40, 220), (240, 220, 30), (250, 250, 250),
           (10, 10, 10), (200, 40, 200), (30, 200, 210), (130, 80, 20)]  # fmt: skip


def make_images(root: Path, count: int, seed: int = 0) -> list[str]:
    """Distinct solid-colour JPEGs, created on disk in a random order; returns a shuffled list."""
    rng = random.Random(seed)
    names = [f"img{i:02d}.jpg" for i in range(count)]
    (root / "images").mkdir(parents=True, exist_ok=True)
    for i in rng.sample(range(count), count):
        Image.new("RGB", (48 + 3 * i, 40), COLOURS[i % len(COLOURS)]).save(
            root / "images" / names[i]
        )
    order = rng.sample(names, count)
    (root / "list.txt").write_text("\n".join(order) + "\n", encoding="utf-8")
    return order


def write_array(path: str | Path, array, names: list[str] | None = None,
                split: str | Path | None = None, **sidecar) -> dict:  # fmt: skip
    """Write ``array`` as the feature array ``path`` (``<split>.npy``) with what ``mlmm
    features`` writes beside it: the list copy ``names`` (default: one made-up name per row) and
    the sidecar with ``sidecar``'s keys and the array's record, made from ``names`` and the
    split ``split`` (default: the array's stem). Returns the sidecar."""
    path = Path(path)
    names = [f"image{i:05d}.jpg" for i in range(len(array))] if names is None else list(names)
    return write_features(path, array, names, path.stem if split is None else split, sidecar)


def run(tmp_path: Path, **kwargs) -> dict:
    settings = {"backbone": "efficientnet_lite0", "workers": 0, "progress": False, "device": "cpu",
                **kwargs}  # fmt: skip
    return extract(tmp_path / "images", tmp_path / "list.txt", tmp_path / "out/val.npy", **settings)


def die_after_first(save):
    calls = []

    def wrapped(*args):
        if calls:
            raise KeyboardInterrupt
        calls.append(args)
        save(*args)

    return wrapped
