"""Prepare a verified Multi30K copy: validate it, build vocabularies, count Kádár Table 1's
statistics (the table itself: mlmm.results.corpus_table).

The papers used the upstream tokenised, lowercased files (``tok/*.lc.norm.tok.*``) and count
words on the training split; a word is kept when it occurs at least ``min_count`` times
(Kádár et al. 2018: words seen fewer than four times become UNK). A union vocabulary is the set
union of the per-language vocabularies (identical strings share one entry), with counts summed.
"""

from __future__ import annotations

import itertools
from collections import Counter
from collections.abc import Iterable
from pathlib import Path

from mlmm.data.multi30k import (
    CAPTIONS_PER_IMAGE,
    COMPARABLE_LANGUAGES,
    TASK2_SPLITS,
    TRANSLATION_LANGUAGES,
    comparable_captions,
    task_dir,
    translation_captions,
)
from mlmm.data.vocab import Vocabulary
from mlmm.degenerate import not_empty
from mlmm.errors import InputError
from mlmm.fingerprint import record_made_from, value_digest
from mlmm.io import read_lines, write_json
from mlmm.provenance import Timer, provenance

PORTIONS = {"translation": TRANSLATION_LANGUAGES, "comparable": COMPARABLE_LANGUAGES}
VOCAB_SPLITS = ("train",)


def expected_files() -> list[str]:
    """Relative paths of the Multi30K files the pipeline uses (the committed manifest's list)."""
    files = []
    for split, (prefix, list_name) in TASK2_SPLITS.items():
        files.append(f"data/task1/image_splits/{split}.txt")
        files.append(f"data/task2/image_splits/{list_name}.txt")
        for lang in TRANSLATION_LANGUAGES:
            files.append(f"data/task1/raw/{split}.{lang}.gz")
            files.append(f"data/task1/tok/{split}.lc.norm.tok.{lang}")
        for k, lang in itertools.product(range(1, CAPTIONS_PER_IMAGE + 1), COMPARABLE_LANGUAGES):
            files.append(f"data/task2/raw/{prefix}.{k}.{lang}.gz")
            files.append(f"data/task2/tok/{prefix}.lc.norm.tok.{k}.{lang}")
    return sorted(files)


def _check_count(path: Path, n_images: int, list_path: Path) -> None:
    n_lines = len(read_lines(path))
    if n_lines != n_images:
        raise InputError(
            path,
            f"{n_images} captions, one per image of {list_path.name}",
            f"{n_lines} lines",
            line=min(n_lines, n_images) + 1,
        )


def validate(root: str | Path) -> dict[str, int]:
    """Check every caption file of a copy (raw .gz and tok) against its split's image list.

    Raises the first problem as an InputError naming the file (and line): a missing file, a
    corrupt gzip, non-UTF-8 text, an empty caption, an empty image list (0-row features would
    fail only at training), a line count that differs from the list, or a task2 image list
    that is not the task1 list. Returns the images per split.
    """
    root = Path(root)
    sizes = {}
    for split, (prefix, list_name) in TASK2_SPLITS.items():
        list1 = task_dir(root, 1) / "image_splits" / f"{split}.txt"
        list2 = task_dir(root, 2) / "image_splits" / f"{list_name}.txt"
        images, images2 = read_lines(list1), read_lines(list2)
        if not images:
            raise InputError(list1, "at least one image name", "an empty list")
        if images != images2:
            first = next(
                (i for i, (a, b) in enumerate(zip(images, images2, strict=False)) if a != b),
                min(len(images), len(images2)),
            )
            raise InputError(
                list2, f"the images of {list1}, in order", "a different list", line=first + 1
            )
        for lang in TRANSLATION_LANGUAGES:
            for path in (
                task_dir(root, 1) / "raw" / f"{split}.{lang}.gz",
                task_dir(root, 1) / "tok" / f"{split}.lc.norm.tok.{lang}",
            ):
                _check_count(path, len(images), list1)
        for k, lang in itertools.product(range(1, CAPTIONS_PER_IMAGE + 1), COMPARABLE_LANGUAGES):
            for path in (
                task_dir(root, 2) / "raw" / f"{prefix}.{k}.{lang}.gz",
                task_dir(root, 2) / "tok" / f"{prefix}.lc.norm.tok.{k}.{lang}",
            ):
                _check_count(path, len(images), list2)
        sizes[split] = len(images)
    return sizes


