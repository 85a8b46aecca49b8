"""The local data sets a configuration reads (copies that cannot be downloaded), checked while
the workflow is planned, for the jobs that read them: a missing or incomplete one is named by
`snakemake -n`, not by a job hours into the run, and a target whose jobs do not read a data set
plans without it (Kadar's tables need the Flickr30K images, not the TED corpus).

The rules files declare each local data set (`require_local_data` in workflow/rules/common.smk
keeps a `LocalData` per config key) and name the ones each rule reads in its input
(`local_data_input`, whose check is `check_job_data`). A data set is its directory or file and the
files expected inside it: glob patterns relative to it, each of which must match at least one
file, so that an empty directory, or a copy missing a part (one year of the STS sets, one side
of a TED pair, the paraphrase table beside the METEOR jar), stops the planning too. The readers
check the contents fully when the jobs run (line counts, every image of a split).

Standard library and mlmm.io only: imported while the workflow is parsed (docs/workflow.md).
"""

from __future__ import annotations

import hashlib
import json
import os
from dataclasses import dataclass, field
from pathlib import Path

# What each key's data set holds: the reader's layout (the files the jobs open first)
MULTI30K_IMAGES = ("*.jpg",)  # Flickr30K's <id>.jpg (mlmm.features)
COCO_IMAGES = ("train2014/*.jpg", "val2014/*.jpg")
MIC = ("images.txt", "captions.en", "captions.fr", "captions.de")  # mlmm.data.coco.read_mic
STS_YEARS = ("2014", "2015")  # SemEval image STS sets of Calixto & Liu Table 2
STS = tuple(
    f"{year}/STS.{part}.images.txt" for year in STS_YEARS for part in ("input", "gs")
)  # mlmm.retrieval.sts


def ted_expected(languages: list[str], codes: dict[str, str] | None) -> tuple[str, ...]:
    """Both sides of every pair, both splits, a topic with talks (mlmm.ted.corpus: the tree may
    sit up to three levels down, as `find_root` looks for it)."""
    patterns = []
    for language in languages:
        code = (codes or {}).get(language, language)
        for side in (f"{code}-en", f"en-{code}"):
            for split in ("train", "test"):
                patterns.append(f"**/{side}/{split}/*/*/*.ted")
    return tuple(patterns)


def muse_reverse_expected(languages: list[str]) -> tuple[str, ...]:
    """MUSE's <lang>-en dictionaries (alignment.mappings: two)."""
    return tuple(f"{lang}-en.txt" for lang in languages)


def meteor_expected(jar: str, language: str, paraphrase: bool) -> tuple[str, ...]:
    """Relative to the jar's directory: the jar, and with ``paraphrase`` its distribution's
    ``data/paraphrase-<language>.gz`` (Calixto & Liu: METEOR 1.5 with paraphrases)."""
    return (Path(jar).name,) + ((f"data/paraphrase-{language}.gz",) if paraphrase else ())


@dataclass(frozen=True)
class LocalData:
    key: str  # the config key naming it
    path: Path  # a directory (the expected files are relative to it)
    what: str  # what belongs there, for the message
    expected: tuple[str, ...] = field(default=())


def problem(data: LocalData) -> str | None:
    """What is wrong with one local data set (None: nothing)."""
    path = Path(data.path)
    absent = list(data.expected)
    if not path.exists():
        found = "nothing there"
    elif data.expected and not path.is_dir():
        found = "a file, not a directory"
    else:
        absent = [p for p in data.expected if next(path.glob(p), None) is None]
        if not absent:
            return None
        empty = path.is_dir() and next(path.iterdir(), None) is None
        found = "an empty directory" if empty else "no " + _listed(absent, ", no ")
    expected = f" ({_listed(absent, ', ')})" if absent else ""
    return (
        f"key '{data.key}': expected {data.what}{expected} at '{data.path}', found {found}: "
        f"put or link your copy there, or set {data.key}"
    )


def _listed(patterns: list[str], separator: str, shown: int = 4) -> str:
    more = len(patterns) - shown
    return separator.join(patterns[:shown]) + (f" and {more} more" if more > 0 else "")


def problems(sets: list[LocalData]) -> list[str]:
    """One line per missing or incomplete data set, in the order declared."""
    return [line for line in map(problem, sets) if line is not None]


def check_local_data(sets: list[LocalData], cwd: Path | None = None) -> None:
    """Stop with one message naming every missing or incomplete local data set."""
    lines = problems(sets)
    if lines:
        where = cwd or Path.cwd()
        raise SystemExit(
            f"config error: {len(lines)} local data set(s) missing or incomplete (paths "
            f"relative to {where}):\n" + "\n".join(f"  {line}" for line in lines)
        )


def check_job_data(needed: list[LocalData], declared: list[LocalData] = ()) -> None:
    """The check of one planned job: stop, naming the missing or incomplete sets among
    ``needed`` (those the job reads). When one is missing and ``declared`` is given (every set
    of the configuration, as planning the whole configuration needs them all), the message
    names every missing set of ``declared`` at once, not one per attempt."""
    if problems(needed):
        check_local_data(list(declared) or needed)


def tree_identity(directory: str | Path, cache: str | Path | None = None) -> str:
    """sha256 over the relative path, size and content digest of every file under
    ``directory`` (names starting with a dot left out): what a workflow rule whose input is a
    user's image directory passes as a param, so that an image replaced, edited, added, removed
    or renamed reruns the rule (Snakemake reruns a job whose params changed) while a copy that
    does not keep modification times (`cp -r`, rsync without -t) reruns nothing. A dry run
    needs no image bytes beyond this.

    ``cache`` (a JSON file) keeps each file's digest under its size and modification time, so
    a file is read once, again only when its size or mtime changes: an unchanged tree costs a
    stat per file, a copied one a read of every byte once.
    "absent" for a directory that is not there (the rule's job reports it when it runs)."""
    root = Path(directory)
    if not root.is_dir():
        return "absent"
    known = _read_cache(cache)
    digests, entries = {}, []
    for folder, dirs, files in os.walk(root):
        dirs[:] = sorted(d for d in dirs if not d.startswith("."))
        for name in sorted(f for f in files if not f.startswith(".")):
            path = Path(folder, name)
            stat = path.stat()
            relative = path.relative_to(root).as_posix()
            stamp = [stat.st_size, stat.st_mtime_ns]
            cached = known.get(relative)
            if cached and cached[:2] == stamp:
                digest = cached[2]
            else:
                with open(path, "rb") as handle:
                    digest = hashlib.file_digest(handle, "sha256").hexdigest()
            digests[relative] = [*stamp, digest]
            entries.append((relative, stat.st_size, digest))
    if cache is not None and digests != known:
        _write_cache(Path(cache), digests)
    return hashlib.sha256(json.dumps(entries).encode()).hexdigest()


def _read_cache(cache: str | Path | None) -> dict:
    from mlmm.errors import InputError
    from mlmm.io import read_json

    if not cache or not Path(cache).is_file():
        return {}
    try:
        known = read_json(cache, "the image digest cache")
    except InputError:
        return {}  # a damaged cache: digests are computed again
    return known if isinstance(known, dict) else {}


def _write_cache(cache: Path, digests: dict) -> None:
    """Through the write layer (atomically: a reader never sees half a file)."""
    from mlmm.io import write_text

    write_text(cache, json.dumps(digests))
