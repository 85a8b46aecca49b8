"""The COCO demo world: Karpathy, STAIR, MIC and TED layouts, Japanese grammar, determinism."""

from __future__ import annotations

import hashlib
import json
import re
from pathlib import Path

import fugashi
import numpy as np
import pytest
from PIL import Image

from mlmm.cli import main
from mlmm.demo import generate_coco_world, generate_world
from mlmm.demo.coco import MARKER, split_sizes
from mlmm.demo.grammar import FR_NOUN, Content, Mention, dictionary, raw, sample_content, tokens
from mlmm.demo.scenes import SHAPES, sample_scene
from mlmm.errors import InputError
from mlmm.io import DIR_RECORD
from mlmm.ted import TOPICS
from mlmm.ted.corpus import read_pair

N = 60
TED = {"train": 6, "test": 3}
# MeCab tokens of Japanese captions that are not content words of the en-ja dictionary
JA_FUNCTION = {"が", "を", "の", "に", "と", "は", "で", "、", "あり", "ます", "写っ", "た", "その"}
JA_FUNCTION |= {"中", "つ", "個", "色", "左上", "右上", "左下", "右下"}


@pytest.fixture(scope="module")
def world(tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("coco") / "world"
    generate_coco_world(out, seed=3, images=N, ted_train=TED["train"], ted_test=TED["test"])
    return out


@pytest.fixture(scope="module")
def karpathy(world: Path) -> list[dict]:
    data = json.loads((world / "annotations/dataset_coco.json").read_text(encoding="utf-8"))
    assert set(data) == {"dataset", "images"} and data["dataset"] == "coco"
    return data["images"]


@pytest.fixture(scope="module")
def tagger() -> fugashi.Tagger:
    return fugashi.Tagger()


def lines(path: Path) -> list[str]:
    text = path.read_text(encoding="utf-8")
    assert text.endswith("\n")
    return text[:-1].split("\n")


def test_split_sizes_scale_and_reject_small() -> None:
    expected = {"test": 250, "val": 100, "restval": 150, "train": 1000, "mic": 100}
    assert split_sizes(1500) == expected
    sizes = split_sizes(N)
    assert sizes["test"] % 5 == 0 and sizes["train"] > sizes["test"] and sizes["mic"] > 0
    with pytest.raises(InputError, match="at least 60 images"):
        split_sizes(59)


def test_a_test_heavy_world_keeps_the_other_splits_proportions() -> None:
    """The paper miniature's COCO world: a test split of its own size (folds and MIC past the
    largest K), the rest split as a 60-image world's non-test images."""
    default = split_sizes(60)
    heavy = split_sizes(180, test=130)
    assert heavy == {"test": 130, "val": 4, "restval": 6, "train": 40, "mic": 52}
    assert {k: heavy[k] for k in ("val", "restval", "train")} == {
        k: default[k] for k in ("val", "restval", "train")
    }
    for test in (0, 12, 135):  # no folds, not 5 folds, too few images left
        with pytest.raises(InputError, match="--coco-test-images.*multiple of 5"):
            split_sizes(180, test=test)


def test_karpathy_schema_and_splits(world: Path, karpathy: list[dict]) -> None:
    sizes = split_sizes(N)
    assert [im["imgid"] for im in karpathy] == list(range(N))
    for split in ("train", "val", "restval", "test"):
        assert sum(im["split"] == split for im in karpathy) == sizes[split]
    sentids = []
    for im in karpathy:
        assert set(im) == {
            "filepath",
            "filename",
            "imgid",
            "cocoid",
            "split",
            "sentids",
            "sentences",
        }
        assert im["filepath"] == ("train2014" if im["split"] == "train" else "val2014")
        assert im["filename"] == f"COCO_{im['filepath']}_{im['cocoid']:012d}.jpg"
        assert (world / "images" / im["filepath"] / im["filename"]).is_file()
        assert 5 <= len(im["sentences"]) <= 7
        assert im["sentids"] == [s["sentid"] for s in im["sentences"]]
        for s in im["sentences"]:
            assert set(s) == {"tokens", "raw", "imgid", "sentid"} and s["imgid"] == im["imgid"]
            assert s["raw"][0].isupper() and s["raw"].endswith(".")
            assert s["tokens"] == re.findall(r"\w+", s["raw"].lower())
        sentids += im["sentids"]
    assert len(set(sentids)) == len(sentids)
    assert len({im["cocoid"] for im in karpathy}) == N
    # five annotators rarely say the same thing
    assert np.mean([len({s["raw"] for s in im["sentences"]}) for im in karpathy]) > 4


def test_images_are_real_jpegs(world: Path, karpathy: list[dict]) -> None:
    found = {p.relative_to(world / "images").as_posix() for p in (world / "images").rglob("*.*")}
    assert found == {f"{im['filepath']}/{im['filename']}" for im in karpathy}
    first = karpathy[0]
    with Image.open(world / "images" / first["filepath"] / first["filename"]) as image:
        assert image.format == "JPEG" and image.size == (256, 256) and image.mode == "RGB"
        assert np.asarray(image, dtype=np.float32).std() > 10


def test_stair_captions(world: Path, karpathy: list[dict], tagger: fugashi.Tagger) -> None:
    ja_words = {ja for _, ja in dictionary("ja")}
    ids, seen = set(), set()
    for part, folder in (("train", "train2014"), ("val", "val2014")):
        path = world / f"annotations/stair_captions_v1.2_{part}.json"
        data = json.loads(path.read_text(encoding="utf-8"))
        assert {"images", "annotations"} <= set(data)
        expected = {im["cocoid"]: im["filename"] for im in karpathy if im["filepath"] == folder}
        assert {im["id"]: im["file_name"] for im in data["images"]} == expected
        per_image = dict.fromkeys(expected, 0)
        for annotation in data["annotations"]:
            assert set(annotation) == {"id", "image_id", "caption"}
            per_image[annotation["image_id"]] += 1
            ids.add(annotation["id"])
            caption = annotation["caption"]
            assert not re.search(r"[\sA-Za-z]", caption)  # Japanese, written without spaces
            words = [w.surface for w in tagger(caption)]
            assert set(words) <= ja_words | JA_FUNCTION, caption
            seen |= set(words)
        assert set(per_image.values()) == {5}
    assert len(ids) == 5 * N
    assert {"が", "の", "に", "と"} <= seen  # particles split off by MeCab
    assert len(seen & ja_words) > 0.6 * len(ja_words)


def test_japanese_grammar_matches_mecab_and_dictionary(tagger: fugashi.Tagger) -> None:
    c = Content(
        "relation",
        (Mention("star", "red"), Mention("square", "blue")),
        relation="next",
        style=(0, 0, 0, 1),
    )
    assert raw(tokens(c, "ja"), "ja") == "青い四角の隣に赤い星がある。"
    c = Content("count", (Mention("star", "red"), Mention("circle")), place="snow", count=5)
    assert raw(tokens(c, "ja"), "ja") == "雪の中に赤い星と丸を含む図形が五つある。"
    c = Content("exist", (Mention("circle", "green", "big", "top left"),), style=(0, 0, 0, 2))
    assert raw(tokens(c, "ja"), "ja") == "左上の大きい緑の丸があります。"
    rng = np.random.default_rng(0)
    seen = set()
    for _ in range(2000):
        c = sample_content(sample_scene(rng), rng)
        toks = tokens(c, "ja")
        assert [w.surface for w in tagger(raw(toks, "ja"))] == toks
        seen |= set(toks)
    assert {ja for _, ja in dictionary("ja")} <= seen  # every dictionary word is used


def test_mic(world: Path, karpathy: list[dict]) -> None:
    by_path = {f"{im['filepath']}/{im['filename']}": im for im in karpathy}
    images = lines(world / "mic/images.txt")
    assert len(images) == len(set(images)) == split_sizes(N)["mic"]
    assert all(by_path[p]["split"] == "test" for p in images)
    captions = {lang: lines(world / f"mic/captions.{lang}") for lang in ("en", "fr", "de")}
    assert {len(c) for c in captions.values()} == {5 * len(images)}
    expected = [s["raw"] for p in images for s in by_path[p]["sentences"][:5]]
    assert captions["en"] == expected
    for en, fr in zip(captions["en"], captions["fr"], strict=True):  # translations
        for shape in SHAPES:
            assert (shape in re.findall(r"\w+", en.lower())) == (FR_NOUN[shape][0] in fr.lower())
    assert captions["de"][0] != captions["en"][0]


def test_ted_pairs_readable(world: Path, karpathy: list[dict]) -> None:
    vocabulary = {t for im in karpathy for s in im["sentences"] for t in s["tokens"]}
    english = {}
    for lang in ("fr", "de"):
        for split, size in TED.items():
            foreign, en = read_pair(world / "ted", lang, split, TOPICS)
            assert len(foreign.ids) == size and foreign.labels.any(axis=1).all()
            assert all(8 <= len([t for t in doc if t == "."]) <= 15 for doc in en.tokens)
            for doc_id, doc in zip(en.ids, en.tokens, strict=True):
                assert english.setdefault((split, doc_id), doc) == doc  # one English text
            words = [t for doc in en.tokens for t in doc if t[0].isalnum()]
            assert np.mean([w in vocabulary for w in words]) > 0.95  # COCO's vocabulary
            foreign_words = {t for doc in foreign.tokens for t in doc}
            assert not foreign_words & {"the", "is", "circle"}
    assert {split for split, _ in english} == {"train", "test"}


def test_muse_and_manifest(world: Path) -> None:
    pairs = [line.split(" ") for line in lines(world / "muse/en-ja.txt")]
    assert all(len(p) == 2 for p in pairs) and ["circle", "丸"] in pairs
    entries = dict(line.split("  ")[::-1] for line in lines(world / "MANIFEST.sha256"))
    files = {p.relative_to(world).as_posix() for p in world.rglob("*") if p.is_file()}
    assert set(entries) == files - {"MANIFEST.sha256", MARKER, DIR_RECORD}
    for rel, digest in list(entries.items())[:: max(1, len(entries) // 200)]:
        assert hashlib.sha256((world / rel).read_bytes()).hexdigest() == digest


def test_deterministic_for_a_seed(world: Path, tmp_path: Path) -> None:
    generate_coco_world(tmp_path / "again", seed=3, images=N, ted_train=6, ted_test=3)
    generate_coco_world(tmp_path / "other", seed=4, images=N, ted_train=6, ted_test=3)
    manifest = "MANIFEST.sha256"
    assert (tmp_path / "again" / manifest).read_bytes() == (world / manifest).read_bytes()
    assert (tmp_path / "other" / manifest).read_bytes() != (world / manifest).read_bytes()


def test_scenes_differ_from_the_multi30k_world(world: Path, tmp_path: Path) -> None:
    generate_world(tmp_path / "m30k", seed=3, images=30)
    multi30k = {
        hashlib.sha256(p.read_bytes()).digest() for p in (tmp_path / "m30k/images").iterdir()
    }
    coco = {hashlib.sha256(p.read_bytes()).digest() for p in (world / "images").rglob("*.jpg")}
    assert not multi30k & coco
    with pytest.raises(InputError, match="earlier COCO demo world"):  # never replaces it
        generate_coco_world(tmp_path / "m30k", seed=3, images=N)


def test_refuses_foreign_directory_and_bad_arguments(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    (tmp_path / "busy").mkdir()
    (tmp_path / "busy" / "notes.txt").write_text("mine\n")
    with pytest.raises(InputError, match="earlier COCO demo world"):
        generate_coco_world(tmp_path / "busy", seed=1, images=N)
    assert (tmp_path / "busy" / "notes.txt").read_text() == "mine\n"
    assert main(["demo-coco", str(tmp_path / "w"), "--images", "20"]) == 2
    assert "--images: expected a number >= 60, found 20" in capsys.readouterr().err
    assert main(["demo-coco", str(tmp_path / "w"), "--images", str(N), "--ted-test", "0"]) == 2
    assert not (tmp_path / "w").exists()  # nothing written


def test_cli_writes_and_replaces_an_earlier_world(tmp_path: Path) -> None:
    args = ["demo-coco", str(tmp_path / "w"), "--seed", "2", "--ted-train", "4", "--ted-test", "2"]
    assert main([*args, "--images", str(N)]) == 0
    (tmp_path / "w/MANIFEST.sha256").unlink()  # as Snakemake deletes an output before a rerun
    assert main([*args, "--images", "90"]) == 0
    data = json.loads((tmp_path / "w/annotations/dataset_coco.json").read_text(encoding="utf-8"))
    assert len(data["images"]) == 90