def word_counts(root: str | Path, portion: str, language: str, split: str) -> Counter:
    """Token counts of one language of a portion on one split (tok files)."""
    if portion == "translation":
        sentences = translation_captions(root, split, language)
    else:
        sentences = [c for five in comparable_captions(root, split, language) for c in five]
    counts: Counter[str] = Counter()
    for tokens in sentences:
        counts.update(tokens)
    return counts


def all_word_counts(root: str | Path, splits: Iterable[str]) -> dict[tuple[str, str, str], Counter]:
    """(portion, language, split) -> token counts, for every language of both portions."""
    return {
        (portion, lang, split): word_counts(root, portion, lang, split)
        for portion, languages in PORTIONS.items()
        for lang in languages
        for split in splits
    }


def union_vocabulary(vocabularies: Iterable[Vocabulary]) -> Vocabulary:
    """Words kept in any of the vocabularies, with their counts summed over those vocabularies."""
    vocabularies = list(vocabularies)
    counts: Counter[str] = Counter()
    for vocab in vocabularies:
        counts.update(vocab.counts)
    return Vocabulary(counts, min(v.min_count for v in vocabularies))


def jaccard(a: set[str], b: set[str], where: str | Path = "the vocabularies") -> float:
    """|A and B| / |A or B|; two empty sets (0/0) are refused naming ``where``, not scored 1."""
    union = a | b
    not_empty(union, where, "word in either vocabulary (the overlap of two empty sets is 0/0)")
    return len(a & b) / len(union)


def vocabularies(
    root: str | Path,
    min_count: int,
    splits: Iterable[str] = VOCAB_SPLITS,
    counts: dict[tuple[str, str, str], Counter] | None = None,
) -> dict[str, dict[str, Vocabulary]]:
    """portion -> language -> Vocabulary, plus a 'union' entry per portion; ``counts`` (from
    all_word_counts) saves re-reading the files when several settings are compared."""
    splits = tuple(splits)
    if counts is None:
        counts = all_word_counts(root, splits)
    out: dict[str, dict[str, Vocabulary]] = {}
    for portion, languages in PORTIONS.items():
        per_language = {
            lang: Vocabulary(sum((counts[portion, lang, s] for s in splits), Counter()), min_count)
            for lang in languages
        }
        out[portion] = {**per_language, "union": union_vocabulary(per_language.values())}
    return out


def check_fetch_target(out: str | Path, manifest: str | Path, force: bool = False) -> bool:
    """Whether ``out`` already holds a verified copy of ``manifest`` (then nothing is fetched).

    A download must never cost the user a copy that was complete and verified, nor files of
    theirs: a verified copy of another manifest in ``out``, or a file at a manifest path whose
    hash differs (never one of ours: every fetched file is renamed into place only once its
    hash matches), is refused unless ``force``. Missing files (an interrupted fetch) are fine.
    """
    from mlmm.data.fetch import MARKER, read_manifest
    from mlmm.io import sha256_file

    out = Path(out)
    if force or not out.is_dir():
        return False
    wanted = read_manifest(manifest)
    marker = out / MARKER
    hint = "; pass --force to replace it"
    if marker.is_file() and read_manifest(marker) != wanted:
        raise InputError(
            out,
            f"an empty directory or a copy of {manifest}",
            f"a verified copy of another manifest ({marker}){hint}",
        )
    missing = False
    for rel, digest in sorted(wanted.items()):
        path = out / rel
        if not path.is_file():
            missing = True
        elif sha256_file(path) != digest:
            raise InputError(
                path, f"no file or the one with sha256 {digest} ({manifest})",
                f"another file (sha256 {sha256_file(path)}){hint}",
            )
    return marker.is_file() and not missing


