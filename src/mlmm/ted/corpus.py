"""Reading the TED CLDC corpus of Hermann & Blunsom (2014) and fetching a copy of it.

Layout (as distributed, `ted-cldc/`): for each language X paired with English there are two
directories, `X-en/` (the X side of the talks) and `en-X/` (their English side), each holding
`{train,test}/<topic>/{positive,negative}/<id>.ted`. Every talk of a split appears once under
each of the 15 topics, as positive or negative; the two sides share the file names. A `.ted`
file is tokenised text (one sentence per line) whose tokens carry the language as a suffix
(`haus_de`); the suffix is stripped and tokens are lowercased. Brazilian Portuguese is `pb` in
the corpus (`corpus_codes` maps our code `pt-br` to it).
"""

from __future__ import annotations

import shutil
import tarfile
import urllib.request
import zipfile
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from mlmm.errors import InputError
from mlmm.io import read_lines, write_json
from mlmm.ted import PIVOT


@dataclass
class Side:
    """One side (language) of one pair and split: documents in id order, with topic labels."""

    ids: list[str]
    tokens: list[list[str]]
    labels: np.ndarray  # (documents, topics) bool


def corpus_code(language: str, codes: dict[str, str] | None) -> str:
    return (codes or {}).get(language, language)


def _id_key(name: str) -> tuple[int, int | str]:
    return (0, int(name)) if name.isdigit() else (1, name)


def read_document(path: Path, code: str) -> list[str]:
    """Tokens of one .ted file; an empty or non-UTF-8 file is an InputError naming it."""
    lines = read_lines(path, allow_empty_lines=True)
    suffix = f"_{code}"
    tokens = []
    for line in lines:
        for token in line.split():
            if token.endswith(suffix) and len(token) > len(suffix):
                token = token[: -len(suffix)]
            tokens.append(token.lower())
    if not tokens:
        raise InputError(path, "a tokenised TED document", "no tokens (empty file)")
    return tokens


def read_side(root: Path, pair_dir: str, split: str, code: str, topics: list[str]) -> Side:
    """Read `root/pair_dir/split`: each talk's text once, its label under every topic.

    The copies of a talk under the other topics are only checked to exist and be non-empty; a
    talk missing from a topic directory counts as negative for that topic (a topic without
    positive talks may lack its `positive/` directory).
    """
    base = Path(root) / pair_dir / split
    if not base.is_dir():
        raise InputError(base, "a directory of the TED CLDC layout", "no such directory")
    texts: dict[str, list[str]] = {}
    positive: dict[str, set[int]] = {}
    for t, topic in enumerate(topics):
        if not (base / topic).is_dir():
            raise InputError(base / topic, "a topic directory of the TED CLDC layout", "none")
        for polarity in ("positive", "negative"):
            for path in sorted((base / topic / polarity).glob("*.ted")):
                doc = path.stem
                if doc not in texts:
                    texts[doc] = read_document(path, code)
                    positive[doc] = set()
                elif path.stat().st_size == 0:
                    raise InputError(path, "a tokenised TED document", "an empty file")
                if polarity == "positive":
                    positive[doc].add(t)
                elif t in positive[doc]:
                    raise InputError(path, "a talk either positive or negative", "both")
    if not texts:
        raise InputError(base, "at least one .ted document", "none")
    ids = sorted(texts, key=_id_key)
    labels = np.zeros((len(ids), len(topics)), dtype=bool)
    for row, doc in enumerate(ids):
        labels[row, sorted(positive[doc])] = True
    return Side(ids=ids, tokens=[texts[d] for d in ids], labels=labels)


