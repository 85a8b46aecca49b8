"""Training and evaluation data of a variant, built from the Multi30K readers and feature arrays.

Captions are kept per image: ``captions[lang][i]`` is the list of token lists that image ``i``
contributes for ``lang`` in this variant (empty when the image is not used for that language).
From that one structure come the three kinds of training examples: c2i pairs per language,
c2c pairs (Cartesian products of one image's captions across every pair of languages, Kádár
Section 4) and joint tuples (image with one caption per language, Calixto / AME).
"""

from __future__ import annotations

import functools
import itertools
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import torch

from mlmm.arrays import check_feature_record, check_feature_rows, check_row_names
from mlmm.data import multi30k
from mlmm.data.vocab import Vocabulary
from mlmm.errors import InputError
from mlmm.fingerprint import value_digest
from mlmm.io import read_json, read_npy
from mlmm.retrieval.config import languages

Captions = dict[str, list[list[list[str]]]]


def features_path(features_root: str | Path, backbone: str, split: str) -> Path:
    return Path(features_root) / backbone / f"{split}.npy"


def published_features(features_root: str | Path, backbone: str, split: str) -> bool:
    """Whether the split's feature array is a release's published array (its sidecar names
    the published file, ``mlmm.features.published``) rather than one extracted here."""
    sidecar = features_path(features_root, backbone, split).with_suffix(".json")
    if not sidecar.is_file():
        return False
    record = read_json(sidecar, "the sidecar of an image feature array")
    return isinstance(record, dict) and bool(record.get("published_file"))


def load_features(
    features_root: str | Path, backbone: str, split: str, names: Sequence[str]
) -> np.ndarray:
    """The split's feature array as float32, row i = image ``names[i]``: the list copy written
    beside it must match ``names`` (swapped or reordered arrays are refused), the sidecar
    beside it must carry the array's record (its bytes, made from ``names``) and every row
    must be finite with a usable norm (``mlmm.arrays``)."""
    path = features_path(features_root, backbone, split)
    feats = read_npy(path, "an image feature array (rule extract_features)", mmap_mode="r")
    if feats.ndim != 2 or feats.shape[0] != len(names):
        raise InputError(path, f"{len(names)} rows (one per image of {split})", f"{feats.shape}")
    check_row_names(path, names, split)
    check_feature_record(path, {"image list": value_digest(list(names))})
    return check_feature_rows(np.asarray(feats), path)


def split_captions(
    root: str | Path, split: str, language: str, portion: str
) -> list[list[list[str]]]:
    """Per image, its captions of one portion; fr/cs have no comparable portion: translation."""
    if portion == "comparable" and language not in multi30k.TRANSLATION_ONLY:
        return multi30k.comparable_captions(root, split, language)
    return [[c] for c in multi30k.translation_captions(root, split, language)]


def image_subsets(n_images: int, langs: list[str], subset: dict, rng: np.random.Generator):
    """Which images each language trains on (Kádár Table 5: half, overlap or disjoint).

    ``draw`` shared: one permutation, cut once (overlap: every language the same part;
    disjoint: consecutive parts), as the paper describes. per-language: each language cuts its
    own permutation, as mulisera master's loaders do (``np.random.shuffle`` per language), so
    overlap and disjoint both give independent random parts.
    """
    fraction, assignment = subset["fraction"], subset["assignment"]
    if fraction >= 1.0:
        return {lang: np.arange(n_images) for lang in langs}
    size = int(round(fraction * n_images))
    if assignment == "disjoint" and size * len(langs) > n_images:
        raise InputError("image_subset", f"fraction <= 1/{len(langs)} for disjoint", str(fraction))
    shared = rng.permutation(n_images) if subset["draw"] == "shared" else None
    out = {}
    for k, lang in enumerate(langs):
        order = shared if shared is not None else rng.permutation(n_images)
        first = 0 if assignment == "overlap" else k * size
        out[lang] = np.sort(order[first : first + size])
    return out


Draw = list[tuple[str, list[list[list[str]]]]]


