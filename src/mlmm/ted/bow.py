"""Bag-of-words per language, kept sparse (scipy CSR of counts).

The vocabulary of a language is every word occurring more than 5 times (`min_count` 6) in all
its talks, train and test (Rajendran et al. 2016, Section 5.1: "all words appearing more than
5 times in the corpus (all talks) of that language"). English is counted once per distinct
talk text, not once per pair it appears in. Counts are stored; binary vectors are made from
them where the model asks for them.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import scipy.sparse as sp

from mlmm.fingerprint import check_directory, record_directory
from mlmm.io import atomic_path, read_json_object, write_json, write_text
from mlmm.logs import progress
from mlmm.ted import PIVOT, SPLITS
from mlmm.ted.corpus import Side, find_topics, read_pair


def vocabulary(documents: list[list[str]], min_count: int) -> tuple[list[str], list[int]]:
    counts = Counter(token for doc in documents for token in doc)
    kept = sorted((w for w, c in counts.items() if c >= min_count), key=lambda w: (-counts[w], w))
    return kept, [counts[w] for w in kept]


def count_matrix(documents: list[list[str]], words: list[str]) -> sp.csr_matrix:
    """Documents x vocabulary counts; words outside the vocabulary are dropped."""
    index = {w: i for i, w in enumerate(words)}
    indptr, indices = [0], []
    for doc in documents:
        indices.extend(index[t] for t in doc if t in index)
        indptr.append(len(indices))
    data = np.ones(len(indices), dtype=np.float32)
    matrix = sp.csr_matrix(
        (data, np.asarray(indices, dtype=np.int64), np.asarray(indptr, dtype=np.int64)),
        shape=(len(documents), len(words)),
    )
    matrix.sum_duplicates()
    return matrix


def _save_npz(path: Path, matrix: sp.csr_matrix) -> None:
    with atomic_path(path) as tmp, open(tmp, "wb") as handle:
        sp.save_npz(handle, matrix)


def build(
    root: Path,
    out_dir: Path,
    languages: list[str],
    topics: list[str] | None,
    codes: dict[str, str] | None,
    min_count: int,
) -> dict:
    """Read every pair and split, write vocabularies, count matrices and meta.json (last).

    `topics` None: the topics found in the corpus (find_topics).
    """
    out_dir = Path(out_dir)
    if topics is None:
        topics = find_topics(root, languages, codes)
    sides: dict[tuple[str, str], tuple[Side, Side]] = {}
    for language in progress(languages, desc="read ted-cldc"):
        for split in SPLITS:
            sides[language, split] = read_pair(root, language, split, topics, codes)
    meta = {"languages": languages, "topics": topics, "min_count": min_count,
            "vocabulary": {}, "documents": {}}  # fmt: skip
    english_texts = {}
    for _, english in sides.values():
        for tokens in english.tokens:
            english_texts.setdefault(" ".join(tokens), tokens)
    vocabularies = {PIVOT: vocabulary(list(english_texts.values()), min_count)}
    for language in languages:
        docs = [t for split in SPLITS for t in sides[language, split][0].tokens]
        vocabularies[language] = vocabulary(docs, min_count)
    for language, (words, counts) in vocabularies.items():
        write_text(
            out_dir / f"vocab.{language}.txt",
            "".join(f"{w}\t{c}\n" for w, c in zip(words, counts, strict=True)),
        )
        meta["vocabulary"][language] = len(words)
    for (language, split), (foreign, english) in sides.items():
        _save_npz(
            out_dir / f"{language}.{split}.npz",
            count_matrix(foreign.tokens, vocabularies[language][0]),
        )
        _save_npz(
            out_dir / f"{PIVOT}@{language}.{split}.npz",
            count_matrix(english.tokens, vocabularies[PIVOT][0]),
        )
        meta["documents"].setdefault(language, {})[split] = {
            "ids": foreign.ids,
            "labels": [np.flatnonzero(row).tolist() for row in foreign.labels],
        }
    write_json(out_dir / "meta.json", meta)
    record_directory(out_dir, "meta.json")
    return meta


@dataclass
class Bow:
    """The bag-of-words directory written by build()."""

    directory: Path
    meta: dict

    @classmethod
    def load(cls, directory: str | Path) -> Bow:
        directory = Path(directory)
        # a vocabulary or matrix of another build, or a directory without its record
        check_directory(directory, "meta.json", "ted-bow")
        return cls(
            directory, read_json_object(directory / "meta.json", what="the meta.json of ted-bow")
        )

    @property
    def languages(self) -> list[str]:
        return self.meta["languages"]

    @property
    def topics(self) -> list[str]:
        return self.meta["topics"]

    def matrix(self, language: str, split: str) -> sp.csr_matrix:
        """Counts of `language`'s talks; language `en@X` is the English side of pair X."""
        return sp.load_npz(self.directory / f"{language}.{split}.npz").tocsr()

    def labels(self, language: str, split: str) -> np.ndarray:
        """Topic labels; `en@X` (English side of pair X) has X's (read_pair checks they agree)."""
        language = language.removeprefix(f"{PIVOT}@")
        rows = self.meta["documents"][language][split]["labels"]
        out = np.zeros((len(rows), len(self.topics)), dtype=bool)
        for i, row in enumerate(rows):
            out[i, row] = True
        return out

    def words(self, language: str) -> list[str]:
        path = self.directory / f"vocab.{language}.txt"
        return [line.split("\t", 1)[0] for line in path.read_text(encoding="utf-8").splitlines()]
