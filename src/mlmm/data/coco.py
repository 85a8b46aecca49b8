"""MS-COCO for AME (en/ja) and the Bridge CorrNet pivot experiment, in the Multi30K layout.

Inputs: Karpathy's split (``dataset_coco.json``, or ``caption_datasets.zip`` holding it), Japanese
captions in the COCO caption JSON format (STAIR Captions, Yoshikawa et al. 2017, as AME used; or
YJ Captions 26k), and the MIC test set of Rajendran et al. 2016 in our documented layout (a
directory with ``images.txt`` and ``captions.{en,fr,de}``, five raw lines per image in image
order). Output: ``data/task1/image_splits/<split>.txt``, ``data/task2/image_splits/
<split>_images.txt`` and ``data/task2/tok/<split>.lc.norm.tok.<k>.<lang>`` (k = 1..5), which
mlmm.data.multi30k reads like Multi30K's comparable portion, plus ``provenance.json`` and
``MANIFEST.sha256`` (written last: the marker that the whole copy is complete).

Splits: train (Karpathy train + restval), val, test (en, ja); pivot_train (train, or with
``pivot_split="paper"`` every image, minus the MIC images, en: the pivot experiment's
image-English set Z1); mic (en, fr, de). Images keep the
order of the Karpathy file; MIC images the order of images.txt.

Tokenisation: English of the Karpathy split is Karpathy's own ``tokens``, lowercased. Japanese is
MeCab surface forms (fugashi + unidic-lite) of the caption with all whitespace removed, as AME
did. MIC captions are tokenised like the text the pivot models learn each language from
(Rajendran Table 5): French and German like Hermann & Blunsom's ted-cldc tokens (elisions such
as ``l'huile`` whole, no Moses escaping), English like Karpathy's tokens (``tokenise_mic``).
"""

from __future__ import annotations

import functools
import json
import logging
import re
import shutil
import tarfile
import urllib.parse
import zipfile
import zlib
from collections import Counter, defaultdict
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass
from importlib import metadata
from pathlib import Path, PurePosixPath
from typing import Any

from mlmm.data.fetch import MARKER, download, manifest_text
from mlmm.data.multi30k import CAPTIONS_PER_IMAGE
from mlmm.errors import InputError
from mlmm.io import (
    atomic_path,
    parse_json,
    read_lines,
    replace_dir,
    sha256_file,
    temp_dir_beside,
    write_json,
    write_text,
)
from mlmm.logs import progress
from mlmm.provenance import Timer, provenance

log = logging.getLogger(__name__)

KARPATHY_NAME = "dataset_coco.json"
# Karpathy split -> ours: restval (the 30,504 val2014 images outside val/test) joins train
KARPATHY_SPLITS = {"train": "train", "restval": "train", "val": "val", "test": "test"}
MIC_LANGUAGES = ("en", "fr", "de")
PIVOT_SPLITS = ("karpathy", "paper")
MIC_FILES = ("images.txt",) + tuple(f"captions.{lang}" for lang in MIC_LANGUAGES)
SPLIT_LANGUAGES = {
    "train": ("en", "ja"),
    "val": ("en", "ja"),
    "test": ("en", "ja"),
    "pivot_train": ("en",),
    "mic": MIC_LANGUAGES,
}
_URL_SCHEMES = {"http", "https", "ftp", "file"}
_SHOWN = 5  # cocoids named in a missing-caption message


@dataclass(frozen=True)
class KarpathyImage:
    path: str  # relative to the COCO image directory: "<filepath>/<filename>"
    cocoid: int
    split: str  # train | val | test (restval already folded into train)
    captions: tuple[str, ...]  # the first five, tokens lowercased and joined by spaces


# ---------------------------------------------------------------- readers


