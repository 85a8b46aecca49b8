"""The planning-time check of local data sets (mlmm.local_data): every missing or
incomplete set in one message, the files expected inside each checked, not only the path."""

from __future__ import annotations

from pathlib import Path

import pytest

from mlmm.local_data import (
    MIC,
    STS,
    LocalData,
    check_local_data,
    meteor_expected,
    muse_reverse_expected,
    problem,
    problems,
    ted_expected,
)


def _files(root: Path, *names: str) -> None:
    for name in names:
        (root / name).parent.mkdir(parents=True, exist_ok=True)
        (root / name).write_text("x", encoding="utf-8")


def test_a_complete_copy_passes(tmp_path):
    _files(tmp_path / "sts", *STS)
    assert problem(LocalData("retrieval.sts", tmp_path / "sts", "STS", STS)) is None


def test_an_empty_directory_is_no_copy(tmp_path):
    (tmp_path / "mic").mkdir()
    line = problem(LocalData("coco.mic.location", tmp_path / "mic", "the MIC test set", MIC))
    assert "found an empty directory" in line and "key 'coco.mic.location'" in line


def test_a_copy_missing_a_part_names_the_part(tmp_path):
    _files(tmp_path / "sts", "2014/STS.input.images.txt", "2014/STS.gs.images.txt")
    line = problem(LocalData("retrieval.sts", tmp_path / "sts", "STS", STS))
    assert "no 2015/STS.input.images.txt, no 2015/STS.gs.images.txt" in line
    assert "2014/" not in line


def test_a_file_where_a_directory_belongs(tmp_path):
    (tmp_path / "images").write_text("", encoding="utf-8")
    line = problem(LocalData("multi30k.images", tmp_path / "images", "images", ("*.jpg",)))
    assert "found a file, not a directory" in line


def test_every_missing_set_is_named_in_one_message(tmp_path):
    (tmp_path / "empty").mkdir()
    sets = [
        LocalData("multi30k.images", tmp_path / "nothing", "the Flickr30K images", ("*.jpg",)),
        LocalData("retrieval.sts", tmp_path / "empty", "STS", STS),
        LocalData("coco.mic.location", tmp_path / "also-nothing", "MIC", MIC),
    ]
    with pytest.raises(SystemExit) as stop:
        check_local_data(sets, cwd=tmp_path)
    lines = str(stop.value.code).splitlines()
    assert lines[0].startswith("config error: 3 local data set(s) missing or incomplete")
    assert [line.split("'")[1] for line in lines[1:]] == [s.key for s in sets]
    assert len(problems(sets[1:2])) == 1


def test_a_long_list_of_expected_files_is_cut(tmp_path):
    patterns = ted_expected(["ar", "de", "fr", "pt-br"], {"pt-br": "pb"})
    line = problem(LocalData("ted.path", tmp_path / "ted", "the corpus", patterns))
    assert "and 12 more" in line and len(line) < 400


def test_the_ted_tree_may_sit_below_the_configured_directory(tmp_path):
    """As mlmm.ted.corpus.find_root: the pair directories up to three levels down."""
    patterns = ted_expected(["pt-br"], {"pt-br": "pb"})
    for side in ("pb-en", "en-pb"):
        for split in ("train", "test"):
            _files(tmp_path / "ted/unpacked/ted-cldc", f"{side}/{split}/art/positive/1.ted")
    assert problem(LocalData("ted.path", tmp_path / "ted", "the corpus", patterns)) is None
    (tmp_path / "ted/unpacked/ted-cldc/en-pb/test/art/positive/1.ted").unlink()
    line = problem(LocalData("ted.path", tmp_path / "ted", "the corpus", patterns))
    assert "no **/en-pb/test/*/*/*.ted" in line


def test_meteor_needs_its_paraphrase_table_only_when_required(tmp_path):
    _files(tmp_path / "meteor", "meteor-1.5.jar")
    jar = str(tmp_path / "meteor" / "meteor-1.5.jar")
    assert problem(LocalData("nmt.meteor_jar", tmp_path / "meteor", "METEOR",
                             meteor_expected(jar, "de", False))) is None  # fmt: skip
    line = problem(
        LocalData("nmt.meteor_jar", tmp_path / "meteor", "METEOR", meteor_expected(jar, "de", True))
    )
    assert "no data/paraphrase-de.gz" in line


def test_muse_reverse_dictionaries(tmp_path):
    _files(tmp_path / "muse", "de-en.txt")
    line = problem(
        LocalData("retrieval.muse", tmp_path / "muse", "MUSE", muse_reverse_expected(["de", "ja"]))
    )
    assert "no ja-en.txt" in line and "de-en" not in line.split("found", 1)[1]
