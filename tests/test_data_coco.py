"""MS-COCO data stage: Karpathy split, Japanese captions, MIC test set -> Multi30K layout."""

from __future__ import annotations

import json
import logging
import re
import zipfile
from pathlib import Path

import pytest

from mlmm.cli import main
from mlmm.data.coco import (
    prepare_coco,
    read_caption_json,
    read_karpathy,
    read_mic,
    tokenise_japanese,
    tokenise_mic,
)
from mlmm.data.fetch import MARKER, read_manifest
from mlmm.data.multi30k import comparable_captions, image_list
from mlmm.errors import InputError
from mlmm.io import RECORD_SUFFIX, read_lines, sha256_file

# (filepath, cocoid, Karpathy split); image i has sentences "image i caption k"
IMAGES = [
    ("val2014", 42, "test"),
    ("train2014", 9, "train"),
    ("val2014", 73, "restval"),
    ("val2014", 74, "val"),
    ("train2014", 25, "train"),
    ("val2014", 88, "restval"),
]
MIC_IMAGES = ["train2014/COCO_train2014_000000000025.jpg", "val2014/COCO_val2014_000000000073.jpg"]


def coco_path(filepath: str, cocoid: int) -> str:
    return f"{filepath}/COCO_{filepath}_{cocoid:012d}.jpg"


def karpathy_json(n_sentences: int = 6) -> dict:
    images = []
    for i, (filepath, cocoid, split) in enumerate(IMAGES):
        sentences = [
            {"tokens": ["Image", str(i), "caption", str(k)], "raw": f"Image {i} caption {k}."}
            for k in range(1, n_sentences + 1)
        ]
        images.append(
            {
                "filepath": filepath,
                "filename": Path(coco_path(filepath, cocoid)).name,
                "imgid": i,
                "cocoid": cocoid,
                "split": split,
                "sentences": sentences,
            }
        )
    return {"images": images, "dataset": "coco"}


def stair_json(cocoids, n: int = 6, first_id: int = 1000) -> dict:
    """n captions per image, annotation ids in reverse order of the caption number."""
    annotations = []
    for cocoid in cocoids:
        for k in range(1, n + 1):
            annotations.append(
                {
                    "image_id": cocoid,
                    "id": first_id + 100 * cocoid - k,
                    "caption": f"犬 が {k} 匹。\n",
                }
            )
    return {"images": [{"id": c} for c in cocoids], "annotations": annotations}


def write_mic(directory: Path, images=MIC_IMAGES, per_image: int = 5) -> Path:
    directory.mkdir(parents=True, exist_ok=True)
    (directory / "images.txt").write_text("".join(f"{p}\n" for p in images))
    text = {
        "en": "A man's “dog” runs.",
        "fr": "L'homme court.",
        "de": "Ein Hund läuft.",
    }
    for lang, caption in text.items():
        lines = [f"{caption} {i}.{k}" for i in range(len(images)) for k in range(per_image)]
        (directory / f"captions.{lang}").write_text("\n".join(lines) + "\n")
    return directory


@pytest.fixture
def inputs(tmp_path):
    src = tmp_path / "src"
    src.mkdir()
    (src / "dataset_coco.json").write_text(json.dumps(karpathy_json()))
    cocoids = [c for _, c, _ in IMAGES]
    (src / "stair_train.json").write_text(json.dumps(stair_json(cocoids[:3])))
    (src / "stair_val.json").write_text(json.dumps(stair_json(cocoids[3:])))
    write_mic(src / "mic")
    return {
        "karpathy": str(src / "dataset_coco.json"),
        "japanese": [str(src / "stair_train.json"), str(src / "stair_val.json")],
        "mic": str(src / "mic"),
    }


def test_read_karpathy_folds_restval_into_train_and_keeps_five(inputs):
    images = read_karpathy(inputs["karpathy"])
    assert [i.split for i in images] == ["test", "train", "train", "val", "train", "train"]
    assert images[0].path == "val2014/COCO_val2014_000000000042.jpg"
    assert images[1].captions == tuple(f"image 1 caption {k}" for k in range(1, 6))


def test_read_karpathy_from_the_zip(tmp_path):
    archive = tmp_path / "caption_datasets.zip"
    with zipfile.ZipFile(archive, "w") as z:
        z.writestr("dataset_flickr8k.json", "{}")
        z.writestr("dataset_coco.json", json.dumps(karpathy_json()))
    assert [i.cocoid for i in read_karpathy(archive)] == [c for _, c, _ in IMAGES]


