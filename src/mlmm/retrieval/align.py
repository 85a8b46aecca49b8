"""Cross-lingual word vectors for FME / AME: reading, the MUSE lexicon, Procrustes, RCSLS and
the alignment ratio (word-translation precision@1 on held-out MUSE pairs).

Real runs read fastText's pre-aligned vectors (``wiki.<lang>.align.vec``, text format: a
"count dim" header, then "word v1 .. vd" lines). The demo world has no such vectors, so
``demo_vectors`` derives them the way aligned vectors are made: each language's own vectors
(PPMI + SVD of sentence co-occurrence in its training captions), then the non-English ones
rotated onto English by Procrustes on the MUSE training pairs.
"""

from __future__ import annotations

import gzip
import itertools
import shutil
import tempfile
from collections import Counter
from pathlib import Path

import numpy as np
import torch

from mlmm.data.multi30k import TRANSLATION_LANGUAGES as TASK1_LANGUAGES
from mlmm.errors import InputError
from mlmm.io import atomic_path, read_lines

Lexicon = list[tuple[str, str]]


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


def split_lexicon(pairs: Lexicon, train_fraction: float, seed: int = 0) -> tuple[Lexicon, Lexicon]:
    """Train / held-out pairs, split by source word (all translations of a word stay together)."""
    sources = list(dict.fromkeys(s for s, _ in pairs))
    order = np.random.default_rng(seed).permutation(len(sources))
    train_words = {sources[i] for i in order[: int(round(train_fraction * len(sources)))]}
    train = [p for p in pairs if p[0] in train_words]
    return train, [p for p in pairs if p[0] not in train_words]


def procrustes(x: torch.Tensor, y: torch.Tensor) -> torch.Tensor:
    """Orthogonal W minimising ||x W^T - y||: rows of x map onto rows of y."""
    u, _, vt = torch.linalg.svd(y.t().double() @ x.double())
    return (u @ vt).to(x.dtype)


def _unit(x: torch.Tensor) -> torch.Tensor:
    return x / x.norm(dim=-1, keepdim=True).clamp_min(1e-12)


def precision_at_1(
    src: torch.Tensor,
    tgt: torch.Tensor,
    gold: dict[int, set[int]],
    mapping: torch.Tensor | None,
    known_src: set[int] | None = None,
    known_tgt: set[int] | None = None,
) -> float:
    """Percentage of held-out source words whose nearest target word (cosine) is a translation.

    ``gold`` maps a source row to its target rows (the pairs whose both words are in the
    vocabularies); ``mapping`` (W) maps source onto target. ``known_src`` / ``known_tgt``: the
    rows of words that have a pre-trained vector, as AME-CMR measures it (model.py at 2463a85,
    ``METRIC_SIMIL`` with ``load_lexicon`` and ``compute_nn_accuracy``): only pairs whose both
    words are known are asked, only known target words are searched, and the count of right
    answers is divided by every source word of ``gold`` (``load_lexicon``'s ``len(vocab)``, on
    the lexicon ``adjust_lexicons.py`` filtered to the data set's words), so a source word
    without a vector counts as a miss. Without them every row is asked and searched.
    """
    if not gold:
        return float("nan")
    searched = list(range(len(tgt))) if known_tgt is None else sorted(known_tgt)
    allowed = set(searched)
    asked = {
        r: targets & allowed
        for r, targets in gold.items()
        if known_src is None or r in known_src
    }
    rows = sorted(r for r, targets in asked.items() if targets)
    if not rows or not searched:
        return 0.0
    query = src[rows] if mapping is None else src[rows] @ mapping.t()
    best = (_unit(query) @ _unit(tgt[searched]).t()).argmax(dim=1).tolist()
    right = sum(searched[b] in asked[r] for r, b in zip(rows, best, strict=True))
    return 100.0 * right / len(gold)


