"""Validation of a Multi30K copy, vocabularies, Jaccard overlaps and Kádár Table 1."""

from __future__ import annotations

import gzip
from collections import Counter
from pathlib import Path

import pandas as pd
import pytest
from helpers.multi30k import SIZES, WORDS, write_tree

from mlmm.cli import main
from mlmm.data.fetch import MARKER, fetch, make_manifest
from mlmm.data.multi30k import COMPARABLE_LANGUAGES, TRANSLATION_LANGUAGES
from mlmm.data.prepare import (
    expected_files,
    jaccard,
    union_vocabulary,
    validate,
    vocabularies,
    write_vocabularies,
)
from mlmm.data.vocab import Vocabulary
from mlmm.errors import InputError
from mlmm.results.corpus_table import kadar_table1
from mlmm.tables import PAPER_COLUMNS

SHARED = Path(__file__).resolve().parents[1].parent / "shared"


@pytest.fixture
def tree(tmp_path):
    return write_tree(tmp_path / "m30k")


def test_tree_has_exactly_the_expected_files(tree):
    assert sorted(str(p.relative_to(tree)) for p in tree.rglob("*") if p.is_file()) == (
        expected_files()
    )


def test_validate_accepts_a_good_copy(tree, capsys):
    assert validate(tree) == SIZES
    assert main(["validate-multi30k", str(tree)]) == 0
    assert "train: 6 images" in capsys.readouterr().out


def _drop_last_line(path: Path) -> None:
    if path.suffix == ".gz":
        lines = gzip.decompress(path.read_bytes()).splitlines(keepends=True)
        path.write_bytes(gzip.compress(b"".join(lines[:-1])))
    else:
        lines = path.read_bytes().splitlines(keepends=True)
        path.write_bytes(b"".join(lines[:-1]))


@pytest.mark.parametrize(
    "rel",
    [
        "data/task1/tok/val.lc.norm.tok.fr",
        "data/task1/raw/train.cs.gz",
        "data/task2/raw/test_2016.3.de.gz",
        "data/task2/tok/train.lc.norm.tok.5.en",
    ],
)
def test_line_count_differing_from_the_split_list(tree, rel):
    _drop_last_line(tree / rel)
    n = SIZES["train"] if "train" in rel else 2
    message = rf"{rel}, line {n}: expected {n} captions, one per image of .*found {n - 1} lines"
    with pytest.raises(InputError, match=message):
        validate(tree)


def test_extra_line_names_the_first_extra_line(tree):
    path = tree / "data/task1/tok/train.lc.norm.tok.de"
    path.write_text(path.read_text() + "noch ein satz\n")
    with pytest.raises(InputError, match=r"train\.lc\.norm\.tok\.de, line 7: expected 6"):
        validate(tree)


def test_missing_file(tree):
    (tree / "data/task2/tok/val.lc.norm.tok.2.de").unlink()
    with pytest.raises(InputError, match=r"val\.lc\.norm\.tok\.2\.de: expected an existing file"):
        validate(tree)


def test_corrupt_gzip(tree):
    path = tree / "data/task1/raw/val.en.gz"
    path.write_bytes(path.read_bytes()[:-12])
    with pytest.raises(InputError, match=r"val\.en\.gz: expected a readable gzip file"):
        validate(tree)


def test_non_utf8_text(tree):
    path = tree / "data/task1/tok/train.lc.norm.tok.cs"
    lines = path.read_bytes().splitlines(keepends=True)
    lines[3] = b"p\xe9s ok\n"
    path.write_bytes(b"".join(lines))
    with pytest.raises(InputError, match=r"train\.lc\.norm\.tok\.cs, line 4: expected UTF-8"):
        validate(tree)


def test_empty_caption(tree):
    path = tree / "data/task2/raw/train.2.en.gz"
    lines = gzip.decompress(path.read_bytes()).splitlines(keepends=True)
    lines[2] = b"  \n"
    path.write_bytes(gzip.compress(b"".join(lines)))
    with pytest.raises(InputError, match=r"train\.2\.en\.gz, line 3: expected a non-empty line"):
        validate(tree)


def test_task2_image_list_must_match_task1(tree):
    path = tree / "data/task2/image_splits/val_images.txt"
    path.write_text("val0.jpg\nother.jpg\n")
    with pytest.raises(InputError, match=r"val_images\.txt, line 2: expected the images of"):
        validate(tree)