@pytest.mark.parametrize(
    "edit, key",
    [
        (lambda d: d["images"][2].update(split="dev"), "images[2]"),
        (lambda d: d["images"][1]["sentences"].pop(), "images[1]"),
        (lambda d: d["images"][3]["sentences"][0].update(tokens=[]), "images[3].tokens"),
        (lambda d: d["images"][4].pop("cocoid"), "images[4].cocoid"),
    ],
)
def test_bad_karpathy_entries_name_their_key(tmp_path, edit, key):
    data = karpathy_json(n_sentences=5)
    edit(data)
    path = tmp_path / "dataset_coco.json"
    path.write_text(json.dumps(data))
    with pytest.raises(InputError, match=re.escape(f"key '{key}'")):
        read_karpathy(path)


def test_caption_json_orders_by_annotation_id_over_files(tmp_path):
    a, b = tmp_path / "a.json", tmp_path / "b.json"
    a.write_text(json.dumps({"annotations": [{"image_id": 1, "id": 7, "caption": "後"}]}))
    b.write_text(json.dumps({"annotations": [{"image_id": 1, "id": 3, "caption": "前"}]}))
    assert read_caption_json([a, b]) == {1: ["前", "後"]}
    with pytest.raises(InputError, match="unique annotation ids"):
        read_caption_json([a, a])


def test_japanese_tokenisation_is_mecab_surface_forms():
    tokens = tokenise_japanese("赤い犬が公 園で走っている。\n")
    assert " ".join(tokens) == "赤い 犬 が 公園 で 走っ て いる 。"
    assert tokenise_japanese("ＤＶＤを見る") == ["ｄｖｄ", "を", "見る"]


def test_mic_tokens_keep_elisions_like_ted_cldc_and_english_like_karpathy():
    assert tokenise_mic("L'huile d’histoire, 1.2 fois.", "fr") == [
        "l'huile", "d'histoire", ",", "1.2", "fois", "."
    ]
    assert tokenise_mic("Ein „Hund“ läuft.", "de") == ["ein", "„", "hund", "“", "läuft", "."]
    assert tokenise_mic("A man's “dog” runs.", "en") == ["a", "man's", "dog", "runs"]


def test_mic_needs_five_lines_per_image(tmp_path):
    mic = write_mic(tmp_path / "mic")
    images, captions = read_mic(mic)
    assert images == MIC_IMAGES
    assert captions["de"][1] == [f"Ein Hund läuft. 1.{k}" for k in range(5)]
    write_mic(tmp_path / "short", per_image=4)
    with pytest.raises(InputError, match=r"captions.en: expected 10 lines .*2 images.*found 8"):
        read_mic(tmp_path / "short")


def test_prepare_writes_the_multi30k_layout(inputs, tmp_path, caplog):
    out = tmp_path / "results/coco"
    with caplog.at_level(logging.WARNING):
        counts = prepare_coco(out, inputs["karpathy"], inputs["japanese"], inputs["mic"])
    assert counts == {"train": 4, "val": 1, "test": 1, "pivot_train": 2, "mic": 2}
    paths = {c: coco_path(f, c) for f, c, _ in IMAGES}
    assert image_list(out, "train") == [paths[9], paths[73], paths[25], paths[88]]
    assert image_list(out, "test") == [paths[42]]
    assert image_list(out, "pivot_train") == [paths[9], paths[88]]
    assert image_list(out, "mic") == MIC_IMAGES
    task2 = out / "data/task2"
    for split in counts:
        assert read_lines(task2 / f"image_splits/{split}_images.txt") == image_list(out, split)
    # English: Karpathy tokens lowercased, first five; Japanese: first five by annotation id
    assert comparable_captions(out, "val", "en")[0][4] == ["image", "3", "caption", "5"]
    assert comparable_captions(out, "test", "ja")[0] == [
        ["犬", "が", str(k), "匹", "。"] for k in range(6, 1, -1)
    ]
    assert comparable_captions(out, "pivot_train", "en")[1][0] == ["image", "5", "caption", "1"]
    assert comparable_captions(out, "mic", "fr")[1][2] == ["l'homme", "court", ".", "1.2"]
    assert not list(task2.glob("tok/pivot_train.*.ja")) and not list(task2.glob("tok/mic.*.ja"))
    assert len(list(task2.glob("tok/*"))) == 5 * (3 * 2 + 1 + 3)
    manifest = read_manifest(out / MARKER)
    files = sorted(p.relative_to(out).as_posix() for p in (out / "data").rglob("*") if p.is_file())
    assert sorted(manifest) == files
    assert all(sha256_file(out / rel) == digest for rel, digest in manifest.items())
    record = json.loads((out / "provenance.json").read_text())
    assert record["images"] == counts
    assert len(record["inputs"]) == 1 + 2 + 4 and not any(i["verified"] for i in record["inputs"])
    assert sum("sha256 not verified" in r.message for r in caplog.records) == 7
    assert [p.name for p in out.parent.iterdir()] == ["coco"]