def _load_json(path: Path) -> Any:
    """A JSON file, or the ``dataset_coco.json`` member of a zip (Karpathy's archive)."""
    try:
        if zipfile.is_zipfile(path):
            with zipfile.ZipFile(path) as archive:
                members = [n for n in archive.namelist() if n.endswith(KARPATHY_NAME)]
                if len(members) != 1:
                    raise InputError(path, f"one member named {KARPATHY_NAME}", f"{members}")
                data = archive.read(members[0])
        else:
            data = path.read_bytes()
        return parse_json(data, path, "the Karpathy split JSON")
    except FileNotFoundError:
        raise InputError(path, "an existing file", "no such file") from None
    except (json.JSONDecodeError, UnicodeDecodeError, zipfile.BadZipFile, zlib.error) as exc:
        raise InputError(path, "a JSON document", f"unreadable data ({exc})") from None


def _field(path: Path, record: dict, name: str, kind: type, where: str) -> Any:
    if not isinstance(record, dict) or not isinstance(record.get(name), kind):
        found = type(record.get(name)).__name__ if isinstance(record, dict) else "no object"
        raise InputError(path, f"a {kind.__name__}", found, key=f"{where}.{name}")
    return record[name]


def read_karpathy(path: str | Path) -> list[KarpathyImage]:
    """Images of Karpathy's MS-COCO split in file order, with their first five English captions.

    An unknown split, fewer than five sentences, an empty token list or a repeated image is an
    InputError naming the JSON key.
    """
    path = Path(path)
    images = _field(path, _load_json(path), "images", list, "$")
    out, seen = [], set()
    for i, record in enumerate(images):
        where = f"images[{i}]"
        split = _field(path, record, "split", str, where)
        if split not in KARPATHY_SPLITS:
            raise InputError(path, f"one of {sorted(KARPATHY_SPLITS)}", repr(split), key=where)
        rel = f"{_field(path, record, 'filepath', str, where)}/"
        rel += _field(path, record, "filename", str, where)
        if rel in seen:
            raise InputError(path, "each image once", f"{rel} again", key=where)
        seen.add(rel)
        sentences = _field(path, record, "sentences", list, where)
        if len(sentences) < CAPTIONS_PER_IMAGE:
            raise InputError(
                path, f">= {CAPTIONS_PER_IMAGE} sentences", f"{len(sentences)}", key=where
            )
        captions = []
        for k, sentence in enumerate(sentences[:CAPTIONS_PER_IMAGE]):
            tokens = _field(path, sentence, "tokens", list, f"{where}.sentences[{k}]")
            text = " ".join(str(t).lower() for t in tokens).strip()
            if not text or "\n" in text:
                raise InputError(
                    path, "a non-empty one-line token list", repr(tokens), key=f"{where}.tokens"
                )
            captions.append(text)
        cocoid = _field(path, record, "cocoid", int, where)
        out.append(KarpathyImage(rel, cocoid, KARPATHY_SPLITS[split], tuple(captions)))
    if not out:
        raise InputError(path, "at least one image", "an empty list", key="images")
    return out


def _caption_documents(paths: Sequence[str | Path]) -> Iterator[tuple[Path, Any]]:
    """(name, JSON document) of each caption file; a .tar(.gz) such as STAIR's release archive
    gives its untokenised ``*.json`` members (STAIR also ships ``*_tokenized.json``, skipped)."""
    for path in map(Path, paths):
        if path.is_file() and tarfile.is_tarfile(path):
            with tarfile.open(path) as archive:
                members = sorted(
                    (m for m in archive.getmembers() if m.isfile() and m.name.endswith(".json")
                     and "tokenized" not in Path(m.name).name),
                    key=lambda m: m.name,
                )  # fmt: skip
                if not members:
                    raise InputError(path, "an archive with caption *.json files", "none")
                for member in members:
                    data = archive.extractfile(member).read()
                    document = parse_json(data, f"{path}:{member.name}", "a JSON document")
                    yield Path(f"{path}:{member.name}"), document
        else:
            yield path, _load_json(path)