def read_pair(
    root: Path, language: str, split: str, topics: list[str], codes: dict[str, str] | None = None
) -> tuple[Side, Side]:
    """The (X side, English side) of one pair and split, row-aligned by talk id."""
    code = corpus_code(language, codes)
    foreign = read_side(root, f"{code}-{PIVOT}", split, code, topics)
    english = read_side(root, f"{PIVOT}-{code}", split, PIVOT, topics)
    if foreign.ids != english.ids:
        missing = sorted(set(foreign.ids) ^ set(english.ids), key=_id_key)[:5]
        raise InputError(
            Path(root) / f"{PIVOT}-{code}" / split,
            f"the same talks as {code}-{PIVOT}/{split}",
            f"talks on one side only: {missing}",
        )
    if not np.array_equal(foreign.labels, english.labels):
        raise InputError(
            Path(root) / f"{PIVOT}-{code}" / split,
            f"the same topic labels as {code}-{PIVOT}/{split}",
            "different labels",
        )
    return foreign, english


def check_layout(root: Path, languages: list[str], codes: dict[str, str] | None) -> None:
    for language in languages:
        code = corpus_code(language, codes)
        for name in (f"{code}-{PIVOT}", f"{PIVOT}-{code}"):
            if not (Path(root) / name).is_dir():
                raise InputError(
                    root, f"a TED CLDC directory with {name}/ (see docs/ted.md)", "none"
                )


def find_root(top: Path, languages: list[str], codes: dict[str, str] | None) -> Path:
    """The directory under `top` (itself or up to three levels down) holding the pair dirs."""
    first = f"{corpus_code(languages[0], codes)}-{PIVOT}"
    candidates = [top, *sorted(p for p in top.glob("**/") if len(p.relative_to(top).parts) <= 3)]
    for candidate in candidates:
        if (candidate / first).is_dir():
            check_layout(candidate, languages, codes)
            return candidate
    raise InputError(top, f"a TED CLDC tree with a {first}/ directory", "none")


def _unpack(archive: Path, dest: Path) -> None:
    if zipfile.is_zipfile(archive):
        with zipfile.ZipFile(archive) as handle:
            handle.extractall(dest)
    elif tarfile.is_tarfile(archive):
        with tarfile.open(archive) as handle:
            handle.extractall(dest, filter="data")
    else:
        raise InputError(archive, "a .zip or .tar(.gz) archive of ted-cldc", "another format")


def fetch(
    source: str,
    out_dir: Path,
    languages: list[str],
    codes: dict[str, str] | None,
    path: str | None = None,
    url: str | None = None,
    demo: dict | None = None,
) -> Path:
    """Make the corpus available and write `out_dir/index.json` naming its root.

    demo: generate it under out_dir; path: use a local copy in place; url: download an archive
    (or a file:// URL) into out_dir and unpack it there.
    """
    out_dir = Path(out_dir)
    if source == "demo":
        from mlmm.ted.demo import generate

        root = out_dir / "ted-cldc"
        if root.exists():
            shutil.rmtree(root)
        generate(root, codes=codes, languages=languages, **(demo or {}))
    elif source == "path":
        if not path:
            raise InputError("config.yaml", "ted.path set when ted.source is 'path'", "null")
        root = find_root(Path(path).expanduser().resolve(), languages, codes)
    elif source == "url":
        if not url:
            raise InputError("config.yaml", "ted.url set when ted.source is 'url'", "null")
        download = out_dir / "download"
        download.mkdir(parents=True, exist_ok=True)
        archive = download / (url.rstrip("/").rsplit("/", 1)[-1] or "ted-cldc.tar.gz")
        partial = archive.with_name(archive.name + ".part")
        try:
            urllib.request.urlretrieve(url, partial)
        except OSError as exc:
            raise InputError(url, "a reachable URL", f"{exc}") from None
        partial.replace(archive)
        unpacked = out_dir / "unpacked"
        if unpacked.exists():
            shutil.rmtree(unpacked)
        _unpack(archive, unpacked)
        root = find_root(unpacked, languages, codes)
    else:
        raise InputError("config.yaml", "ted.source one of demo, path, url", repr(source))
    check_layout(root, languages, codes)
    write_json(out_dir / "index.json", {"source": source, "root": str(root.resolve())})
    return root