def test_fetch_of_a_malformed_copy_writes_no_marker(tree, tmp_path):
    _drop_last_line(tree / "data/task1/tok/val.lc.norm.tok.en")
    manifest = tmp_path / "own.sha256"
    manifest.write_text(make_manifest(tree, expected_files()))
    out = tmp_path / "copy"
    with pytest.raises(InputError, match=r"val\.lc\.norm\.tok\.en"):
        fetch(manifest, out, mirror=tree, validate=validate)
    assert not (out / MARKER).exists()


def test_vocab_threshold_keeps_words_seen_at_least_min_count_times():
    counts = Counter({"four": 4, "three": 3, "five": 5, "one": 1})
    assert Vocabulary(counts, 4).known_words() == {"four", "five"}
    assert Vocabulary(counts, 5).known_words() == {"five"}
    assert Vocabulary(counts, 1).known_words() == set(counts)


def test_vocabularies_count_the_training_split(tree):
    vocabs = vocabularies(tree, min_count=6)
    # every word occurs once per training caption (6 images; 30 comparable captions)
    assert vocabs["translation"]["cs"].known_words() == {"pes", "ok"}
    assert vocabs["translation"]["en"].counts["dog"] == 6
    assert vocabs["comparable"]["de"].counts["hund"] == 30
    assert "w0" not in vocabs["translation"]["en"].known_words()
    assert vocabularies(tree, min_count=7)["translation"]["en"].known_words() == set()
    union = vocabs["translation"]["union"]
    assert union.known_words() == set().union(*map(set, WORDS.values()))
    assert union.counts["ok"] == 4 * 6 and union.counts["x"] == 2 * 6


def test_union_vocabulary_is_the_set_union_of_kept_words():
    a = Vocabulary(Counter({"x": 4, "y": 2}), 4)
    b = Vocabulary(Counter({"x": 5, "y": 2, "z": 9}), 4)
    union = union_vocabulary([a, b])
    assert union.known_words() == {"x", "z"}  # 'y' is rare in both, though seen 4 times in all
    assert union.counts == {"x": 9, "z": 9}


def test_jaccard_on_a_hand_built_case():
    assert jaccard({"a", "b", "c"}, {"b", "c", "d", "e"}) == pytest.approx(2 / 5)
    assert jaccard({"a"}, {"b"}) == 0.0
    assert jaccard({"a", "b"}, {"a", "b"}) == 1.0


def test_write_vocabularies_files_round_trip(tree, tmp_path):
    out = tmp_path / "vocab"
    written = write_vocabularies(tree, out, min_count=6)
    names = sorted(p.name for p in written)
    assert names == sorted(
        [f"translation.{n}.tsv" for n in [*TRANSLATION_LANGUAGES, "union"]]
        + [f"comparable.{n}.tsv" for n in [*COMPARABLE_LANGUAGES, "union"]]
        + ["all.union.tsv"]
    )
    assert Vocabulary.load(out / "translation.fr.tsv").known_words() == {"un", "chien", "ok"}
    assert (out / "vocab.json").is_file()


def _paper_tables(directory: Path) -> Path:
    directory.mkdir()
    note = (
        "vocabulary overlap (row language vs column language); only the upper triangle is printed"
    )
    rows = [["kadar2018", 1, "dataset statistic", note, "m30k", "en-de", "", "jaccard", 0.5, ""]]
    rows += [
        [
            "kadar2018",
            1,
            "dataset statistic",
            "sum of the four per-language vocabulary sizes",
            "m30k",
            "en+de+fr+cs",
            "",
            "vocab_total",
            14,
            "",
        ]
    ]
    pd.DataFrame(rows, columns=PAPER_COLUMNS).to_csv(
        directory / "kadar2018_table1.csv", index=False
    )
    return directory


def _cell(frame: pd.DataFrame, language: str, metric: str, column: str = "ours"):
    rows = frame[(frame["language"] == language) & (frame["metric"] == metric)]
    rows = rows[~rows["variant_note"].str.contains("not in the paper")]
    assert len(rows) == 1
    return rows[column].iloc[0]


