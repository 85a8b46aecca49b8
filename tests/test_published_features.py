"""Published precomputed features as a source (mlmm.features.published): the Multi30K release's
``<split>-resnet50-avgpool.npy`` arrays, checked on read, written where the extraction writes,
trained on with no images, and named as their origin in the notes."""

from __future__ import annotations

import hashlib
import json
from pathlib import Path

import numpy as np
import pytest

from mlmm.errors import InputError
from mlmm.features.published import import_published
from mlmm.origin import Origin
from mlmm.retrieval.config import resolve_variant
from mlmm.retrieval.data import load_features
from mlmm.retrieval.train import Paths, train_variant

SIZES = {"train": 60, "val": 20, "test_2016_flickr": 20}
TASK2 = {"train": "train", "val": "val", "test_2016_flickr": "test_2016"}
COLOURS = ["red", "blue", "green", "white"]
THINGS = ["cat", "dog", "car", "boat", "man"]


def _world(root: Path, published: Path, dtype=np.float16) -> dict[str, list[str]]:
    """A Multi30K-layout text world (task1, English) and its published features: row i of
    ``<split>-resnet50-avgpool.npy`` is a noisy projection of image i's two attributes."""
    rng = np.random.default_rng(0)
    projection = rng.normal(size=(len(COLOURS) + len(THINGS), 2048))
    published.mkdir(parents=True, exist_ok=True)
    names, start = {}, 0
    for split, n in SIZES.items():
        colour, thing = rng.integers(len(COLOURS), size=n), rng.integers(len(THINGS), size=n)
        names[split] = [f"{start + i:06d}.jpg" for i in range(n)]
        start += n
        for path, lines in (
            (f"task1/image_splits/{split}.txt", names[split]),
            (f"task1/tok/{split}.lc.norm.tok.en",
             [f"a {COLOURS[c]} {THINGS[t]}" for c, t in zip(colour, thing, strict=True)]),
            # task2: the same images, five English captions each (the comparable portion)
            (f"task2/image_splits/{TASK2[split]}_images.txt", names[split]),
            *(
                (f"task2/tok/{TASK2[split]}.lc.norm.tok.{k}.en",
                 [f"{'one' if k % 2 else 'the'} {COLOURS[c]} {THINGS[t]}"
                  for c, t in zip(colour, thing, strict=True)])
                for k in range(1, 6)
            ),
        ):  # fmt: skip
            (root / "data" / path).parent.mkdir(parents=True, exist_ok=True)
            (root / "data" / path).write_text("\n".join(lines) + "\n", encoding="utf-8")
        codes = np.zeros((n, len(COLOURS) + len(THINGS)))
        codes[np.arange(n), colour] = 1
        codes[np.arange(n), len(COLOURS) + thing] = 1
        feats = codes @ projection + 0.1 * rng.normal(size=(n, 2048))
        np.save(published / f"{split}-resnet50-avgpool.npy", feats.astype(dtype))
    return names


def _split_list(root: Path, split: str) -> Path:
    return root / "data/task1/image_splits" / f"{split}.txt"


@pytest.mark.parametrize("dtype", [np.float16, np.float32])
def test_published_arrays_load_as_extracted_ones(tmp_path, dtype):
    names = _world(tmp_path, tmp_path / "imgfeats", dtype)
    out = tmp_path / "features/resnet50/val.npy"
    sidecar = import_published(tmp_path / "imgfeats", "resnet50", _split_list(tmp_path, "val"), out)
    assert sidecar["origin"] == "ResNet-50 average pool, published features"
    assert sidecar["published_dtype"] == np.dtype(dtype).name
    written = json.loads(out.with_suffix(".json").read_text())
    assert written["n"] == SIZES["val"]
    # the record every reader requires, in the sidecar: no hidden file beside the array
    assert written["sha256"] == hashlib.sha256(out.read_bytes()).hexdigest()
    assert set(written["made_from"]) == {"image list", "split"}
    assert not [p.name for p in out.parent.iterdir() if "made-from" in p.name]
    feats = load_features(tmp_path / "features", "resnet50", "val", names["val"])
    assert feats.shape == (SIZES["val"], 2048) and feats.dtype == np.float32


@pytest.mark.parametrize(
    "spoil, expected",
    [
        (lambda a: a[:-1], "one row per image of the split list"),
        (lambda a: a[:, :512], "shape (20, 2048)"),
        (lambda a: np.where(np.arange(len(a))[:, None] == 3, np.nan, a), "finite values"),
        (lambda a: a.astype(np.float64), "a float16 or float32 array"),
    ],
    ids=["rows", "width", "nan", "dtype"],
)
def test_a_published_array_is_checked_on_read(tmp_path, spoil, expected):
    _world(tmp_path, tmp_path / "imgfeats")
    path = tmp_path / "imgfeats/val-resnet50-avgpool.npy"
    np.save(path, spoil(np.load(path)))
    with pytest.raises(InputError) as error:
        import_published(tmp_path / "imgfeats", "resnet50", _split_list(tmp_path, "val"),
                         tmp_path / "out/val.npy")  # fmt: skip
    assert expected in str(error.value) and "val-resnet50-avgpool.npy" in str(error.value)
    assert not (tmp_path / "out/val.npy").exists()


def test_a_kadar_run_trains_from_published_features_with_no_images(tmp_path):
    _world(tmp_path, tmp_path / "imgfeats")
    for split in SIZES:
        import_published(tmp_path / "imgfeats", "resnet50", _split_list(tmp_path, split),
                         tmp_path / f"features/resnet50/{split}.npy")  # fmt: skip
    small = {"embed_dim": 16, "hidden": 32, "joint": 32, "batch_size": 20, "epochs": 2,
             "min_count": 1, "backbone": "resnet50", "device": "cpu", "sts": False,
             "early_stopping": {"every": 3, "patience": 20}}  # fmt: skip
    variant = {"train_data": [{"portion": "translation", "languages": ["en"]}]}
    record = resolve_variant({"defaults": small, "variants": {"mono": variant}}, "mono")
    paths = Paths(tmp_path, tmp_path / "features")
    metrics = train_variant(record, 1, paths, tmp_path / "run", progress=False, threads=1)
    assert np.isfinite(metrics["test"]["en"]["t2i"]["R@10"])
    assert not list(tmp_path.rglob("*.jpg"))  # no image anywhere


def test_the_notes_name_published_features_as_the_origin():
    published = Origin({"multi30k": "url", "features": "published"}, [], ["resnet50", "vgg19"])
    note = published.note()
    assert "ResNet-50 average pool, published features" in note and "VGG-19" in note
    assert "published" not in Origin({"multi30k": "url"}, [], ["resnet50"]).note()
