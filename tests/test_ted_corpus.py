"""The TED CLDC reader on a hand-made tree, including malformed documents."""

from pathlib import Path

import numpy as np
import pytest

from mlmm.errors import InputError
from mlmm.ted.bow import count_matrix, vocabulary
from mlmm.ted.corpus import find_root, read_pair

TOPICS = ["art", "science"]


def write_talk(root: Path, pair: str, split: str, doc: str, positive: set[str], text) -> None:
    for topic in TOPICS:
        folder = root / pair / split / topic / ("positive" if topic in positive else "negative")
        folder.mkdir(parents=True, exist_ok=True)
        path = folder / f"{doc}.ted"
        if isinstance(text, bytes):
            path.write_bytes(text)
        else:
            path.write_text(text, encoding="utf-8")


def make_tree(root: Path) -> None:
    talks = {
        "2": ({"art"}, "Das_de Bild_de\nist_de schön_de", "The_en picture_en\nis_en nice_en"),
        "10": ({"art", "science"}, "Die_de Zelle_de", "The_en cell_en"),
        "7": (set(), "nichts_de", "nothing_en"),
    }
    for doc, (positive, german, english) in talks.items():
        write_talk(root, "de-en", "train", doc, positive, german)
        write_talk(root, "en-de", "train", doc, positive, english)


def test_reads_aligned_sides_with_labels(tmp_path):
    make_tree(tmp_path)
    german, english = read_pair(tmp_path, "de", "train", TOPICS)
    assert german.ids == ["2", "7", "10"]  # numeric order
    assert german.tokens[0] == ["das", "bild", "ist", "schön"]  # suffix stripped, lowercased
    assert english.tokens[2] == ["the", "cell"]
    assert german.labels.tolist() == [[True, False], [False, False], [True, True]]
    assert np.array_equal(german.labels, english.labels)


def test_corpus_code_maps_directory_names(tmp_path):
    write_talk(tmp_path, "pb-en", "test", "1", {"art"}, "casa_pb")
    write_talk(tmp_path, "en-pb", "test", "1", {"art"}, "house_en")
    write_talk(tmp_path, "pb-en", "test", "2", set(), "rua_pb")  # art needs a negative talk
    write_talk(tmp_path, "en-pb", "test", "2", set(), "street_en")
    portuguese, _ = read_pair(tmp_path, "pt-br", "test", TOPICS, {"pt-br": "pb"})
    assert portuguese.tokens == [["casa"], ["rua"]]
    assert find_root(tmp_path, ["pt-br"], {"pt-br": "pb"}) == tmp_path


@pytest.mark.parametrize(
    ("content", "found"),
    [(b"", "no tokens"), (b"  \n\n", "no tokens"), (b"gut_de \xff\xfe_de\n", "invalid byte")],
)
def test_malformed_document_names_the_file(tmp_path, content, found):
    make_tree(tmp_path)
    write_talk(tmp_path, "de-en", "train", "99", set(), content)
    write_talk(tmp_path, "en-de", "train", "99", set(), "fine_en")
    with pytest.raises(InputError) as error:
        read_pair(tmp_path, "de", "train", TOPICS)
    assert "99.ted" in str(error.value)
    assert found in str(error.value)


def test_talk_on_one_side_only_is_an_error(tmp_path):
    make_tree(tmp_path)
    write_talk(tmp_path, "de-en", "train", "5", set(), "extra_de")
    with pytest.raises(InputError, match="one side only"):
        read_pair(tmp_path, "de", "train", TOPICS)


def test_missing_topic_directory_is_an_error(tmp_path):
    make_tree(tmp_path)
    with pytest.raises(InputError, match="topic directory"):
        read_pair(tmp_path, "de", "train", [*TOPICS, "health"])


def test_vocabulary_keeps_words_above_the_threshold():
    docs = [["a"] * 6 + ["b"] * 5 + ["c"], ["a", "c"] * 3]
    words, counts = vocabulary(docs, min_count=6)
    assert words == ["a"] and counts == [9]
    matrix = count_matrix(docs, ["a", "c"])
    assert matrix.toarray().tolist() == [[6, 1], [3, 3]]


def test_fetch_url_unpacks_an_archive(tmp_path):
    import tarfile

    from mlmm.ted.corpus import fetch
    from mlmm.ted.demo import generate

    generate(tmp_path / "src/ted-cldc", train_docs=10, test_docs=5, languages=["fr"])
    archive = tmp_path / "ted-cldc.tar.gz"
    with tarfile.open(archive, "w:gz") as handle:
        handle.add(tmp_path / "src/ted-cldc", arcname="ted-cldc")
    root = fetch("url", tmp_path / "out", ["fr"], None, url=archive.as_uri())
    assert root == (tmp_path / "out/unpacked/ted-cldc").resolve()
    french, english = read_pair(root, "fr", "test", TOPICS)
    assert len(french.ids) == len(english.ids) == 5
    with pytest.raises(InputError, match="ted.path"):
        fetch("path", tmp_path / "out2", ["fr"], None)


def test_demo_talks_are_sentence_aligned_like_the_real_corpus(tmp_path):
    """Line j of a talk's X side translates line j of its English side (the Z2 sentence pairs
    of Table 5's CorrNet + MT rows), in every pair and split."""
    from mlmm.ted.demo import generate

    root = generate(tmp_path / "ted-cldc", train_docs=6, test_docs=3, languages=["fr", "de"])
    talks = sorted(root.glob("??-en/*/*/*/*.ted"))
    assert talks
    for talk in talks:
        pair = talk.relative_to(root).parts[0]
        english = root / f"en-{pair[:2]}" / talk.relative_to(root / pair)
        foreign_lines = talk.read_text(encoding="utf-8").splitlines()
        english_lines = english.read_text(encoding="utf-8").splitlines()
        assert len(foreign_lines) == len(english_lines) > 1, talk
        assert all(line.strip() for line in foreign_lines), talk
