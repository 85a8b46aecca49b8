"""Files of cross-lingual word vectors and bilingual dictionaries for FME / AME: fastText .vec
files (read, written, downloaded, mapped whole) and MUSE dictionaries (read, split into their
sections, downloaded), and a language's own vectors rotated onto the English aligned ones.

Real runs read fastText's pre-aligned vectors (``wiki.<lang>.align.vec``, text format: a
"count dim" header, then "word v1 .. vd" lines). The maths is mlmm.retrieval.rcsls'.
"""

from __future__ import annotations

import gzip
import shutil
import tempfile
from collections.abc import Callable
from pathlib import Path

import numpy as np
import torch

from mlmm.errors import InputError
from mlmm.io import atomic_path, read_lines
from mlmm.retrieval.rcsls import (
    Lexicon,
    rcsls_matrix,
    rotate_onto_english,
    split_lexicon,
    training_rows,
    unit,
)


def read_vec(
    path: str | Path, words: set[str] | None = None, limit: int | None = None
) -> dict[str, np.ndarray]:
    """Vectors of ``words`` (all when None; the first ``limit`` lines, fastText's most frequent
    words, when given) from a fastText .vec text file, plain or gzipped, streamed."""
    path = Path(path)
    if not path.is_file():
        raise InputError(path, "a fastText .vec file of word vectors", "no such file")
    out: dict[str, np.ndarray] = {}
    opener = gzip.open if path.suffix == ".gz" else open
    with opener(path, "rt", encoding="utf-8", errors="replace") as handle:
        header = handle.readline().split()
        if len(header) != 2 or not all(h.isdigit() for h in header):
            raise InputError(path, "a 'count dim' header", repr(" ".join(header)[:40]), line=1)
        dim = int(header[1])
        for number, line in enumerate(handle, start=2):
            if limit is not None and number > limit + 1:
                break
            word, _, rest = line.rstrip("\n").partition(" ")
            if words is not None and word not in words or word in out:
                continue
            values = np.array(rest.split(), dtype=np.float32)
            if values.shape != (dim,):
                raise InputError(path, f"a word and {dim} numbers", f"{values.size}", line=number)
            out[word] = values
    return out


def write_vec(path: str | Path, vectors: dict[str, np.ndarray]) -> None:
    dim = len(next(iter(vectors.values())))
    with atomic_path(path) as tmp, open(tmp, "w", encoding="utf-8") as handle:
        handle.write(f"{len(vectors)} {dim}\n")
        for word, v in vectors.items():
            handle.write(word + " " + " ".join(f"{x:.5f}" for x in v) + "\n")


def read_lexicon(path: str | Path) -> Lexicon:
    """MUSE dictionary: one 'source target' pair per line (space or tab separated)."""
    pairs = []
    for number, line in enumerate(read_lines(path), start=1):
        parts = line.split()
        if len(parts) != 2:
            raise InputError(path, "'source target'", repr(line[:40]), line=number)
        pairs.append((parts[0], parts[1]))
    return pairs


# MUSE's sections of each dictionary: section name -> file name suffix (AME Section 4.1 trains
# on "full" + "test" = 5000-6500, measures the alignment ratio on "train" = 0-5000)
MUSE_SECTIONS = {"full": "", "0-5000": ".0-5000", "5000-6500": ".5000-6500"}


def lexicon_file(muse: Path, lang: str, section: str = "full", reverse: bool = False) -> Path:
    """MUSE's en-<lang> dictionary file, or with ``reverse`` its <lang>-en one (AME-CMR's R_deen
    trains on de-en.txt + de-en.5000-6500.txt)."""
    pair = f"{lang}-en" if reverse else f"en-{lang}"
    return Path(muse) / f"{pair}{MUSE_SECTIONS[section]}.txt"


def alignment_lexicons(
    muse: Path, lang: str, alignment: dict, reverse: bool = False
) -> tuple[Lexicon, Lexicon]:
    """(pairs RCSLS trains on, pairs the alignment ratio is measured on) for en-``lang`` (with
    ``reverse``: <lang>-en, source words in ``lang``).

    ``alignment["sections"]`` null: the full dictionary split by source word
    (``train_fraction``); otherwise the union of the named MUSE sections for training and one
    section for the ratio (AME: full + 5000-6500, and 0-5000). Pairs with a word outside the
    training vocabulary are dropped later (``lexicon_indices``)."""
    sections = alignment["sections"]
    if sections is None:
        whole = read_lexicon(lexicon_file(muse, lang, reverse=reverse))
        return split_lexicon(whole, alignment["train_fraction"])
    train = list(
        dict.fromkeys(
            pair
            for name in sections["train"]
            for pair in read_lexicon(lexicon_file(muse, lang, name, reverse))
        )
    )
    return train, read_lexicon(lexicon_file(muse, lang, sections["test"], reverse))


def download_lexicons(
    url: str,
    langs: list[str],
    out: Path,
    sections: tuple[str, ...] = ("full",),
    reverse: bool = False,
) -> None:
    """MUSE bilingual dictionaries ``<url>/en-<lang>[.<section>].txt`` (and with ``reverse``
    ``<lang>-en``), written atomically and checked to parse."""
    for lang in langs:
        for section in sections:
            for backwards in (False, True) if reverse else (False,):
                _download_lexicon(url, lexicon_file(Path(out), lang, section, backwards))


