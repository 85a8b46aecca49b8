"""Reading the TED CLDC corpus of Hermann & Blunsom (2014) and fetching a copy of it.

Layout (as distributed, `ted-cldc/`): for each language X paired with English there are two
directories, `X-en/` (the X side of the talks) and `en-X/` (their English side), each holding
`{train,test}/<topic>/{positive,negative}/<id>.ted`. Every talk of a split appears once under
each topic (15 in the paper's corpus; whichever topic directories a copy has are read), as
positive or negative; the two sides share the file names. A `.ted` file is text, one sentence
per line; lines starting with `<` (markup such as `<title>`) are skipped as in Hermann &
Blunsom's reader (bicvm `load_doc.cc`). Tokens may carry the language as a suffix (`haus_de`,
as distributed) or not (untokenised transcripts): both read alike, the suffix is stripped and
tokens are lowercased. Brazilian Portuguese is `pb` in the corpus (`corpus_codes` maps our
code `pt-br` to it). Any non-empty set of languages paired with English can be read.
"""

from __future__ import annotations

import tarfile
import urllib.parse
import urllib.request
import zipfile
import zlib
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from mlmm.errors import InputError
from mlmm.io import (
    atomic_path,
    claim_output_dir,
    discard,
    discard_build,
    forcing,
    guard_outputs,
    mark_output_dir,
    read_lines,
    replace_dir,
    temp_dir_beside,
    write_json,
)
from mlmm.ted import PIVOT, corpus_code


@dataclass
class Side:
    """One side (language) of one pair and split: documents in id order, with topic labels."""

    ids: list[str]
    tokens: list[list[str]]
    labels: np.ndarray  # (documents, topics) bool


def _id_key(name: str) -> tuple[int, int | str]:
    return (0, int(name)) if name.isdigit() else (1, name)


def read_sentences(path: Path, code: str) -> list[list[str]]:
    """The tokens of each line of one .ted file (markup lines skipped, empty lines kept as []):
    the sentence view of a talk, which the pivot stage's Z2 MT corpus aligns line by line."""
    lines = read_lines(path, allow_empty_lines=True)
    suffix = f"_{code}"
    sentences = []
    for line in lines:
        if line.startswith("<"):
            continue
        tokens = []
        for token in line.split():
            if token.endswith(suffix) and len(token) > len(suffix):
                token = token[: -len(suffix)]
            tokens.append(token.lower())
        sentences.append(tokens)
    return sentences


def read_document(path: Path, code: str) -> list[str]:
    """Tokens of one .ted file; an empty or non-UTF-8 file is an InputError naming it."""
    tokens = [token for sentence in read_sentences(path, code) for token in sentence]
    if not tokens:
        raise InputError(path, "a tokenised TED document", "no tokens (empty file)")
    return tokens


def find_topics(root: Path, languages: list[str], codes: dict[str, str] | None) -> list[str]:
    """The topics of the corpus: the topic directories of the first pair's training split.

    Every other side and split must hold the same ones (read_side names a missing one).
    """
    base = Path(root) / f"{corpus_code(languages[0], codes)}-{PIVOT}" / "train"
    if not base.is_dir():
        raise InputError(base, "a directory of the TED CLDC layout", "no such directory")
    topics = sorted(p.name for p in base.iterdir() if p.is_dir())
    if not topics:
        raise InputError(base, "topic directories (art/, business/, ...)", "none")
    return topics


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
    for t, topic in enumerate(topics):
        if labels[:, t].all():  # predicting "positive" everywhere would score F1 1.0
            raise InputError(
                base / topic / "negative",
                f"at least one negative talk of {topic} ({len(ids)} talks)",
                "none: every talk positive",
            )
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
    """The directory under `top` (itself or up to three levels down) holding the pair dirs.

    Two such trees under `top` (an old and a new copy side by side) are refused rather than
    one picked by name: point ted.path at the one meant."""
    first = f"{corpus_code(languages[0], codes)}-{PIVOT}"
    if (top / first).is_dir():
        check_layout(top, languages, codes)
        return top
    found = [
        p
        for p in sorted(top.glob("**/"))
        if len(p.relative_to(top).parts) <= 3 and (p / first).is_dir()
    ]
    if len(found) > 1:
        names = ", ".join(str(p.relative_to(top)) for p in found)
        raise InputError(top, f"one TED CLDC tree (a {first}/ directory)", f"{len(found)}: {names}")
    if found:
        check_layout(found[0], languages, codes)
        return found[0]
    raise InputError(top, f"a TED CLDC tree with a {first}/ directory", "none")


