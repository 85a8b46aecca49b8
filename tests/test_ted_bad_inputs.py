"""Bad input to the TED readers (docs/bad_inputs.md): one line naming the file (and line),
what was expected and what was found, a non-zero exit, and no output of the step afterwards."""

from __future__ import annotations

import shutil
import tarfile
from pathlib import Path

import pytest
from helpers.one_line import Case, check

from mlmm.cli import main
from mlmm.records import write_record
from mlmm.ted.demo import DEMO_MARKER


@pytest.fixture(scope="module")
def corpus(tmp_path_factory) -> Path:
    """A tiny one-pair (fr-en) demo corpus, copied per test by `fresh`."""
    root = tmp_path_factory.mktemp("ted") / "ted-cldc"
    argv = ["demo-ted", root, "--train-docs", 10, "--test-docs", 5, "--languages", "fr"]
    assert main([str(a) for a in argv]) == 0
    return root


@pytest.fixture
def fresh(corpus, tmp_path) -> Path:
    root = tmp_path / "ted-cldc"
    shutil.copytree(corpus, root)  # real copies: damaging one talk leaves its other topics alone
    return root


def bow_case(root: Path, tmp_path: Path, says: list[str]) -> Case:
    """ted-fetch (checks the layout) then the ted-bow call that must fail."""
    index = tmp_path / "corpus/index.json"
    argv = ["ted-fetch", "--source", "path", "--path", root, "--out-dir", index.parent]
    assert main([str(a) for a in [*argv, "--languages", "fr"]]) == 0
    out = tmp_path / "bow"
    argv = ["ted-bow", "--index", str(index), "--out-dir", str(out), *_french(tmp_path)]
    return Case(argv, says, absent=[out])


def _french(tmp_path: Path) -> list[str]:
    """ted-bow's --config: a record reading French only."""
    return ["--config", str(write_record(tmp_path / "bow.json", {"languages": ["fr"]}))]


def _non_utf8(root: Path) -> tuple[Path, list[str]]:
    talk = sorted((root / "fr-en/test/art").glob("*/*.ted"))[0]
    talk.write_bytes(b"bon_fr jour_fr\nmauvais_fr \xe9t\xe9_fr\n")
    return talk, [f"{talk}, line 2", "expected UTF-8 text", "found invalid byte 0xe9"]


def _empty(root: Path) -> tuple[Path, list[str]]:
    talk = sorted((root / "en-fr/train/art").glob("*/*.ted"))[0]
    talk.write_bytes(b"")
    return talk, [str(talk), "expected a tokenised TED document", "found no tokens"]


def _markup_only(root: Path) -> tuple[Path, list[str]]:
    talk = sorted((root / "fr-en/train/art").glob("*/*.ted"))[0]
    talk.write_text("<title>x</title>\n\n", encoding="utf-8")
    return talk, [str(talk), "expected a tokenised TED document", "found no tokens"]


def _missing_topic(root: Path) -> tuple[Path, list[str]]:
    missing = root / "en-fr/test/science"  # the first pair's training split names the topics
    shutil.rmtree(missing)
    return missing, [str(missing), "expected a topic directory", "found none"]


def _positive_and_negative(root: Path) -> tuple[Path, list[str]]:
    talk = sorted((root / "fr-en/train/art/positive").glob("*.ted"))[0]
    twin = root / "fr-en/train/art/negative" / talk.name
    shutil.copyfile(talk, twin)
    return twin, [str(twin), "expected a talk either positive or negative", "found both"]


def _talk_on_one_side(root: Path) -> tuple[Path, list[str]]:
    name = sorted(p.name for p in (root / "en-fr/test/art").glob("*/*.ted"))[0]
    for talk in (root / "en-fr/test").glob(f"*/*/{name}"):  # gone from every topic
        talk.unlink()
    return root / "en-fr/test", [str(root / "en-fr/test"), "expected the same talks", "found"]