def _download_lexicon(url: str, target: Path) -> None:
    source = f"{url.rstrip('/')}/{target.name}"
    with atomic_path(target) as tmp:  # kept only when it parses
        _fetch(source, tmp)
        try:
            read_lexicon(tmp)
        except InputError as exc:  # name the URL, not the temporary file
            raise InputError(source, exc.expected, exc.found, line=exc.line) from None


def download(url: str, langs: list[str], out: Path) -> None:
    """fastText aligned vectors, one file per language, written atomically."""
    for lang in langs:
        _fetch(f"{url.rstrip('/')}/wiki.{lang}.align.vec", Path(out) / f"wiki.{lang}.align.vec")


def _fetch(url: str, target: Path) -> Path:
    """Download ``url`` to ``target`` (mlmm.data.fetch.download: retries, resume, atomic)."""
    from mlmm.data.fetch import download

    return download(url, target)


def map_vec_file(source: Path, w: torch.Tensor, out: Path, chunk: int = 50_000) -> int:
    """Every vector of the fastText file ``source`` mapped by ``w`` and l2-normalised, written to
    ``out`` (fastText align.py ``--output``: "Saving all aligned vectors", the whole source file,
    not only the ``--maxload`` rows it trained on); streamed in chunks. Returns the word count."""
    opener = gzip.open if Path(source).suffix == ".gz" else open
    count = 0
    # the rows go to an anonymous file beside ``out`` first: the header needs their count
    with (
        atomic_path(out) as tmp,
        tempfile.TemporaryFile("w+", encoding="utf-8", dir=tmp.parent) as sink,
    ):
        with opener(source, "rt", encoding="utf-8", errors="replace") as handle:
            dim = int(handle.readline().split()[1])
            words: list[str] = []
            rows: list[np.ndarray] = []

            def flush() -> None:
                mapped = unit(torch.from_numpy(np.stack(rows)) @ w.t()).numpy()
                for word, v in zip(words, mapped, strict=True):
                    sink.write(word + " " + " ".join(f"{x:.5f}" for x in v) + "\n")
                words.clear()
                rows.clear()

            seen: set[str] = set()
            for number, line in enumerate(handle, start=2):
                word, _, rest = line.rstrip("\n").partition(" ")
                if word in seen:
                    continue
                values = np.array(rest.split(), dtype=np.float32)
                if values.shape != (dim,):
                    raise InputError(source, f"a word and {dim} numbers", f"{values.size}",
                                     line=number)  # fmt: skip
                seen.add(word)
                words.append(word)
                rows.append(values)
                count += 1
                if len(rows) == chunk:
                    flush()
            if rows:
                flush()
        sink.seek(0)
        with open(tmp, "w", encoding="utf-8") as handle:
            handle.write(f"{count} {w.shape[0]}\n")
            shutil.copyfileobj(sink, handle)
    return count


def derive_onto_english(
    lang: str,
    english_vec: Path,
    muse: Path,
    out: Path,
    train_fraction: float,
    vec: Path | None = None,
    limit: int | None = None,
    rotation: dict | None = None,
    own_vectors: Callable[[int], dict[str, np.ndarray]] | None = None,
) -> None:
    """``wiki.<lang>.align.vec`` for a language fastText has no aligned vectors of (Japanese):
    its own vectors (a fastText .vec such as cc.ja.300.vec.gz, or without ``vec`` those
    ``own_vectors(dim)`` gives: on the demo mlmm.demo.word_vectors' PPMI+SVD of the training
    captions) mapped onto the given English aligned vectors (``rotate_onto_english``). RCSLS
    reads the first ``limit`` English lines too (align.py's ``--maxload`` for both languages);
    Procrustes needs only the pairs' English words."""
    if muse is None:
        raise InputError("retrieval-vectors", f"--muse DIR holding en-{lang}.txt", "none")
    rotation = rotation or {"method": "procrustes", "sections": None}
    rcsls = rotation["method"] == "rcsls"
    english = read_vec(english_vec, limit=limit if rcsls else None)
    dim = len(next(iter(english.values())))
    if vec is not None and str(vec).startswith(("http://", "https://")):
        vec = _fetch(str(vec), Path(out) / str(vec).rstrip("/").rsplit("/", 1)[-1])
    if vec is not None:
        vectors = read_vec(vec, limit=limit)
    elif own_vectors is not None:
        vectors = own_vectors(dim)
    else:
        raise InputError("retrieval-vectors", "--vec FILE or --data-root DIR", "neither")
    if rotation.get("sections"):
        lexicon = list(
            dict.fromkeys(
                pair
                for section in rotation["sections"]
                for pair in read_lexicon(lexicon_file(muse, lang, section))
            )
        )
    else:
        lexicon = read_lexicon(Path(muse) / f"en-{lang}.txt")
    target = Path(out) / f"wiki.{lang}.align.vec"
    if rcsls and rotation.get("output") == "all" and vec is not None:
        # align.py: W from the first --maxload rows, then every row of the file mapped
        where = f"en-{lang} lexicon"
        kept = training_rows(vectors, english, lexicon, train_fraction, where, rotation)
        z_src = unit(torch.from_numpy(np.stack(list(vectors.values()))).float())
        map_vec_file(vec, rcsls_matrix(z_src, english, kept, rotation), target)
        return
    rotated = rotate_onto_english(
        vectors, english, lexicon, train_fraction, f"en-{lang} lexicon", rotation
    )
    write_vec(target, rotated)