def rcsls_loss(
    src: torch.Tensor,
    tgt: torch.Tensor,
    pairs: torch.Tensor,
    mapping: torch.Tensor,
    knn: int,
    normalise: bool = True,
) -> torch.Tensor:
    """Joulin et al. (2018) relaxed CSLS over training pairs (rows of ``pairs`` = src, tgt ids).

    -2 cos(Wx_i, y_i) + mean of cos to the k nearest targets of Wx_i + mean of cos of y_i to
    its k nearest mapped sources, averaged over the pairs. ``normalise`` False: dot products of
    the raw rows instead of cosines (AME-CMR ``ContrastiveLoss.rcsls`` on the fine-tuned table).
    """
    unit = _unit if normalise else (lambda x: x)
    mapped = unit(src @ mapping.t())
    targets = unit(tgt)
    wx, y = mapped[pairs[:, 0]], targets[pairs[:, 1]]
    k_t, k_s = min(knn, targets.shape[0]), min(knn, mapped.shape[0])
    near_t = (wx @ targets.t()).topk(k_t, dim=1).values.mean(1)
    near_s = (y @ mapped.t()).topk(k_s, dim=1).values.mean(1)
    return (-2.0 * (wx * y).sum(1) + near_t + near_s).mean()


def rcsls_objective(
    x: torch.Tensor,
    y: torch.Tensor,
    z_src: torch.Tensor,
    z_tgt: torch.Tensor,
    mapping: torch.Tensor,
    knn: int,
    chunk: int = 1024,
) -> tuple[float, torch.Tensor]:
    """fastText ``alignment/align.py`` ``rcsls``: the loss and its gradient df in R for the
    training pairs (rows of x, y) against the negatives z_src, z_tgt, k nearest neighbours
    taken in chunks of ``chunk`` pairs so that 200,000 negatives fit in memory."""
    n = x.shape[0]
    mapped = x @ mapping.t()
    f = 2.0 * float((mapped * y).sum())
    df = 2.0 * y.t() @ x
    for start in range(0, n, chunk):
        rows = slice(start, start + chunk)
        values, index = (mapped[rows] @ z_tgt.t()).topk(knn, dim=1)
        f -= float(values.sum()) / knn
        df -= z_tgt[index].sum(1).t() @ x[rows] / knn
    z_mapped = z_src @ mapping.t()
    for start in range(0, n, chunk):
        rows = slice(start, start + chunk)
        values, index = (y[rows] @ z_mapped.t()).topk(knn, dim=1)
        f -= float(values.sum()) / knn
        df -= y[rows].t() @ z_src[index].sum(1) / knn
    return -f / n, -df / n


def rcsls_align(
    x: torch.Tensor,
    y: torch.Tensor,
    z_src: torch.Tensor,
    z_tgt: torch.Tensor,
    knn: int,
    lr: float,
    iterations: int,
) -> tuple[torch.Tensor, list[dict]]:
    """RCSLS as fastText's ``alignment/align.py`` runs it (full batch, no constraint): W from
    Procrustes, then ``iterations + 1`` steps W -= lr df; a loss above the previous one halves
    lr (align.py's revert ``R = Rold`` names the array it has just updated in place, so the step
    stays); stop when lr < 1e-4. Rows are expected l2-normalised (align.py load_vectors)."""
    mapping = procrustes(x, y).to(x.dtype)
    previous, history = None, []
    for it in range(iterations + 1):
        if lr < 1e-4:
            break
        f, df = rcsls_objective(x, y, z_src, z_tgt, mapping, knn)
        history.append({"iteration": it, "loss": f, "lr": lr})
        mapping = mapping - lr * df
        if previous is not None and f > previous:
            lr /= 2
        else:
            previous = f
    return mapping, history


def lexicon_indices(
    pairs: Lexicon, src_index: dict[str, int], tgt_index: dict[str, int],
    where: str | Path | None = None,
):  # fmt: skip
    """(src row, tgt row) of the pairs whose both words are known, and the gold sets. With
    ``where`` (the lexicon's file), a lexicon that matches the vocabularies far better read
    the other way round (a de-en file under an en-de name) is refused, not trained on."""
    kept = [(src_index[s], tgt_index[t]) for s, t in pairs if s in src_index and t in tgt_index]
    if where is not None:
        swapped = sum(1 for s, t in pairs if t in src_index and s in tgt_index)
        if swapped > max(2 * len(kept), 10):
            raise InputError(
                where, "source-language words first, as its name says",
                f"{len(kept)} pair(s) known in that direction and {swapped} read the other way: "
                "a reversed lexicon",
            )  # fmt: skip
    gold: dict[int, set[int]] = {}
    for s, t in kept:
        gold.setdefault(s, set()).add(t)
    return kept, gold


