"""The demo world: exact Multi30K layout, determinism, grammar of each language, CLI."""

from __future__ import annotations

import gzip
import hashlib
import re
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
from PIL import Image

from mlmm.cli import main
from mlmm.demo import generate_world
from mlmm.demo.grammar import Content, Mention, raw, tokens
from mlmm.demo.scenes import SHAPES
from mlmm.demo.sts import similarity
from mlmm.demo.world import MARKER, split_sizes
from mlmm.errors import InputError
from mlmm.io import DIR_RECORD

N = 40
TASK1 = ("train", "val", "test_2016_flickr")
TASK2 = ("train", "val", "test_2016")
LANGS = ("en", "de", "fr", "cs")


@pytest.fixture(scope="module")
def world(tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("demo") / "world"
    generate_world(out, seed=3, images=N)
    return out


def lines(path: Path) -> list[str]:
    data = gzip.decompress(path.read_bytes()) if path.suffix == ".gz" else path.read_bytes()
    text = data.decode("utf-8")
    assert text.endswith("\n")
    return text[:-1].split("\n")


def all_tok(world: Path, lang: str) -> list[str]:
    return [x for s in TASK1 for x in lines(world / f"data/task1/tok/{s}.lc.norm.tok.{lang}")]


def test_layout_is_exactly_the_contract(world: Path) -> None:
    expected = {"MANIFEST.sha256"}
    for s in TASK1:
        expected.add(f"data/task1/image_splits/{s}.txt")
        for lang in LANGS:
            expected |= {f"data/task1/raw/{s}.{lang}.gz", f"data/task1/tok/{s}.lc.norm.tok.{lang}"}
    for s in TASK2:
        expected.add(f"data/task2/image_splits/{s}_images.txt")
        for k in range(1, 6):
            for lang in ("en", "de"):
                expected.add(f"data/task2/raw/{s}.{k}.{lang}.gz")
                expected.add(f"data/task2/tok/{s}.lc.norm.tok.{k}.{lang}")
    for year in ("2014", "2015"):
        expected |= {f"sts/{year}/STS.input.images.txt", f"sts/{year}/STS.gs.images.txt"}
    expected |= {f"muse/en-{lang}.txt" for lang in ("de", "fr", "cs")}
    expected |= {f"images/{i:06d}.jpg" for i in range(N)}
    found = {p.relative_to(world).as_posix() for p in world.rglob("*") if p.is_file()}
    assert found == expected | {MARKER, DIR_RECORD}  # and the write layer's record of it


def test_splits_and_line_counts(world: Path) -> None:
    sizes = split_sizes(N)
    seen: list[str] = []
    for s1, s2 in zip(TASK1, TASK2, strict=True):
        names = lines(world / f"data/task1/image_splits/{s1}.txt")
        assert names == lines(world / f"data/task2/image_splits/{s2}_images.txt")
        assert len(names) == sizes[s1]
        assert all(re.fullmatch(r"\d{6}\.jpg", n) for n in names)
        seen += names
        for lang in LANGS:
            assert len(lines(world / f"data/task1/raw/{s1}.{lang}.gz")) == len(names)
            assert len(lines(world / f"data/task1/tok/{s1}.lc.norm.tok.{lang}")) == len(names)
        for k in range(1, 6):
            for lang in ("en", "de"):
                assert len(lines(world / f"data/task2/raw/{s2}.{k}.{lang}.gz")) == len(names)
                tok = lines(world / f"data/task2/tok/{s2}.lc.norm.tok.{k}.{lang}")
                assert len(tok) == len(names) and all(tok)
    assert sorted(seen) == [f"{i:06d}.jpg" for i in range(N)]  # each image in one split


def test_images_are_real_jpegs(world: Path) -> None:
    with Image.open(world / "images/000000.jpg") as image:
        assert image.format == "JPEG" and image.size == (256, 256) and image.mode == "RGB"
        pixels = np.asarray(image, dtype=np.float32)
    assert pixels.std() > 10  # a scene, not a flat colour


def test_tok_is_lowercased_raw_with_punctuation_split(world: Path) -> None:
    for lang in LANGS:
        raws = lines(world / f"data/task1/raw/train.{lang}.gz")
        toks = lines(world / f"data/task1/tok/train.lc.norm.tok.{lang}")
        for r, t in zip(raws, toks, strict=True):
            assert r[0].isupper() and r.endswith(".") and not r.endswith(" .")
            assert t == t.lower() and t.endswith(" .")
            squeezed = t.replace("&apos; ", "'").replace(" ", "")
            assert squeezed == r.lower().replace(" ", "")


def test_task1_english_is_one_of_the_five_task2_captions(world: Path) -> None:
    task1 = lines(world / "data/task1/raw/train.en.gz")
    task2 = [lines(world / f"data/task2/raw/train.{k}.en.gz") for k in range(1, 6)]
    assert all(task1[i] in {c[i] for c in task2} for i in range(len(task1)))


def test_task2_captions_are_independent_and_varied(world: Path) -> None:
    en = [lines(world / f"data/task2/tok/train.lc.norm.tok.{k}.en") for k in range(1, 6)]
    distinct = [len({c[i] for c in en}) for i in range(len(en[0]))]
    assert np.mean(distinct) > 4  # five annotators rarely say the same thing
    # German task2 is not a translation of English task2: shape words differ in places
    de = lines(world / "data/task2/tok/train.lc.norm.tok.1.de")
    circle_en = ["circle" in c for c in en[0]]
    circle_de = ["kreis" in c for c in de]
    assert circle_en != circle_de


def test_german_case_and_gender(world: Path) -> None:
    text = " ".join(all_tok(world, "de"))
    assert re.search(r"\bes gibt (einen|eine|ein) ", text)
    c = Content("exist", (Mention("circle", "red", "big"),), style=(0, 0, 0, 0))
    assert raw(tokens(c, "de"), "de") == "Es gibt einen großen roten Kreis."
    c = Content(
        "relation",
        (Mention("star", "red"), Mention("square", "blue")),
        relation="next",
        style=(0, 0, 0, 1),
    )
    assert raw(tokens(c, "de"), "de") == "Ein roter Stern neben dem blauen Quadrat."
    assert " ".join(tokens(c, "cs")) == "červená hvězda vedle modrého čtverce ."
    assert " ".join(tokens(c, "fr")) == "une étoile rouge à côté du carré bleu ."
    c = Content("list", (Mention("heart", "green"),), style=(1, 0, 0, 0))
    assert raw(tokens(c, "de"), "de") == "Ein Bild mit einem grünen Herzen."
    assert raw(tokens(c, "cs"), "cs") == "Obrázek se zeleným srdcem."


def test_french_adjective_order_and_agreement(world: Path) -> None:
    text = " ".join(all_tok(world, "fr"))
    nouns = "cercle|carré|triangle|étoile|cœur|croix|losange|flèche|nuage"
    assert re.search(rf"\b(un|une) ({nouns}) (rouge|bleue?|verte?|jaune|noire?|blanc)\b", text)
    assert not re.search(r"\bun (rouge|bleu|vert|noir|blanc) ", text)  # colour never first
    c = Content("exist", (Mention("star", "white", "small"),), style=(1, 0, 0, 0))
    assert raw(tokens(c, "fr"), "fr") == "Une petite étoile blanche."
    c = Content(
        "relation",
        (Mention("circle"), Mention("star", "blue")),
        relation="above",
        style=(0, 0, 0, 1),
    )
    assert " ".join(tokens(c, "fr")) == "un cercle au-dessus de l' étoile bleue ."


def test_czech_has_no_articles_and_agrees(world: Path) -> None:
    words = set(" ".join(all_tok(world, "cs")).split())
    assert not words & {"a", "an", "the", "un", "une", "ein", "eine"} - {"a"}  # a = 'and'
    assert any(w.endswith("á") for w in words) and any(w.endswith("ý") for w in words)
    c = Content("exist", (Mention("star", "red"),), style=(1, 0, 0, 0))
    assert raw(tokens(c, "cs"), "cs") == "Červená hvězda."
    c = Content("count", (Mention("star", "red"), Mention("circle")), place="snow", count=5)
    assert raw(tokens(c, "cs"), "cs") == "Pět tvarů ve sněhu, včetně červené hvězdy a kruhu."
    german = "Fünf Formen im Schnee, darunter ein roter Stern und ein Kreis."
    assert raw(tokens(c, "de"), "de") == german


def test_translations_agree_on_content(world: Path) -> None:
    """task1 line i says the same thing in every language (same shapes mentioned)."""
    shapes = {
        "en": list(SHAPES),
        "de": ["kreis", "quadrat", "dreieck", "stern", "herz", "kreuz", "raute", "pfeil", "wolke"],
        "cs": ["kruh", "čtver", "trojúhelník", "hvězd", "srdc", "kříž", "kosočtver", "šip", "mrak"],
    }
    tok = {lang: all_tok(world, lang) for lang in shapes}
    for i, sentence in enumerate(tok["en"]):
        mentioned = [s in sentence.split() for s in shapes["en"]]
        for lang in ("de", "cs"):
            other = [any(w.startswith(s) for w in tok[lang][i].split()) for s in shapes[lang]]
            assert other == mentioned, (sentence, tok[lang][i])


def test_sts_layout_and_graded_scores(world: Path) -> None:
    for year in ("2014", "2015"):
        pairs = lines(world / f"sts/{year}/STS.input.images.txt")
        gold = lines(world / f"sts/{year}/STS.gs.images.txt")
        assert len(pairs) == len(gold) >= 150
        assert all(len(p.split("\t")) == 2 and p.split("\t")[0][0].isupper() for p in pairs)
        scores = np.array([float(g) for g in gold if g])
        assert scores.min() >= 0 and scores.max() <= 5
        assert np.histogram(scores, bins=5, range=(0, 5))[0].min() > 5  # spread over the range
    assert "" in lines(world / "sts/2015/STS.gs.images.txt")  # unscored pairs, as the real file
    a = Content("list", (Mention("circle", "red"), Mention("star", "blue")), place="grass")
    b = Content("list", (Mention("circle", "red"),), style=(1, 1, 1, 1))
    assert similarity(a, a) == 5.0 and 0 < similarity(a, b) < 5


def test_muse_dictionaries(world: Path) -> None:
    de = [line.split(" ") for line in lines(world / "muse/en-de.txt")]
    assert all(len(pair) == 2 for pair in de)
    assert ["circle", "kreis"] in de and ["red", "roten"] in de and ["heart", "herzen"] in de
    cs = lines(world / "muse/en-cs.txt")
    assert "square čtverce" in cs and not any(line.startswith("the ") for line in cs)
    assert "star étoile" in lines(world / "muse/en-fr.txt")


def test_manifest_covers_data(world: Path) -> None:
    entries = dict(line.split("  ")[::-1] for line in lines(world / "MANIFEST.sha256"))
    files = {p.relative_to(world).as_posix() for p in (world / "data").rglob("*") if p.is_file()}
    assert set(entries) == files
    for rel, digest in entries.items():
        assert hashlib.sha256((world / rel).read_bytes()).hexdigest() == digest


def test_deterministic_for_a_seed(world: Path, tmp_path: Path) -> None:
    generate_world(tmp_path / "again", seed=3, images=N)
    generate_world(tmp_path / "other", seed=4, images=N)

    def digests(root: Path) -> dict[str, str]:
        return {
            p.relative_to(root).as_posix(): hashlib.sha256(p.read_bytes()).hexdigest()
            for p in root.rglob("*")
            if p.is_file()
        }

    assert digests(tmp_path / "again") == digests(world)
    assert digests(tmp_path / "other")["MANIFEST.sha256"] != digests(world)["MANIFEST.sha256"]


def test_bad_arguments(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(InputError, match="at least 30 images"):
        generate_world(tmp_path / "w", seed=1, images=10)
    assert main(["demo-world", str(tmp_path / "w"), "--images", "5"]) == 2
    assert "--images: expected a number >= 30, found 5" in capsys.readouterr().err  # the schema
    assert not (tmp_path / "w").exists()  # nothing written
    (tmp_path / "busy").mkdir()
    (tmp_path / "busy" / "notes.txt").write_text("mine\n")
    with pytest.raises(InputError, match="earlier demo world"):
        generate_world(tmp_path / "busy", seed=1, images=30)
    assert (tmp_path / "busy" / "notes.txt").read_text() == "mine\n"


def test_cli_help_and_run(tmp_path: Path) -> None:
    help_text = subprocess.run(
        [sys.executable, "-m", "mlmm", "demo-world", "--help"],
        capture_output=True,
        text=True,
        check=True,
    ).stdout
    assert "--images" in help_text and "--seed" in help_text
    assert main(["demo-world", str(tmp_path / "w"), "--seed", "2", "--images", "30"]) == 0
    assert len(lines(tmp_path / "w/data/task1/image_splits/train.txt")) == split_sizes(30)["train"]
    # an earlier world is replaced, also without its manifest (Snakemake deletes the output)
    (tmp_path / "w/MANIFEST.sha256").unlink()
    assert main(["demo-world", str(tmp_path / "w"), "--seed", "2", "--images", "36"]) == 0
    assert len(list((tmp_path / "w/images").iterdir())) == 36
    # an edited world is refused (one line, nothing changed) unless --force
    edited = tmp_path / "w/data/task1/image_splits/val.txt"
    edited.write_text("mine\n")
    assert main(["demo-world", str(tmp_path / "w"), "--images", "30"]) == 2
    assert edited.read_text() == "mine\n"
    assert main(["demo-world", str(tmp_path / "w"), "--images", "30", "--force"]) == 0
    assert edited.read_text() != "mine\n"