def caption_draw(root: str | Path, record: dict, rng: np.random.Generator) -> Draw:
    """Per training source and language, every training image's captions, ``captions_per_image``
    of them sampled (one draw for every image, whatever subset later uses it)."""
    out = []
    for source in record["train_data"]:
        keep = source.get("captions_per_image")
        for lang in source["languages"]:
            per_image = split_captions(root, "train", lang, source["portion"])
            if keep is not None:
                per_image = [
                    [caps[j] for j in sorted(rng.choice(len(caps), keep, replace=False))]
                    if keep < len(caps)
                    else caps
                    for caps in per_image
                ]
            out.append((lang, per_image))
    return out


def gather(draw: Draw, subsets: dict[str, np.ndarray], n_images: int) -> Captions:
    """Captions per language and image, of the images in each language's subset."""
    out: Captions = {lang: [[] for _ in range(n_images)] for lang in subsets}
    for lang, per_image in draw:
        for i in subsets[lang]:
            out[lang][i].extend(per_image[i])
    return out


def training_captions(root: str | Path, record: dict, rng: np.random.Generator) -> Captions:
    """The variant's c2i training captions per language and image (sources, subsets, sampling)."""
    langs = languages(record)
    n_images = len(multi30k.image_list(root, "train"))
    subsets = image_subsets(n_images, langs, record["image_subset"], rng)
    return gather(caption_draw(root, record, rng), subsets, n_images)


@dataclass
class TrainingSets:
    """The captions of the c2i streams, of the c2c pairs and of the vocabulary."""

    c2i: Captions
    c2c: Captions
    vocabulary: Captions


def training_sets(root: str | Path, record: dict, seed: int) -> TrainingSets:
    """c2i, c2c and vocabulary captions of one seed.

    The paper's reading (defaults): one image subset and one caption sample feed all three.
    mulisera master (data.py) instead gives its sentence-pair set every training image
    (``image_subset.c2c: all``: M30KSentencePairDataset has no ``half``) and draws the one
    caption per image anew in each data set (``c2c_captions: redrawn``: ``random.choice`` in
    every loader), so a c2c pair mostly holds captions the c2i task never sees.
    """
    langs = languages(record)
    n_images = len(multi30k.image_list(root, "train"))
    rng = np.random.default_rng([seed, 0])
    subsets = image_subsets(n_images, langs, record["image_subset"], rng)
    draw = caption_draw(root, record, rng)
    c2i = gather(draw, subsets, n_images)
    c2c_subsets = subsets
    if record["image_subset"]["c2c"] == "all":
        c2c_subsets = {lang: np.arange(n_images) for lang in langs}
    if record["c2c_captions"] == "redrawn":
        c2c_draw = caption_draw(root, record, np.random.default_rng([seed, 4]))
        vocab_draw = caption_draw(root, record, np.random.default_rng([seed, 5]))
        return TrainingSets(
            c2i, gather(c2c_draw, c2c_subsets, n_images), gather(vocab_draw, subsets, n_images)
        )
    return TrainingSets(c2i, gather(draw, c2c_subsets, n_images), c2i)


def vocabulary_captions(root: str | Path, record: dict, training: Captions) -> Captions:
    """The captions the vocabularies count: the training ones, plus with ``vocabulary:
    train+val`` every validation caption of the variant's sources (Calixto's
    train_multilingual.py builds its dictionaries over train + dev, and over test too with
    ``--load-test``, which run_f30kC.sh passes: our test images are the second half of val)."""
    if record["vocabulary"] == "train":
        return training
    out = {lang: list(per_image) for lang, per_image in training.items()}
    for source in record["train_data"]:
        for lang in source["languages"]:
            out[lang] += split_captions(root, "val", lang, source["portion"])
    return out


def c2i_pairs(captions: Captions) -> dict[str, list[tuple[int, list[str]]]]:
    return {
        lang: [(i, c) for i, caps in enumerate(per_image) for c in caps]
        for lang, per_image in captions.items()
    }