def _no_negatives(root: Path) -> tuple[Path, list[str]]:
    negative = root / "fr-en/train/art/negative"
    for talk in negative.glob("*.ted"):  # every talk positive for art
        talk.rename(root / "fr-en/train/art/positive" / talk.name)
    return negative, [str(negative), "expected at least one negative talk of art", "found none"]


@pytest.mark.parametrize(
    "damage",
    [_non_utf8, _empty, _markup_only, _missing_topic, _positive_and_negative, _talk_on_one_side,
     _no_negatives],
)
def test_ted_bow_refuses_a_damaged_corpus(damage, fresh, tmp_path, capsys):
    _, says = damage(fresh)
    check(bow_case(fresh, tmp_path, says), capsys)


def test_ted_bow_index_missing(tmp_path, capsys):
    index, out = tmp_path / "missing.json", tmp_path / "bow"
    argv = ["ted-bow", "--index", str(index), "--out-dir", str(out), *_french(tmp_path)]
    says = [str(index), "expected an existing file", "found no such file"]
    check(Case(argv, says, [out]), capsys)


def test_ted_bow_index_not_json(tmp_path, capsys):
    index, out = tmp_path / "index.json", tmp_path / "bow"
    index.write_text("root: here\n", encoding="utf-8")
    argv = ["ted-bow", "--index", str(index), "--out-dir", str(out), *_french(tmp_path)]
    check(Case(argv, [str(index), "expected the JSON of ted-fetch", "found"], [out]), capsys)


def _tar_gz(corpus: Path, archive: Path) -> None:
    with tarfile.open(archive, mode="w:gz") as handle:
        handle.add(corpus, arcname="ted-cldc")


def _zip(corpus: Path, archive: Path) -> None:
    shutil.make_archive(str(archive.with_suffix("")), "zip", corpus.parent, corpus.name)