def write_vocabularies(root: str | Path, out_dir: str | Path, min_count: int) -> list[Path]:
    """``<portion>.<lang>.tsv`` and ``<portion>.union.tsv`` per portion, ``all.union.tsv`` over
    both portions, and ``vocab.json`` with the sizes and provenance."""
    timer = Timer()
    with timer("count"):
        counts = all_word_counts(root, VOCAB_SPLITS)
        vocabs = vocabularies(root, min_count, counts=counts)
    made_from = {
        "corpus": value_digest({".".join(key): dict(c) for key, c in counts.items()}),
        "min count": value_digest(min_count),
    }
    out_dir = Path(out_dir)
    written = []
    for portion, by_language in vocabs.items():
        for name, vocab in by_language.items():
            vocab.save(out_dir / f"{portion}.{name}.tsv")
            written.append(out_dir / f"{portion}.{name}.tsv")
    everything = union_vocabulary(v for p in vocabs.values() for k, v in p.items() if k != "union")
    everything.save(out_dir / "all.union.tsv")
    written.append(out_dir / "all.union.tsv")
    for path in written:
        record_made_from(path, made_from)
    sizes = {p: {k: len(v.counts) for k, v in by.items()} for p, by in vocabs.items()}
    sizes["all"] = {"union": len(everything.counts)}
    config = {"root": str(root), "min_count": min_count, "splits": list(VOCAB_SPLITS)}
    write_json(
        out_dir / "vocab.json",
        {"provenance": provenance(config, None, data=("multi30k",)), "timings": timer.seconds,
         "sizes": sizes},  # fmt: skip
    )
    return written


def corpus_statistics(root: str | Path, min_count: int) -> dict:
    """The vocabulary statistics behind Kádár et al. 2018 Table 1, as plain numbers:

    - ``sizes``: reading -> portion -> language (and ``union``) -> vocabulary size, for the
      paper's reading (training split, words seen >= ``min_count`` times, listed first) and the
      nearby ones (training + validation; >= ``min_count`` + 1);
    - ``jaccard``: portion -> (language, language) -> Jaccard overlap of the two vocabularies
      under the paper's reading (every pair of the translation portion, diagonal included, in
      the portion's language order; en-de of the comparable portion).

    The table beside the paper's numbers is built from these (mlmm.results.corpus_table)."""
    counts = all_word_counts(root, ("train", "val"))
    readings = {
        f"train, >= {min_count}": vocabularies(root, min_count, ("train",), counts),
        f"train+val, >= {min_count}": vocabularies(root, min_count, ("train", "val"), counts),
        f"train, >= {min_count + 1}": vocabularies(root, min_count + 1, ("train",), counts),
    }
    sizes = {
        name: {
            portion: {lang: len(vocab.counts) for lang, vocab in vocabs[portion].items()}
            for portion in PORTIONS
        }
        for name, vocabs in readings.items()
    }
    ours = next(iter(readings.values()))

    def overlap(portion: str, a: str, b: str) -> float:
        return jaccard(ours[portion][a].known_words(), ours[portion][b].known_words(),
                       f"{root} ({portion}-portion {a} and {b} vocabularies)")  # fmt: skip

    pairs = {
        "translation": list(itertools.combinations_with_replacement(TRANSLATION_LANGUAGES, 2)),
        "comparable": [("en", "de")],
    }
    return {
        "sizes": sizes,
        "jaccard": {
            portion: {(a, b): overlap(portion, a, b) for a, b in pairs[portion]}
            for portion in PORTIONS
        },
    }
