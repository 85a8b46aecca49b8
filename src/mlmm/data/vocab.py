"""Word vocabularies with a count threshold; rarer words map to <unk>."""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable
from pathlib import Path

from mlmm.errors import InputError
from mlmm.fingerprint import check_made_from, value_digest
from mlmm.io import read_lines, write_text

PAD, UNK = "<pad>", "<unk>"


class Vocabulary:
    """Index 0 is padding, 1 is <unk>; words follow by descending count, then alphabetically."""

    def __init__(self, counts: Counter[str], min_count: int) -> None:
        kept = [(w, c) for w, c in counts.items() if c >= min_count and w not in (PAD, UNK)]
        kept.sort(key=lambda item: (-item[1], item[0]))
        self.counts = dict(kept)
        self.words = [PAD, UNK] + [w for w, _ in kept]
        self.index = {w: i for i, w in enumerate(self.words)}
        self.min_count = min_count

    @classmethod
    def from_sentences(cls, sentences: Iterable[list[str]], min_count: int) -> Vocabulary:
        counts: Counter[str] = Counter()
        for tokens in sentences:
            counts.update(tokens)
        return cls(counts, min_count)

    def __len__(self) -> int:
        return len(self.words)

    def known_words(self) -> set[str]:
        """The real words (no <pad>/<unk>): what vocabulary overlaps are computed on."""
        return set(self.counts)

    def encode(self, tokens: list[str]) -> list[int]:
        unk = self.index[UNK]
        return [self.index.get(t, unk) for t in tokens]

    def save(self, path: str | Path) -> None:
        """One 'word<TAB>count' line per word; the threshold goes in a header line."""
        lines = [f"#min_count\t{self.min_count}"] + [f"{w}\t{c}" for w, c in self.counts.items()]
        write_text(path, "\n".join(lines) + "\n")

    @classmethod
    def load(cls, path: str | Path, min_count: int | None = None) -> Vocabulary:
        """A saved vocabulary; refused if edited since multi30k-vocab wrote it, without its
        record (``.NAME.made-from.json`` beside it), or (``min_count`` given) made with
        another threshold (another build's vocabulary copied with its record)."""
        asked = {} if min_count is None else {"min count": value_digest(min_count)}
        check_made_from(path, asked, maker="multi30k-vocab")
        lines = read_lines(path)
        if not lines:
            raise InputError(path, "a '#min_count<TAB>N' header", "an empty file", line=1)
        header, *rows = lines
        name, _, threshold = header.partition("\t")
        if name != "#min_count" or not threshold.isdigit():
            raise InputError(path, "a '#min_count<TAB>N' header", repr(header[:40]), line=1)
        counts: Counter[str] = Counter()
        for number, row in enumerate(rows, start=2):
            parts = row.split("\t")
            if len(parts) != 2 or not parts[1].isdigit():
                raise InputError(path, "'word<TAB>count'", repr(row[:40]), line=number)
            counts[parts[0]] = int(parts[1])
        return cls(counts, int(threshold))