def c2c_pairs(captions: Captions) -> list[tuple[str, list[str], str, list[str]]]:
    """(lang_a, caption_a, lang_b, caption_b) for every language pair and every image."""
    out = []
    for la, lb in itertools.combinations(list(captions), 2):
        for caps_a, caps_b in zip(captions[la], captions[lb], strict=True):
            out += [(la, a, lb, b) for a, b in itertools.product(caps_a, caps_b)]
    return out


def joint_tuples(captions: Captions) -> list[tuple[int, list[list[str]]]]:
    """(image, [caption in each language]) pairing the k-th captions of an image."""
    langs = list(captions)
    out = []
    for i in range(len(captions[langs[0]])):
        n = min(len(captions[lang][i]) for lang in langs)
        out += [(i, [captions[lang][i][k] for lang in langs]) for k in range(n)]
    return out


START, END = "<start>", "<end>"


@functools.cache
def nltk_words(line: str) -> tuple[str, ...]:
    """mulisera master data.py: ``nltk.tokenize.word_tokenize(caption.lower())`` of a line of
    the Multi30K tok files. ``preserve_line``: no Punkt sentence split first (its model is a
    download; a caption is one sentence, so only a full stop inside a line can differ)."""
    from nltk.tokenize import word_tokenize

    return tuple(word_tokenize(line.lower(), preserve_line=True))


def caption_words(tokens: list[str], tokenise: str, boundary: bool) -> list[str]:
    """A caption's words as a vocabulary counts and encodes them (``tokens``, ``boundary_tokens``
    of the record)."""
    out = list(nltk_words(" ".join(tokens))) if tokenise == "nltk" else list(tokens)
    return [START, *out, END] if boundary else out


class Vocabularies:
    """Token ids per language: one union vocabulary (shared encoder), or one per language.

    With pre-aligned word vectors (FME/AME) each language keeps its own rows even for words
    spelled alike, so the shared vocabulary keys words as ``lang:word``. ``tokens: nltk``
    re-tokenises each caption as mulisera master does; ``boundary_tokens`` wraps it in
    <start> ... <end> (mulisera, VSE++, AME-CMR); ``count_words: joint`` applies min_count to
    the counts of every language together (mulisera master ``build_vocabulary``).
    """

    def __init__(
        self,
        vocabs: dict[str, Vocabulary],
        encoder_of: dict[str, str],
        tagged: bool,
        tokens: str = "whitespace",
        boundary: bool = False,
    ):
        self.vocabs, self.encoder_of, self.tagged = vocabs, encoder_of, tagged
        self.tokens, self.boundary = tokens, boundary

    @classmethod
    def build(cls, captions: Captions, record: dict) -> Vocabularies:
        min_count, tokens, boundary = (
            record["min_count"], record["tokens"], record["boundary_tokens"]
        )  # fmt: skip
        counts = {
            lang: Counter(
                w for caps in per_image for c in caps for w in caption_words(c, tokens, boundary)
            )
            for lang, per_image in captions.items()
        }
        if record["encoder"] == "per-language":
            vocabs = {lang: Vocabulary(c, min_count) for lang, c in counts.items()}
            return cls(vocabs, {lang: lang for lang in captions}, False, tokens, boundary)
        tagged = record["word_embeddings"] != "random"
        keyed = {lang: Counter({cls.key(lang, w, tagged): n for w, n in c.items()})
                 for lang, c in counts.items()}  # fmt: skip
        if record["count_words"] == "joint":
            union = sum(keyed.values(), Counter())
            union = Counter({w: n for w, n in union.items() if n >= min_count})
        else:
            union = Counter()
            for c in keyed.values():
                union.update({w: n for w, n in c.items() if n >= min_count})
        shared = Vocabulary(union, 1)
        return cls(
            {"shared": shared}, {lang: "shared" for lang in captions}, tagged, tokens, boundary
        )

    @staticmethod
    def key(lang: str, word: str, tagged: bool) -> str:
        return f"{lang}:{word}" if tagged else word

    def encode(self, lang: str, tokens: list[str]) -> list[int]:
        vocab = self.vocabs[self.encoder_of[lang]]
        return vocab.encode(
            [
                self.key(lang, w, self.tagged)
                for w in caption_words(tokens, self.tokens, self.boundary)
            ]
        )

    def state(self) -> dict:
        return {
            "words": {name: v.words for name, v in self.vocabs.items()},
            "counts": {name: v.counts for name, v in self.vocabs.items()},
            "encoder_of": self.encoder_of,
            "tagged": self.tagged,
            "tokens": self.tokens,
            "boundary": self.boundary,
        }

    @classmethod
    def from_state(cls, state: dict) -> Vocabularies:
        vocabs = {name: Vocabulary(Counter(c), 1) for name, c in state["counts"].items()}
        for name, vocab in vocabs.items():
            if vocab.words != state["words"][name]:
                raise InputError("model.pt", "a vocabulary that rebuilds in the saved order", name)
        return cls(
            vocabs,
            state["encoder_of"],
            state["tagged"],
            state.get("tokens", "whitespace"),  # models saved before these keys
            state.get("boundary", False),
        )