def ppmi_svd(sentences: list[list[str]], dim: int) -> dict[str, np.ndarray]:
    """Word vectors from sentence-level co-occurrence: positive PMI, truncated SVD, U sqrt(S)."""
    counts = Counter(w for s in sentences for w in s)
    words = sorted(counts)
    if len(words) <= dim:
        raise InputError("training captions", f"more than {dim} word types", str(len(words)))
    index = {w: i for i, w in enumerate(words)}
    co = np.zeros((len(words), len(words)), dtype=np.float64)
    for s in sentences:
        ids = sorted({index[w] for w in s})
        for a, b in itertools.permutations(ids, 2):
            co[a, b] += 1.0
    total = co.sum()
    row, col = co.sum(1, keepdims=True), co.sum(0, keepdims=True)
    with np.errstate(divide="ignore", invalid="ignore"):
        pmi = np.log(co * total / (row * col))
    ppmi = np.where(np.isfinite(pmi) & (pmi > 0), pmi, 0.0)
    u, s, _ = np.linalg.svd(ppmi, full_matrices=False)
    vecs = (u[:, :dim] * np.sqrt(s[:dim])).astype(np.float32)
    signs = np.sign(vecs[np.abs(vecs).argmax(0), np.arange(dim)])  # deterministic sign per axis
    return {w: vecs[i] * signs for w, i in index.items()}


def rotate_onto_english(
    vectors: dict[str, np.ndarray],
    english: dict[str, np.ndarray],
    lexicon: Lexicon,
    train_fraction: float,
    where: str,
    rotation: dict | None = None,
) -> dict[str, np.ndarray]:
    """``vectors`` mapped onto ``english`` on the training en-<lang> pairs: Procrustes (the demo
    worlds' vectors; fastText made its published aligned vectors with RCSLS, its
    aligned-vectors page); or with ``rotation.method: rcsls`` fastText's RCSLS
    (``alignment/align.py``) on l2-normalised rows, every loaded word a negative, the mapped
    rows l2-normalised (AME Section 4.1: Japanese "aligned ... with the same hyper-parameters
    used for MS-COCO"). ``rotation.sections`` null: the pairs of ``train_fraction`` of the
    lexicon; otherwise ``lexicon`` already holds the training sections."""
    rotation = rotation or {"method": "procrustes", "sections": None}
    kept = training_rows(vectors, english, lexicon, train_fraction, where, rotation)
    en_words, tgt_words = list(english), list(vectors)
    if rotation["method"] == "procrustes":
        x = torch.from_numpy(np.stack([vectors[tgt_words[t]] for _, t in kept]))
        y = torch.from_numpy(np.stack([english[en_words[s]] for s, _ in kept]))
        w = procrustes(x, y).numpy()
        return {word: v @ w.T for word, v in vectors.items()}
    z_src = _unit(torch.from_numpy(np.stack(list(vectors.values()))).float())
    w = rcsls_matrix(z_src, english, kept, rotation)
    mapped = _unit(z_src @ w.t()).numpy()
    return {word: mapped[i] for i, word in enumerate(vectors)}


def training_rows(
    vectors: dict[str, np.ndarray],
    english: dict[str, np.ndarray],
    lexicon: Lexicon,
    train_fraction: float,
    where: str,
    rotation: dict,
) -> list[tuple[int, int]]:
    """(English row, source row) of the training pairs: the lexicon's training sections, or
    ``train_fraction`` of it; at least two with both words known."""
    train = lexicon if rotation.get("sections") else split_lexicon(lexicon, train_fraction)[0]
    kept, _ = lexicon_indices(
        train, {w: i for i, w in enumerate(english)}, {w: i for i, w in enumerate(vectors)}, where
    )
    if len(kept) < 2:
        raise InputError(where, "at least 2 training pairs with both words known", str(len(kept)))
    return kept


