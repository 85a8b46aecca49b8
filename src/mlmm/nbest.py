"""Moses n-best lists: ``id ||| hypothesis ||| Name= v1 v2 ... ||| score``.

Only dense features are handled: every line of a list carries the same feature names (in any
order) with the same number of values each; the reader puts them into one fixed column layout so
that a list becomes one float matrix per sentence, which is what MIRA and reranking work on.
Feature names must not contain underscores (Moses' readers take those for sparse features).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass, field
from operator import itemgetter
from pathlib import Path

import numpy as np

from mlmm.errors import InputError
from mlmm.fingerprint import check_made_from, record_made_from
from mlmm.io import read_lines, sha256_file, write_text

Layout = list[tuple[str, int]]


@dataclass
class NBestList:
    """Hypotheses per sentence id, with a dense feature matrix (k_i x d) per sentence."""

    layout: Layout
    ids: list[int] = field(default_factory=list)
    texts: list[list[str]] = field(default_factory=list)
    features: list[np.ndarray] = field(default_factory=list)
    scores: list[np.ndarray] = field(default_factory=list)

    @property
    def columns(self) -> list[str]:
        """One name per feature column: ``Name`` for a single value, ``Name.j`` otherwise."""
        return expand_layout(self.layout)

    def __len__(self) -> int:
        return len(self.ids)

    def select(self, names: Sequence[str]) -> NBestList:
        """The same list restricted to the named features (in the order given)."""
        known = dict(self.layout)
        missing = [n for n in names if n not in known]
        if missing:
            raise InputError("n-best list", f"features among {list(known)}", f"{missing}")
        starts = feature_offsets(self.layout)
        cols = [starts[n] + j for n in names for j in range(known[n])]
        return NBestList(
            [(n, known[n]) for n in names],
            list(self.ids),
            [list(t) for t in self.texts],
            [f[:, cols] for f in self.features],
            list(self.scores),
        )

    def with_features(self, name: str, values: list[np.ndarray]) -> NBestList:
        """A copy with one more feature (one array of shape (k_i,) or (k_i, m) per sentence)."""
        check_feature_name(name)
        if name in dict(self.layout):
            raise InputError("n-best list", f"a new feature name instead of {name!r}", "a clash")
        values = [np.asarray(v, dtype=np.float64).reshape(len(t), -1) for v, t in zip(
            values, self.texts, strict=True)]
        width = values[0].shape[1] if values else 1
        return NBestList(
            [*self.layout, (name, width)],
            list(self.ids),
            [list(t) for t in self.texts],
            [np.hstack([f, v]) for f, v in zip(self.features, values, strict=True)],
            list(self.scores),
        )


def expand_layout(layout: Layout) -> list[str]:
    return [name if n == 1 else f"{name}.{j}" for name, n in layout for j in range(n)]


def feature_offsets(layout: Layout) -> dict[str, int]:
    offsets, start = {}, 0
    for name, n in layout:
        offsets[name] = start
        start += n
    return offsets


def check_feature_name(name: str) -> None:
    if not name or "_" in name or "=" in name or any(c.isspace() for c in name):
        raise InputError(
            "feature name", "a name without underscores, '=' or spaces", repr(name)
        )


def _parse_features(text: str, where: Path | str, line: int) -> dict[str, list[float]]:
    found: dict[str, list[float]] = {}
    current: list[float] | None = None
    for token in text.split():
        if token.endswith("="):
            name = token[:-1]
            if not name or name in found:
                raise InputError(where, "distinct 'Name=' labels", repr(token), line=line)
            current = found[name] = []
            continue
        if current is None:
            raise InputError(where, "a 'Name=' label before values", repr(token), line=line)
        try:
            value = float(token)
        except ValueError:
            raise InputError(where, "a number", repr(token), line=line) from None
        if not math.isfinite(value):
            raise InputError(where, "a finite number", repr(token), line=line)
        current.append(value)
    empty = [n for n, v in found.items() if not v]
    if not found or empty:
        raise InputError(where, "'Name= v1 v2 ...' features", repr(text.strip()), line=line)
    return found


class _LineLayout:
    """Where the first line's ``Name=`` labels and values stand: a line laid out the same way
    (as every line Moses writes) is read by position. This fast path is most of the time of
    reading the lists MIRA tunes on."""

    def __init__(self, tokens: list[str]) -> None:
        labels = [i for i, t in enumerate(tokens) if t.endswith("=")]
        self.width = len(tokens)
        self.labels = _getter(labels)
        self.expected = self.labels(tokens)
        self.values = _getter(sorted(set(range(len(tokens))) - set(labels)))

    def values_of(self, tokens: list[str]) -> list[float] | None:
        """The values of a line whose labels stand where the first line's do, in the first
        line's order; None when they do not or a value is not a number, so that the full
        parser reads the line and names what is wrong."""
        if len(tokens) != self.width or self.labels(tokens) != self.expected:
            return None
        try:
            return list(map(float, self.values(tokens)))
        except ValueError:
            return None


def _getter(positions: list[int]):
    """``operator.itemgetter`` that returns a tuple for one position too."""
    if len(positions) == 1:
        return lambda items, i=positions[0]: (items[i],)
    return itemgetter(*positions)


def read_nbest(path: str | Path, source: str | Path | None = None) -> NBestList:
    """Read a Moses n-best list; a malformed line is an InputError naming its line number.
    A list edited since written, or (``source`` given) made from another source text, is
    refused (``mlmm.fingerprint.check_made_from``). A list without its record is read as is:
    ``nbest-features``, ``mira`` and ``rerank`` take the Moses lists of other decoders too,
    whose format checks below still apply (mlmm's own lists always carry one).

    Sentence ids must run 0, 1, 2, ... in contiguous blocks, as Moses writes them: sentence
    ``i`` of the list is then line ``i + 1`` of the source and reference files, and the 1-best
    output is in reference order. A gap, an id out of order or a sentence split in two blocks
    would misalign every later sentence with its reference, so each is refused with its line.
    """
    if Path(path).is_file():
        check_made_from(path, _made_from(source), external=True)
    layout: Layout | None = None
    first_layout: _LineLayout | None = None
    texts: list[list[str]] = []
    rows: list[list[list[float]]] = []
    scores: list[list[float]] = []
    for number, line in enumerate(read_lines(path, allow_empty_lines=True), start=1):
        if not line.strip():
            raise InputError(path, "an n-best line", "an empty line", line=number)
        parts = line.split("|||")
        if len(parts) != 4:
            raise InputError(
                path, "4 fields 'id ||| hypothesis ||| features ||| score'",
                f"{len(parts)} field(s)", line=number,
            )
        sid, hyp, feats, score = parts
        try:
            sentence = int(sid.strip())
            value = float(score.strip())
        except ValueError:
            raise InputError(
                path, "an integer id and a numeric score", repr(f"{sid}|||...|||{score}"),
                line=number,
            ) from None
        if sentence < 0 or not math.isfinite(value):
            raise InputError(path, "id >= 0 and a finite score", repr(line[:60]), line=number)
        current = len(texts) - 1
        if sentence not in (current, current + 1):
            raise InputError(
                path,
                f"sentence id {current} or {current + 1} (ids 0, 1, 2, ... in contiguous blocks)"
                if current >= 0 else "sentence id 0 first (ids 0, 1, 2, ... in contiguous blocks)",
                f"id {sentence}",
                line=number,
            )
        tokens = feats.split()
        row = first_layout.values_of(tokens) if first_layout else None
        if row is None:  # the first line, or one laid out differently: parse it in full
            found = _parse_features(feats, path, number)
            if layout is None:
                layout = [(n, len(v)) for n, v in found.items()]
                first_layout = _LineLayout(tokens)
            shape = {n: len(v) for n, v in found.items()}
            if shape != dict(layout):
                raise InputError(path, f"features {dict(layout)}", f"{shape}", line=number)
            row = [v for name, _ in layout for v in found[name]]
        elif not all(map(math.isfinite, row)):
            _parse_features(feats, path, number)  # raises, naming the value
        if sentence == len(texts):
            texts.append([])
            rows.append([])
            scores.append([])
        texts[sentence].append(" ".join(hyp.split()))
        rows[sentence].append(row)
        scores[sentence].append(value)
    if layout is None:
        raise InputError(path, "at least one n-best line", "an empty file")
    return NBestList(
        layout,
        list(range(len(texts))),
        texts,
        [np.asarray(r, dtype=np.float64) for r in rows],
        [np.asarray(s, dtype=np.float64) for s in scores],
    )


def format_nbest(nbest: NBestList) -> str:
    for name, _ in nbest.layout:
        check_feature_name(name)
    lines = []
    for sid, texts, feats, scores in zip(
        nbest.ids, nbest.texts, nbest.features, nbest.scores, strict=True
    ):
        for text, row, score in zip(texts, feats, scores, strict=True):
            fields = " ".join(_labelled(nbest.layout, row))
            lines.append(f"{sid} ||| {text} ||| {fields} ||| {float(score)!r}")
    return "".join(line + "\n" for line in lines)


def _labelled(layout: Layout, vector: np.ndarray) -> list[str]:
    """``Name= v1 v2`` per feature, with values written exactly (repr round-trips)."""
    offsets = feature_offsets(layout)
    return [
        f"{name}= " + " ".join(repr(float(v)) for v in vector[offsets[name]: offsets[name] + n])
        for name, n in layout
    ]


def write_nbest(path: str | Path, nbest: NBestList, source: str | Path | None = None) -> None:
    """The list, and beside it the digest of the ``source`` text it translates."""
    write_text(path, format_nbest(nbest))
    record_made_from(path, _made_from(source))


def _made_from(source: str | Path | None) -> dict[str, str]:
    return {"source": sha256_file(source)} if source is not None else {}


def read_weights(path: str | Path) -> dict[str, np.ndarray]:
    """A weights file: one ``Name= w1 w2 ...`` line per feature (Moses moses.ini style),
    refused if edited since ``mira`` wrote it; weights without a record are read as is
    (``rerank`` takes the weights another decoder's tuning gave)."""
    check_made_from(path, external=True)
    weights: dict[str, np.ndarray] = {}
    for number, line in enumerate(read_lines(path), start=1):
        found = _parse_features(line, path, number)
        for name, values in found.items():
            if name in weights:
                raise InputError(path, "each feature once", f"{name!r} again", line=number)
            weights[name] = np.asarray(values, dtype=np.float64)
    if not weights:  # all weights 0 would rerank every list to its first hypothesis
        raise InputError(path, "at least one 'Name= w ...' line (mira's output)", "an empty file")
    return weights


def write_weights(
    path: str | Path, layout: Layout, vector: np.ndarray, made_from: dict[str, str]
) -> None:
    """The weights, and beside them the digests of the n-best list and references tuned on."""
    write_text(path, "\n".join(_labelled(layout, vector)) + "\n")
    record_made_from(path, made_from)


def weight_vector(layout: Layout, weights: dict[str, np.ndarray], where: str | Path) -> np.ndarray:
    """Weights laid out as the list's columns; features without a weight get 0."""
    parts = []
    for name, n in layout:
        w = weights.get(name, np.zeros(n))
        if w.shape != (n,):
            raise InputError(where, f"{n} weight(s) for {name}", f"{w.shape[0]}", key=name)
        parts.append(w)
    return np.concatenate(parts) if parts else np.zeros(0)


def check_parallel(path: str | Path, lines: Sequence, ids: Sequence[int]) -> None:
    """A file parallel to an n-best list (source, reference) has one line per sentence."""
    if len(lines) != len(ids):
        raise InputError(
            path, f"{len(ids)} lines, one per sentence of the n-best list", f"{len(lines)}"
        )


def read_references(paths: Sequence[str | Path], ids: Sequence[int]) -> list[list[str]]:
    """References per sentence id: line ``id + 1`` of every reference file (ids are 0-based).

    Every file must have exactly one line per sentence of the list, in either direction: a
    longer reference means the list and the references are of different sets (or misaligned),
    and tuning on the first lines only would score the wrong pairs without a word.
    """
    if not paths:
        raise InputError("--ref", "at least one reference file", "none")
    files = [read_lines(p, allow_empty_lines=True) for p in paths]
    for path, lines in zip(paths, files, strict=True):
        check_parallel(path, lines, ids)
    if list(ids) != list(range(len(ids))):
        raise InputError("n-best list", "sentence ids 0, 1, 2, ...", f"{list(ids)[:5]} ...")
    return [[lines[i] for lines in files] for i in ids]