@pytest.mark.parametrize(("suffix", "pack"), [(".tar.gz", _tar_gz), (".zip", _zip)])
def test_ted_fetch_truncated_archive(suffix, pack, corpus, tmp_path, capsys):
    archive = tmp_path / f"ted-cldc{suffix}"
    pack(corpus, archive)
    data = archive.read_bytes()
    archive.write_bytes(data[: len(data) // 2])
    out = tmp_path / "out"
    argv = ["ted-fetch", "--source", "url", "--url", archive.as_uri(), "--out-dir", str(out)]
    says = [archive.name, "expected", "found"]
    absent = [out / "index.json", out / "unpacked", out / "unpacked.part",
              out / "download" / archive.name]  # fmt: skip
    check(Case([*argv, "--languages", "fr"], says, absent), capsys)


def test_ted_fetch_demo_keeps_a_users_corpus(corpus, tmp_path, capsys):
    out = tmp_path / "out"
    shutil.copytree(corpus, out / "ted-cldc")  # the user's corpus where the demo would go
    (out / "ted-cldc" / DEMO_MARKER).unlink()  # (ours carries the list of its files)
    talk = sorted((out / "ted-cldc/fr-en/train/art").glob("*/*.ted"))[0]
    argv = ["ted-fetch", "--source", "demo", "--out-dir", str(out), "--languages", "fr"]
    says = [str(out / "ted-cldc"), "expected an empty directory or TED demo corpus", "--force"]
    check(Case(argv, says, [out / "index.json"], {talk: talk.read_bytes()}), capsys)


def test_ted_fetch_demo_replaces_its_own_unedited_corpus(tmp_path, capsys):
    out = tmp_path / "out"
    argv = ["ted-fetch", "--source", "demo", "--out-dir", str(out), "--languages", "fr",
            "--train-docs", "10", "--test-docs", "5"]  # fmt: skip
    assert main(argv) == 0
    (out / "index.json").unlink()
    assert main([*argv[:-4], "--train-docs", "12", "--test-docs", "5"]) == 0
    assert len(list((out / "ted-cldc/fr-en/train/art").glob("*/*.ted"))) == 12
    talk = sorted((out / "ted-cldc/fr-en/train/art").glob("*/*.ted"))[0]
    talk.unlink()
    talk.write_text("edited_fr\n", encoding="utf-8")
    capsys.readouterr()
    check(Case(argv, ["an edited file", "--force"], intact={talk: b"edited_fr\n"}), capsys)


# ------------------------------------------------------------------------------------------
# outputs over inputs: ted-fetch --source url keeps what it did not make


def _url_argv(archive: Path, out: Path, *extra: str) -> list[str]:
    return ["ted-fetch", "--source", "url", "--url", archive.as_uri(), "--out-dir", str(out),
            "--languages", "fr", *extra]  # fmt: skip


def test_ted_fetch_url_keeps_a_users_unpacked_corpus(corpus, tmp_path, capsys):
    archive = tmp_path / "ted-cldc.tar.gz"
    _tar_gz(corpus, archive)
    out = tmp_path / "out"
    mine = out / "unpacked" / "my-notes.txt"
    mine.parent.mkdir(parents=True)
    mine.write_text("mine\n", encoding="utf-8")
    says = [str(out / "unpacked"), "without .mlmm-ted-fetch.sha256", "--force"]
    check(Case(_url_argv(archive, out), says, [out / "index.json"], {mine: b"mine\n"}), capsys)
    assert main(_url_argv(archive, out, "--force")) == 0  # asked for: replaced
    assert not mine.exists()


def test_ted_fetch_url_keeps_a_users_archive(corpus, tmp_path, capsys):
    archive = tmp_path / "ted-cldc.tar.gz"
    _tar_gz(corpus, archive)
    out = tmp_path / "out"
    theirs = out / "download" / "ted-cldc.tar.gz"
    theirs.parent.mkdir(parents=True)
    theirs.write_bytes(b"the user's own archive")
    says = [str(out / "download"), "--force"]
    intact = {theirs: b"the user's own archive"}
    check(Case(_url_argv(archive, out), says, [out / "index.json"], intact), capsys)


def test_ted_fetch_url_reruns_over_its_own_download(corpus, tmp_path, capsys):
    archive = tmp_path / "ted-cldc.tar.gz"
    _tar_gz(corpus, archive)
    out = tmp_path / "out"
    assert main(_url_argv(archive, out)) == 0
    (out / "index.json").unlink()
    assert main(_url_argv(archive, out)) == 0  # unedited download and corpus of ours: replaced
    assert (out / "index.json").is_file()


def test_ted_fetch_url_of_an_archive_inside_its_output(corpus, tmp_path, capsys):
    out = tmp_path / "out"
    archive = out / "download" / "ted-cldc.tar.gz"
    archive.parent.mkdir(parents=True)
    _tar_gz(corpus, archive)
    data = archive.read_bytes()
    says = [str(out / "download"), "expected an output path that does not hold the input"]
    check(Case(_url_argv(archive, out), says, [out / "index.json"], {archive: data}), capsys)


def test_ted_fetch_path_with_two_corpora_is_refused(corpus, tmp_path, capsys):
    top = tmp_path / "corpora"
    shutil.copytree(corpus, top / "ted-cldc-2014")
    shutil.copytree(corpus, top / "ted-cldc-old")
    out = tmp_path / "out"
    argv = ["ted-fetch", "--source", "path", "--path", str(top), "--out-dir", str(out),
            "--languages", "fr"]  # fmt: skip
    says = [str(top), "expected one TED CLDC tree (a fr-en/ directory)",
            "found 2: ted-cldc-2014, ted-cldc-old"]  # fmt: skip
    check(Case(argv, says, [out / "index.json"]), capsys)
    argv[4] = str(top / "ted-cldc-old")  # the one meant, named: fine
    assert main(argv) == 0