def test_missing_japanese_captions_are_counted_per_split(inputs, tmp_path):
    yj = tmp_path / "yjcaptions26k_clean.json"
    yj.write_text(json.dumps(stair_json([9, 25])))  # train2014 images only, like YJ Captions
    out = tmp_path / "coco"
    with pytest.raises(InputError) as caught:
        prepare_coco(out, inputs["karpathy"], [str(yj)], inputs["mic"])
    message = str(caught.value)
    assert "yjcaptions26k_clean.json" in message
    assert "fewer for 2 train, 1 val, 1 test images (first cocoids: 42, 73, 74, 88)" in message
    assert "YJ Captions covers only 26,500 train2014 images" in message
    assert not out.exists() and list(tmp_path.glob(".coco*")) == []


def test_fewer_than_five_japanese_captions_is_an_error(inputs, tmp_path):
    short = tmp_path / "short.json"
    cocoids = [c for _, c, _ in IMAGES]
    data = stair_json(cocoids[:-1], n=5)
    data["annotations"] += stair_json([88], n=4)["annotations"]
    short.write_text(json.dumps(data))
    with pytest.raises(InputError, match=r"fewer for 1 train images \(first cocoids: 88\)$"):
        prepare_coco(tmp_path / "coco", inputs["karpathy"], [str(short)], inputs["mic"])


def test_mic_errors_leave_no_output(inputs, tmp_path):
    write_mic(Path(inputs["mic"]), per_image=6)
    with pytest.raises(InputError, match="captions.en: expected 10 lines"):
        prepare_coco(tmp_path / "coco", inputs["karpathy"], inputs["japanese"], inputs["mic"])
    write_mic(Path(inputs["mic"]), images=["val2014/COCO_val2014_000000999999.jpg"])
    with pytest.raises(InputError, match=r"images.txt, line 1: expected an image of the Karpathy"):
        prepare_coco(tmp_path / "coco", inputs["karpathy"], inputs["japanese"], inputs["mic"])
    assert [p.name for p in tmp_path.iterdir()] == ["src"]


def test_sha256_checked_and_recorded(inputs, tmp_path, caplog):
    karpathy = inputs["karpathy"]
    good = {  # keyed by file name or by location
        "dataset_coco.json": sha256_file(karpathy),
        f"{inputs['mic']}/captions.de": sha256_file(Path(inputs["mic"]) / "captions.de"),
    }
    out = tmp_path / "coco"
    with caplog.at_level(logging.WARNING):
        prepare_coco(out, karpathy, inputs["japanese"], inputs["mic"], sha256=good)
    verified = {
        Path(i["source"]).name: i["verified"]
        for i in json.loads((out / "provenance.json").read_text())["inputs"]
    }
    assert verified == {
        "dataset_coco.json": True,
        "stair_train.json": False,
        "stair_val.json": False,
        "images.txt": False,
        "captions.en": False,
        "captions.fr": False,
        "captions.de": True,
    }
    assert not any("dataset_coco.json" in r.message for r in caplog.records)
    before = (out / MARKER).read_text()
    bad = {"dataset_coco.json": "0" * 64}
    with pytest.raises(
        InputError,
        match=f"dataset_coco.json: expected sha256 {'0' * 64}.*found {good['dataset_coco.json']}",
    ):
        prepare_coco(out, karpathy, inputs["japanese"], inputs["mic"], sha256=bad)
    assert (out / MARKER).read_text() == before  # the old complete output stays as it was
    with pytest.raises(InputError, match="'typo.json'.*found no input"):
        prepare_coco(
            out, karpathy, inputs["japanese"], inputs["mic"], sha256={"typo.json": "0" * 64}
        )
    with pytest.raises(InputError, match="MIC: one per file, images.txt.*found no input"):
        prepare_coco(
            out, karpathy, inputs["japanese"], inputs["mic"], sha256={inputs["mic"]: "0" * 64}
        )


def test_url_inputs_are_downloaded_and_reused(inputs, tmp_path):
    urls = {k: Path(v).as_uri() for k, v in inputs.items() if k != "japanese"}
    japanese = [Path(p).as_uri() for p in inputs["japanese"]]
    sha = {"dataset_coco.json": sha256_file(inputs["karpathy"])}
    downloads = tmp_path / "downloads"
    counts = prepare_coco(
        tmp_path / "coco",
        urls["karpathy"],
        japanese,
        urls["mic"],
        sha256=sha,
        download_dir=downloads,
    )
    assert counts["mic"] == 2
    kept = [p.name for p in downloads.iterdir() if not p.name.endswith(RECORD_SUFFIX)]
    assert sorted(kept) == sorted(
        [
            "dataset_coco.json",
            "stair_train.json",
            "stair_val.json",
            "images.txt",
            "captions.en",
            "captions.fr",
            "captions.de",
        ]
    )
    Path(inputs["karpathy"]).unlink()  # a verified download is re-used, not fetched again
    prepare_coco(
        tmp_path / "coco",
        urls["karpathy"],
        japanese,
        urls["mic"],
        sha256=sha,
        download_dir=downloads,
    )