FETCH_MARKER = ".mlmm-ted-fetch.sha256"  # in download/ and unpacked/ of ted-fetch --source url


def check_archive(archive: Path) -> None:
    """Read the whole archive before unpacking: a truncated or corrupt one is an InputError."""
    try:
        if zipfile.is_zipfile(archive):
            with zipfile.ZipFile(archive) as handle:
                bad = handle.testzip()
            if bad is not None:
                raise InputError(archive, "a readable .zip archive", f"a corrupt member {bad}")
        else:
            with tarfile.open(archive) as handle:
                for _ in handle:  # reads every member's data through to the end
                    pass
    except (tarfile.TarError, EOFError, OSError, zipfile.BadZipFile, zlib.error) as exc:
        raise InputError(
            archive, "a complete .zip or .tar(.gz) archive of ted-cldc", f"{exc} (truncated?)"
        ) from None


def unpack(archive: Path, dest: Path) -> None:
    """Check `archive`, then unpack it to a temporary sibling of `dest` renamed into place."""
    check_archive(archive)
    partial = temp_dir_beside(dest)
    try:
        if zipfile.is_zipfile(archive):
            with zipfile.ZipFile(archive) as handle:
                handle.extractall(partial)
        else:
            with tarfile.open(archive) as handle:
                handle.extractall(partial, filter="data")
        mark_output_dir(partial, FETCH_MARKER)
        replace_dir(partial, dest)
    finally:
        discard_build(partial)


def fetch(
    source: str,
    out_dir: Path,
    languages: list[str],
    codes: dict[str, str] | None,
    path: str | None = None,
    url: str | None = None,
    force: bool = False,
) -> Path:
    """Make the corpus available and write `out_dir/index.json` naming its root.

    path: use a local copy in place; url: download an archive (or a file:// URL) into out_dir,
    check it and unpack it there. (The generated demo corpus is mlmm.ted.demo.fetch_demo's.)
    """
    out_dir = Path(out_dir)
    with forcing(force):  # ``force``: what the write layer would refuse is replaced, too
        return _fetch(source, out_dir, languages, codes, path, url, force)


def _fetch(source, out_dir, languages, codes, path, url, force) -> Path:
    """``fetch`` with ``force`` in effect for the write layer."""
    if source == "path":
        if not path:
            raise InputError("config.yaml", "ted.path set when ted.source is 'path'", "null")
        guard_outputs([out_dir / "index.json"], [path])
        root = find_root(Path(path).expanduser().resolve(), languages, codes)
    elif source == "url":
        if not url:
            raise InputError("config.yaml", "ted.url set when ted.source is 'url'", "null")
        download, unpacked = out_dir / "download", out_dir / "unpacked"
        local = urllib.parse.urlparse(url)
        guard_outputs(
            [download, unpacked, out_dir / "index.json"],
            [urllib.request.url2pathname(local.path)] if local.scheme == "file" else [],
        )
        # a user's archive or unpacked corpus in OUT_DIR is not ours to replace
        claim_output_dir(download, "TED download of ours", FETCH_MARKER, force=force)
        claim_output_dir(unpacked, "TED corpus unpacked by us", FETCH_MARKER, force=force)
        download.mkdir(parents=True, exist_ok=True)
        archive = download / (url.rstrip("/").rsplit("/", 1)[-1] or "ted-cldc.tar.gz")
        try:
            with atomic_path(archive) as partial:
                urllib.request.urlretrieve(url, partial)
        except OSError as exc:
            raise InputError(url, "a reachable URL", f"{exc}") from None
        if not (zipfile.is_zipfile(archive) or tarfile.is_tarfile(archive)):
            discard(archive)
            raise InputError(url, "a .zip or .tar(.gz) archive of ted-cldc", "another format")
        try:
            unpack(archive, unpacked)
        except InputError:
            discard(archive)  # a bad download is not kept as if it were good
            raise
        mark_output_dir(download, FETCH_MARKER)
        root = find_root(unpacked, languages, codes)
    else:
        raise InputError(
            "config.yaml", "ted.source path or url (demo: mlmm.ted.demo.fetch_demo)", repr(source)
        )
    return record_root(out_dir, source, root, languages, codes)


def record_root(
    out_dir: Path, source: str, root: Path, languages: list[str], codes: dict[str, str] | None
) -> Path:
    """Check the corpus at `root` and write `out_dir/index.json` naming it and its source."""
    check_layout(root, languages, codes)
    write_json(out_dir / "index.json", {"source": source, "root": str(root.resolve())})
    return root