def read_caption_json(paths: Sequence[str | Path]) -> dict[int, list[str]]:
    """COCO image id -> its captions ordered by annotation id, over one or more COCO caption
    JSON files (e.g. STAIR's train and val files); a repeated annotation id is an InputError."""
    by_image: dict[int, list[tuple[int, str]]] = defaultdict(list)
    seen: dict[int, Path] = {}
    for path, document in _caption_documents(paths):
        annotations = _field(path, document, "annotations", list, "$")
        for i, record in enumerate(annotations):
            where = f"annotations[{i}]"
            ann_id = _field(path, record, "id", int, where)
            if ann_id in seen:
                raise InputError(
                    path, "unique annotation ids", f"{ann_id} (also in {seen[ann_id]})", key=where
                )
            seen[ann_id] = path
            image_id = _field(path, record, "image_id", int, where)
            by_image[image_id].append((ann_id, _field(path, record, "caption", str, where)))
    return {image: [c for _, c in sorted(pairs)] for image, pairs in by_image.items()}


@functools.cache
def _tagger():
    import fugashi

    return fugashi.Tagger()


def tokenise_japanese(text: str) -> list[str]:
    """MeCab (unidic-lite) surface forms of a caption with all whitespace removed, lowercased."""
    return [word.surface.lower() for word in _tagger()("".join(text.split()))]


# A number with its inner separators, a word with inner apostrophes (French/Italian elisions
# such as l'huile stay one token, as in Hermann & Blunsom's ted-cldc files), or one other
# non-space character.
_TOKEN = re.compile(r"\d+(?:[.,]\d+)+|\w+(?:'\w+)*|[^\w\s]")
_APOSTROPHES = str.maketrans({"\u2019": "'", "\u2018": "'", "`": "'"})


def tokenise_mic(text: str, lang: str) -> list[str]:
    """MIC captions tokenised like the text each language is trained on in Table 5:
    fr/de like the ted-cldc tokens (lowercased, elisions kept whole, punctuation split off,
    no Moses escaping); en like Karpathy's COCO tokens (lowercased words, no punctuation)."""
    tokens = _TOKEN.findall(text.lower().translate(_APOSTROPHES))
    if lang == "en":
        return [t for t in tokens if any(c.isalnum() for c in t)]
    return tokens


def read_mic(directory: str | Path) -> tuple[list[str], dict[str, list[list[str]]]]:
    """MIC test set: image paths (relative to the COCO image directory) and, per language, the
    five raw captions of every image. A caption file that is not 5 lines per image is an error."""
    directory = Path(directory)
    images_path = directory / "images.txt"
    images = read_lines(images_path)
    seen: set[str] = set()
    for number, rel in enumerate(images, start=1):
        parts = PurePosixPath(rel)
        if rel != rel.strip() or parts.is_absolute() or ".." in parts.parts or rel in seen:
            raise InputError(images_path, "a unique relative image path", repr(rel), line=number)
        seen.add(rel)
    captions = {}
    for lang in MIC_LANGUAGES:
        path = directory / f"captions.{lang}"
        lines = read_lines(path)
        expected = CAPTIONS_PER_IMAGE * len(images)
        if len(lines) != expected:
            raise InputError(
                path,
                f"{expected} lines ({CAPTIONS_PER_IMAGE} per image of {images_path.name}, "
                f"{len(images)} images)",
                f"{len(lines)} lines",
            )
        captions[lang] = [
            lines[i : i + CAPTIONS_PER_IMAGE] for i in range(0, expected, CAPTIONS_PER_IMAGE)
        ]
    return images, captions


# ---------------------------------------------------------------- sources


@dataclass(frozen=True)
class Source:
    role: str  # karpathy | japanese | mic
    given: str  # the path or URL as given
    path: Path  # the local file read
    sha256: str
    verified: bool


def is_url(source: str) -> bool:
    return urllib.parse.urlsplit(str(source)).scheme in _URL_SCHEMES


def _name(source: str) -> str:
    """The file name a sha256 is keyed by: the last path component of the path or URL."""
    if is_url(source):
        return PurePosixPath(urllib.parse.urlsplit(source).path).name
    return Path(source).name