def test_paper_pivot_split_is_every_image_but_the_mic_ones(inputs, tmp_path):
    counts = prepare_coco(
        tmp_path / "paper", inputs["karpathy"], inputs["japanese"], inputs["mic"],
        pivot_split="paper",
    )
    assert counts["pivot_train"] == 6 - len(MIC_IMAGES)
    z1 = image_list(tmp_path / "paper", "pivot_train")
    assert set(MIC_IMAGES).isdisjoint(z1) and len(set(z1)) == len(z1)


def test_cli(inputs, tmp_path, capsys):
    out = tmp_path / "coco"
    args = ["prepare-coco", "--karpathy", inputs["karpathy"], "--japanese", *inputs["japanese"]]
    args += ["--mic", inputs["mic"], "--out", str(out), "--pivot-split", "karpathy"]
    assert main(args) == 0
    assert "train: 4 images, val: 1 images, test: 1 images" in capsys.readouterr().out
    assert main(args + ["--sha256", f"{inputs['mic']}/captions.fr=" + "1" * 64]) == 2
    errors = [line for line in capsys.readouterr().err.splitlines() if " error: " in line]
    assert len(errors) == 1, errors  # (the log's start and end lines around it)
    assert errors[0].startswith("mlmm prepare-coco: error: ") and "captions.fr" in errors[0]


def test_a_download_with_the_wrong_sha256_is_not_kept(inputs, tmp_path):
    downloads = tmp_path / "downloads"
    url = Path(inputs["karpathy"]).as_uri()
    with pytest.raises(InputError, match="dataset_coco.json: expected sha256 1111"):
        prepare_coco(
            tmp_path / "coco",
            url,
            inputs["japanese"],
            inputs["mic"],
            sha256={"dataset_coco.json": "1" * 64},
            download_dir=downloads,
        )
    assert list(downloads.iterdir()) == [] and not (tmp_path / "coco").exists()


def test_japanese_from_a_stair_release_archive(tmp_path):
    """STAIR Captions ship as a .tar.gz with plain and *_tokenized.json files: the plain ones."""
    import tarfile

    plain = {"annotations": [{"id": 2, "image_id": 7, "caption": "犬が走る。"},
                             {"id": 1, "image_id": 7, "caption": "白い犬。"}]}  # fmt: skip
    tokenized = {"annotations": [{"id": 3, "image_id": 7, "caption": "犬 が 走る 。"}]}
    folder = tmp_path / "stair"
    folder.mkdir()
    (folder / "stair_captions_v1.2_train.json").write_text(json.dumps(plain), encoding="utf-8")
    (folder / "stair_captions_v1.2_train_tokenized.json").write_text(
        json.dumps(tokenized), encoding="utf-8"
    )
    archive = tmp_path / "stair_captions_v1.2.tar.gz"
    with tarfile.open(archive, "w:gz") as handle:
        handle.add(folder, arcname="stair_captions_v1.2")
    assert read_caption_json([archive]) == {7: ["白い犬。", "犬が走る。"]}


def test_image_archives_are_checked_and_unpacked_as_a_whole(tmp_path):
    from mlmm.data.coco import fetch_images

    archives = []
    for folder in ("train2014", "val2014"):
        path = tmp_path / f"{folder}.zip"
        with zipfile.ZipFile(path, "w") as handle:
            handle.writestr(f"{folder}/COCO_{folder}_000000000001.jpg", b"jpeg bytes")
        archives.append(path.as_uri())
    out = tmp_path / "images"
    sources = fetch_images(archives, out)
    assert (out / "val2014/COCO_val2014_000000000001.jpg").read_bytes() == b"jpeg bytes"
    assert set(read_manifest(out / MARKER)) == {"train2014.zip", "val2014.zip"}
    assert [s.verified for s in sources] == [False, False]
    with pytest.raises(InputError, match="val2014.zip: expected sha256"):
        fetch_images(archives, tmp_path / "again", sha256={"val2014.zip": "0" * 64})
    assert not (tmp_path / "again").exists()
    assert sorted(p.name for p in tmp_path.iterdir() if p.name.startswith(".")) == []