def rcsls_matrix(
    z_src: torch.Tensor, english: dict[str, np.ndarray], kept: list, rotation: dict
) -> torch.Tensor:
    """W of fastText align.py on the l2-normalised loaded rows and the training pairs ``kept``
    ((English row, source row) indices)."""
    z_tgt = _unit(torch.from_numpy(np.stack(list(english.values()))).float())
    src_rows = torch.tensor([t for _, t in kept])
    tgt_rows = torch.tensor([s for s, _ in kept])
    w, _ = rcsls_align(
        z_src[src_rows],
        z_tgt[tgt_rows],
        z_src,
        z_tgt,
        min(rotation["knn"], len(z_src), len(z_tgt)),
        rotation["lr"],
        rotation["iterations"],
    )
    return w


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
                mapped = _unit(torch.from_numpy(np.stack(rows)) @ w.t()).numpy()
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


def demo_vectors(
    sentences: dict[str, list[list[str]]],
    lexicons: dict[str, Lexicon],
    dim: int,
    train_fraction: float,
) -> dict[str, dict[str, np.ndarray]]:
    """English vectors as they are; every other language rotated onto English."""
    out = {lang: ppmi_svd(sents, dim) for lang, sents in sentences.items()}
    for lang in out:
        if lang != "en":
            out[lang] = rotate_onto_english(
                out[lang], out["en"], lexicons[lang], train_fraction, f"en-{lang} lexicon"
            )
    return out


def training_sentences(data_root: Path, lang: str) -> list[list[str]]:
    """Every training caption of a language (task1 + task2) under a Multi30K-style root."""
    from mlmm.retrieval.data import split_captions

    portions = ("translation", "comparable") if lang in TASK1_LANGUAGES else ("comparable",)
    return [
        c
        for portion in portions
        for caps in split_captions(data_root, "train", lang, portion)
        for c in caps
    ]


def derive_demo(
    data_root: Path, muse: Path | None, langs: list[str], dim: int, train_fraction: float, out: Path
) -> None:
    """Demo-world aligned vectors from all training captions (task1 + task2) of each language."""
    if "en" not in langs or muse is None:
        raise InputError(
            "retrieval-vectors", "English among --languages and --muse DIR", str(langs)
        )
    sentences = {lang: training_sentences(data_root, lang) for lang in langs}
    lexicons = {lang: read_lexicon(Path(muse) / f"en-{lang}.txt") for lang in langs if lang != "en"}
    for lang, vectors in demo_vectors(sentences, lexicons, dim, train_fraction).items():
        write_vec(Path(out) / f"wiki.{lang}.align.vec", vectors)


def derive_onto_english(
    lang: str,
    english_vec: Path,
    muse: Path,
    out: Path,
    train_fraction: float,
    data_root: Path | None = None,
    vec: Path | None = None,
    limit: int | None = None,
    rotation: dict | None = None,
) -> None:
    """``wiki.<lang>.align.vec`` for a language fastText has no aligned vectors of (Japanese):
    its own vectors (a fastText .vec such as cc.ja.300.vec.gz, or on the demo PPMI+SVD of the
    training captions under ``data_root``) mapped onto the given English aligned vectors
    (``rotate_onto_english``). RCSLS reads the first ``limit`` English lines too (align.py's
    ``--maxload`` for both languages); Procrustes needs only the pairs' English words."""
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
    elif data_root is not None:
        vectors = ppmi_svd(training_sentences(data_root, lang), dim)
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
        z_src = _unit(torch.from_numpy(np.stack(list(vectors.values()))).float())
        map_vec_file(vec, rcsls_matrix(z_src, english, kept, rotation), target)
        return
    rotated = rotate_onto_english(
        vectors, english, lexicon, train_fraction, f"en-{lang} lexicon", rotation
    )
    write_vec(target, rotated)


def _fetch(url: str, target: Path) -> Path:
    """Download ``url`` to ``target`` (mlmm.data.fetch.download: retries, resume, atomic)."""
    from mlmm.data.fetch import download

    return download(url, target)


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