def test_kadar_table1_on_a_hand_built_case(tree, tmp_path):
    frame, notes = kadar_table1(tree, 6, _paper_tables(tmp_path / "paper"))
    # en {a, dog, ok, x} vs de {ein, hund, ok, x}: 2 shared of 6
    assert _cell(frame, "en-de", "jaccard") == pytest.approx(2 / 6)
    assert _cell(frame, "en-de", "jaccard", "paper") == 0.5
    assert _cell(frame, "en-cs", "jaccard") == pytest.approx(1 / 5)
    assert _cell(frame, "fr-fr", "jaccard") == 1.0
    assert _cell(frame, "en+de+fr+cs", "vocab_total") == 4 + 4 + 3 + 2
    assert _cell(frame, "en+de+fr+cs", "vocab_total", "diff") == -1
    assert _cell(frame, "en+de+fr+cs", "vocab_union") == 9
    assert _cell(frame, "en+de", "vocab_union") == 6
    assert frame["metric"].iloc[0] == "jaccard" and frame["language"].iloc[0] == "en-en"
    assert any("Closest to the paper" in note for note in notes)


def test_kadar_table1_cli_without_paper_tables(tree, tmp_path):
    """--paper-tables alone: no paper column; not given: the tables the package ships."""
    stem = tmp_path / "tables/kadar2018_table1"
    argv = ["kadar-table1", "--root", str(tree), "--min-count", "6", "--out", str(stem)]
    assert main([*argv, "--paper-tables"]) == 0
    table = pd.read_csv(stem.with_suffix(".csv"))
    assert table["paper"].isna().all() and len(table) == 10 + 4 + 6 + 1
    assert main(argv) == 0
    assert pd.read_csv(stem.with_suffix(".csv"))["paper"].notna().any()
    assert stem.with_suffix(".tex").is_file()
    assert "demo world" not in stem.with_suffix(".md").read_text()
    main(["kadar-table1", "--root", str(tree), "--out", str(stem), "--demo"])
    assert "Data: the generated demo world" in stem.with_suffix(".md").read_text()


@pytest.fixture(scope="module")
def real_copy(tmp_path_factory):
    mirror = SHARED / "data/multi30k"
    if not mirror.is_dir():
        pytest.skip("no real Multi30K mirror at ../shared/data/multi30k")
    out = tmp_path_factory.mktemp("real") / "multi30k"
    manifest = Path(__file__).resolve().parents[1] / "workflow/manifests/multi30k.sha256"
    fetch(manifest, out, mirror=mirror, validate=validate)
    return out


@pytest.mark.shared_data
def test_real_multi30k_sizes_and_five_comparable_captions(real_copy):
    from mlmm.data.multi30k import comparable_captions, translation_captions

    assert validate(real_copy) == {"train": 29000, "val": 1014, "test_2016_flickr": 1000}
    assert len(translation_captions(real_copy, "val", "cs")) == 1014
    five = comparable_captions(real_copy, "test_2016_flickr", "de")
    assert len(five) == 1000 and {len(c) for c in five} == {5}


@pytest.mark.shared_data
def test_real_kadar_table1_is_close_to_the_paper(real_copy):
    paper_tables = Path(__file__).resolve().parents[1] / "resources" / "paper_tables"
    frame, notes = kadar_table1(real_copy, 4, paper_tables)
    both = frame[frame["paper"].notna()]
    assert len(both) == 14 and both["ours"].notna().all()
    jaccard_cells = both[both["metric"] == "jaccard"]
    assert (jaccard_cells["diff"].abs() < 0.011).all()
    sizes = both[both["metric"] != "jaccard"]
    assert (sizes["diff"].abs() / sizes["paper"] < 0.001).all()
    assert any(
        "Closest to the paper's four sizes" in note and ": train, >= 4" in note for note in notes
    )


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("", "line 1: expected a '#min_count<TAB>N' header, found an empty file"),
        ("#min_count\tfour\n", "line 1: expected a '#min_count<TAB>N' header"),
        ("#min_count\t4\ndog 3\n", "line 2: expected 'word<TAB>count'"),
    ],
)
def test_vocabulary_file_damage_is_one_input_error(tmp_path, text, message):
    from mlmm.fingerprint import record_made_from

    path = tmp_path / "v.tsv"
    path.write_text(text)
    # a file multi30k-vocab did not write (no record beside it) is refused before it is parsed
    with pytest.raises(InputError, match=r"v.tsv: expected its record .*rerun multi30k-vocab"):
        Vocabulary.load(path)
    record_made_from(path, {})  # its record, as if a writer had recorded the damaged bytes
    with pytest.raises(InputError, match=message):
        Vocabulary.load(path)