def pad(sequences: list[list[int]]) -> tuple[torch.Tensor, torch.Tensor]:
    """Padded (batch, max_len) ids and lengths; an empty caption becomes one <unk>."""
    sequences = [s or [1] for s in sequences]
    lengths = torch.tensor([len(s) for s in sequences], dtype=torch.long)
    out = torch.zeros(len(sequences), int(lengths.max()), dtype=torch.long)
    for row, s in enumerate(sequences):
        out[row, : len(s)] = torch.tensor(s, dtype=torch.long)
    return out, lengths


@dataclass
class EvalSet:
    """Images of one split (a range of them) with k captions per image in each language."""

    features: np.ndarray
    captions: dict[str, list[list[str]]]  # flat, rows k*i .. k*i+k-1 belong to image i
    per_image: dict[str, int]


def eval_set(
    root, features_root, backbone: str, spec: dict, langs: list[str], seed: int = 0
) -> EvalSet:
    """``spec``: split, images, portion and (validation) captions_per_image: n captions drawn
    per image and language with ``seed`` (mulisera master's undersampled validation)."""
    split = spec["split"]
    names = multi30k.image_list(root, split)
    start, stop = spec["images"]
    if len(range(len(names))[start:stop]) < 2:
        raise InputError(
            f"{split} image list ({len(names)} images)",
            "at least 2 images in the evaluation range",
            f"images: [{start}, {stop}]",
            key="images",
        )
    feats = load_features(features_root, backbone, split, names)[start:stop]
    captions, per_image = {}, {}
    for lang in langs:
        per = split_captions(root, split, lang, spec["portion"])[start:stop]
        drawn = spec.get("captions_per_image")
        if drawn and any(len(c) > drawn for c in per):
            rng = np.random.default_rng([seed, sorted(langs).index(lang)])
            per = [[caps[j] for j in sorted(rng.choice(len(caps), drawn, replace=False))]
                   for caps in per]  # fmt: skip
        k = min(len(c) for c in per)
        captions[lang] = [c for caps in per for c in caps[:k]]
        per_image[lang] = k
    return EvalSet(feats, captions, per_image)


class Cycler:
    """Batches of indices: shuffle everything, walk through, reshuffle when exhausted.

    Its state (generator + position) goes into checkpoints so a resumed run sees the same batches.
    """

    def __init__(self, n: int, rng: np.random.Generator) -> None:
        if n < 2:
            raise InputError("training data", "at least 2 examples", str(n))
        self.n, self.rng = n, rng
        self.order = rng.permutation(n)
        self.pos = 0

    def next(self, batch_size: int) -> np.ndarray:
        if self.n - self.pos < 2:  # a lone example would have no negatives
            self.order, self.pos = self.rng.permutation(self.n), 0
        batch = self.order[self.pos : self.pos + batch_size]
        self.pos += len(batch)
        return batch

    def state(self) -> dict:
        return {"rng": self.rng.bit_generator.state, "order": self.order, "pos": self.pos}

    def load(self, state: dict) -> None:
        self.rng.bit_generator.state = state["rng"]
        self.order, self.pos = np.asarray(state["order"]), int(state["pos"])