def _local(
    role: str,
    source: str,
    expected: str | None,
    download_dir: Path,
    retries: int,
    backoff: float,
    timeout: float,
) -> Source:
    """A local, hash-checked copy of one input file; a URL is downloaded atomically (a file
    already in ``download_dir`` is re-used only when its configured sha256 matches)."""
    name = _name(source)
    if is_url(source):
        path = download_dir / name
        if not (expected and path.is_file() and sha256_file(path) == expected):
            with atomic_path(path) as tmp:
                download(source, tmp, None, retries, timeout)
                _check(source, expected, sha256_file(tmp))
    else:
        path = Path(source)
        if not path.is_file():
            raise InputError(path, f"an existing file ({role} input)", "no such file")
    found = sha256_file(path)
    _check(source, expected, found)
    if expected is None:
        log.warning("%s: sha256 not verified (none configured), found %s", source, found)
    return Source(role, source, path, found, expected is not None)


def _check(source: str, expected: str | None, found: str) -> None:
    if expected is not None and found != expected:
        raise InputError(source, f"sha256 {expected} (--sha256 {_name(source)}=...)", found)


def _mic_sources(given: str) -> list[str]:
    if is_url(given):
        return [f"{given.rstrip('/')}/{name}" for name in MIC_FILES]
    return [str(Path(given) / name) for name in MIC_FILES]


def _keyed_by(key: str, source: str) -> bool:
    """A --sha256 key names an input by its location as given or by its file name."""
    if key in (source, _name(source)):
        return True
    return not is_url(key) and not is_url(source) and Path(key) == Path(source)


def _expected_hashes(sha256: dict[str, str], sources: list[str]) -> dict[str, str | None]:
    """Source -> configured sha256 (None when not configured); every key must name one input."""
    expected: dict[str, str | None] = dict.fromkeys(sources)
    for key, digest in sha256.items():
        matches = [s for s in sources if _keyed_by(key, s)]
        if len(matches) != 1:
            raise InputError(
                "--sha256",
                f"the location or file name of exactly one input file for '{key}' (MIC: one "
                f"per file, {', '.join(MIC_FILES)})",
                f"{len(matches)} inputs" if matches else "no input",
            )
        if len(digest) != 64 or any(c not in "0123456789abcdef" for c in digest):
            raise InputError("--sha256", "a 64-digit lowercase hex digest", repr(digest), key=key)
        expected[matches[0]] = digest
    return expected


# ---------------------------------------------------------------- assembly


def japanese_captions(
    images: Iterable[KarpathyImage], captions: dict[int, list[str]], where: str
) -> dict[int, tuple[str, ...]]:
    """cocoid -> its first five Japanese captions, tokenised; images with fewer are an error that
    counts them per split and names the first few cocoids."""
    images = list(images)
    lacking = [i for i in images if len(captions.get(i.cocoid, ())) < CAPTIONS_PER_IMAGE]
    if lacking:
        per_split = Counter(i.split for i in lacking)
        counts = ", ".join(
            f"{per_split[s]} {s}" for s in ("train", "val", "test") if s in per_split
        )
        first = [i.cocoid for i in lacking[:_SHOWN]]
        found = f"fewer for {counts} images (first cocoids: {', '.join(map(str, first))})"
        if "test" in per_split:
            found += (
                "; YJ Captions covers only 26,500 train2014 images and cannot supply the "
                "Karpathy val/test splits (val2014): use STAIR Captions"
            )
        raise InputError(
            where, f"{CAPTIONS_PER_IMAGE} Japanese captions for every train/val/test image", found
        )
    out = {}
    for image in progress(images, desc="tokenise ja", unit="image"):
        tokenised = []
        for caption in captions[image.cocoid][:CAPTIONS_PER_IMAGE]:
            tokens = tokenise_japanese(caption)
            if not tokens:
                raise InputError(where, "a non-empty caption", repr(caption), key=str(image.cocoid))
            tokenised.append(" ".join(tokens))
        out[image.cocoid] = tuple(tokenised)
    return out


def _write_split(
    root: Path, split: str, images: list[str], captions: dict[str, list[Sequence[str]]]
) -> None:
    """Image lists (task1 and task2 names) and one tok file per caption index and language."""
    text = "".join(f"{rel}\n" for rel in images)
    write_text(root / "data/task1/image_splits" / f"{split}.txt", text)
    write_text(root / "data/task2/image_splits" / f"{split}_images.txt", text)
    for lang, per_image in captions.items():
        for k in range(CAPTIONS_PER_IMAGE):
            lines = "".join(f"{five[k]}\n" for five in per_image)
            write_text(root / "data/task2/tok" / f"{split}.lc.norm.tok.{k + 1}.{lang}", lines)


def _version(package: str) -> str:
    try:
        return metadata.version(package)
    except metadata.PackageNotFoundError:
        return "unknown"


def prepare_coco(
    out: str | Path,
    karpathy: str,
    japanese: Sequence[str],
    mic: str,
    sha256: dict[str, str] | None = None,
    download_dir: str | Path | None = None,
    retries: int = 4,
    backoff: float = 2.0,
    timeout: float = 60.0,
    pivot_split: str = "karpathy",
) -> dict[str, int]:
    """Write the MS-COCO layout to ``out`` as a whole (a temporary directory renamed into place,
    MANIFEST.sha256 written last); a failure leaves ``out`` as it was. Inputs are paths or URLs
    (``mic``: a directory or its base URL); ``sha256`` maps an input's file name to its digest,
    and an input without one is hashed, recorded as unverified and warned about. Downloads go to
    ``download_dir`` (kept, re-used when their sha256 matches) or a temporary directory.
    ``pivot_split`` chooses Z1 (split pivot_train): ``karpathy`` = Karpathy train + restval
    minus the MIC images; ``paper`` = every train2014/val2014 image of the Karpathy file minus
    the MIC images, as Rajendran et al. (Section 4.2) split the merged 120K images themselves
    (the pivot stage holds its 1K validation out of it). Returns the images per split.
    """
    if pivot_split not in PIVOT_SPLITS:
        raise InputError("--pivot-split", " or ".join(PIVOT_SPLITS), repr(pivot_split))
    out = Path(out)
    out.parent.mkdir(parents=True, exist_ok=True)
    timer = Timer()
    work = temp_dir_beside(out)
    try:
        downloads = Path(download_dir) if download_dir is not None else work / "downloads"
        given = {"karpathy": [karpathy], "japanese": list(japanese), "mic": _mic_sources(mic)}
        if not given["japanese"]:
            raise InputError("--japanese", "at least one caption JSON file", "none")
        expected = _expected_hashes(sha256 or {}, [s for group in given.values() for s in group])
        with timer("fetch"):
            sources = {
                role: [
                    _local(role, s, expected[s], downloads, retries, backoff, timeout)
                    for s in group
                ]
                for role, group in given.items()
            }
        with timer("read"):
            images = read_karpathy(sources["karpathy"][0].path)
            ja_paths = [s.path for s in sources["japanese"]]
            ja_raw = read_caption_json(ja_paths)
            mic_dir = sources["mic"][0].path.parent
            mic_images, mic_raw = read_mic(mic_dir)
        known = {image.path: image for image in images}
        for number, rel in enumerate(mic_images, start=1):
            if rel not in known:
                raise InputError(
                    mic_dir / "images.txt", "an image of the Karpathy split", rel, line=number
                )
        with timer("tokenise_ja"):
            ja = japanese_captions(images, ja_raw, ", ".join(map(str, ja_paths)))
        with timer("tokenise_mic"):
            mic_tok = {
                lang: [
                    tuple(" ".join(tokenise_mic(c, lang)) for c in five)
                    for five in progress(per_image, desc=f"tokenise mic {lang}", unit="image")
                ]
                for lang, per_image in mic_raw.items()
            }
        for lang, per_image in mic_tok.items():
            for i, five in enumerate(per_image):
                if not all(five):
                    raise InputError(
                        mic_dir / f"captions.{lang}",
                        "captions with tokens",
                        "an empty one",
                        line=CAPTIONS_PER_IMAGE * i + 1,
                    )
        by_split: dict[str, list[KarpathyImage]] = {"train": [], "val": [], "test": []}
        for image in images:
            by_split[image.split].append(image)
        in_mic = set(mic_images)
        z1 = by_split["train"] if pivot_split == "karpathy" else images
        by_split["pivot_train"] = [i for i in z1 if i.path not in in_mic]
        root = work / "out"
        with timer("write"):
            for split in ("train", "val", "test", "pivot_train"):
                chosen = by_split[split]
                captions = {"en": [i.captions for i in chosen]}
                if "ja" in SPLIT_LANGUAGES[split]:
                    captions["ja"] = [ja[i.cocoid] for i in chosen]
                _write_split(root, split, [i.path for i in chosen], captions)
            _write_split(root, "mic", mic_images, mic_tok)
        counts = {split: len(by_split[split]) for split in ("train", "val", "test", "pivot_train")}
        counts["mic"] = len(mic_images)
        config = {
            "karpathy": karpathy,
            "japanese": list(japanese),
            "mic": mic,
            "captions_per_image": CAPTIONS_PER_IMAGE,
            "pivot_split": pivot_split,
            "split_languages": SPLIT_LANGUAGES,
        }
        tokenisers = {
            "en (train/val/test/pivot_train)": "Karpathy's tokens, lowercased",
            "ja": f"MeCab surface forms via fugashi {_version('fugashi')} + unidic-lite "
            f"{_version('unidic-lite')}, whitespace removed first, lowercased",
            "mic en": "lowercased words, punctuation dropped (like Karpathy's tokens)",
            "mic fr/de": "lowercased, elisions kept whole, punctuation split off, no escaping "
            "(like the ted-cldc tokens)",
        }
        write_json(
            root / "provenance.json",
            {
                "provenance": provenance(config, None, data=("coco",)),
                "inputs": [
                    {
                        "role": s.role,
                        "source": s.given,
                        "sha256": s.sha256,
                        "verified": s.verified,
                    }
                    for group in sources.values()
                    for s in group
                ],
                "images": counts,
                "tokenisers": tokenisers,
                "timings": timer.seconds,
            },
        )
        data = sorted(p for p in (root / "data").rglob("*") if p.is_file())
        entries = {p.relative_to(root).as_posix(): sha256_file(p) for p in data}
        write_text(root / MARKER, manifest_text(entries))
        replace_dir(root, out)
    finally:
        shutil.rmtree(work, ignore_errors=True)
    return counts


def fetch_images(
    archives: Sequence[str],
    out: str | Path,
    sha256: dict[str, str] | None = None,
    download_dir: str | Path | None = None,
    retries: int = 4,
    backoff: float = 2.0,
    timeout: float = 600.0,
) -> list[Source]:
    """COCO's image archives (train2014.zip, val2014.zip: paths or URLs), hash-checked like the
    caption inputs and unpacked as a whole under ``out`` (so ``out/train2014/COCO_...jpg``, the
    paths of the split lists); ``out/MANIFEST.sha256`` (last) lists the archives' hashes."""
    out = Path(out)
    expected = _expected_hashes(dict(sha256 or {}), list(archives))
    out.parent.mkdir(parents=True, exist_ok=True)
    tmp = temp_dir_beside(out)
    try:
        downloads = Path(download_dir) if download_dir else tmp / ".downloads"
        downloads.mkdir(parents=True, exist_ok=True)
        sources = []
        for archive in archives:
            source = _local("images", archive, expected[archive], downloads, retries, backoff,
                            timeout)  # fmt: skip
            if not zipfile.is_zipfile(source.path):
                raise InputError(archive, "a zip archive of COCO images", "another format")
            try:
                with zipfile.ZipFile(source.path) as handle:
                    handle.extractall(tmp)
            except (zipfile.BadZipFile, zlib.error, EOFError) as exc:
                expected = "a readable zip archive of COCO images"
                raise InputError(source.path, expected, f"a corrupt member ({exc})") from None
            sources.append(source)
        shutil.rmtree(tmp / ".downloads", ignore_errors=True)
        write_text(tmp / MARKER, manifest_text({_name(s.given): s.sha256 for s in sources}))
        replace_dir(tmp, out)
    finally:
        if tmp.exists():
            shutil.rmtree(tmp)
    return sources
