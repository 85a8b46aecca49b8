"""Training examples of a variant, encoded once, and the seeded streams that batch them.

- ``switch`` (Kádár Fig. 2): one stream per language of (image, caption) pairs and one of c2c
  caption pairs; per step a c2c batch with probability ``c2c_probability``, else a c2i batch of
  a uniformly drawn language.
- ``joint`` (Calixto): images with one caption per language; one batch, one text per language.
- ``pooled`` (AME-CMR ``data.py``): every (image, caption) pair of every language in one
  shuffled stream; a batch mixes languages.

Every stream is a ``Cycler`` with its own seeded generator; ``state``/``load`` carry them (and
the task draw) through checkpoints, so a resumed run sees the batches an uninterrupted one sees.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from mlmm.errors import InputError
from mlmm.retrieval.data import Captions, Cycler, Vocabularies, c2c_pairs, c2i_pairs, joint_tuples

Text = tuple[list[str], list[list[int]]]  # languages and token ids of a batch's captions


@dataclass
class Batch:
    """``images`` (training image rows) or None for a c2c batch; ``texts`` one or more caption
    columns aligned with the images (joint: one per language; c2c: two aligned columns)."""

    images: list[int] | None
    texts: list[Text]
    joint: bool = False

    def __len__(self) -> int:
        return len(self.texts[0][1])


class TrainingStreams:
    def __init__(
        self, captions: Captions, vocabs: Vocabularies, record: dict, seed: int, where
    ) -> None:
        self.record = record
        self.kind = record["batching"]
        langs = list(captions)
        if self.kind == "joint":
            self.tuples = [
                (i, [vocabs.encode(lang, c) for lang, c in zip(langs, caps, strict=True)])
                for i, caps in joint_tuples(captions)
            ]
            self.langs = langs
            self.streams = {"joint": Cycler(len(self.tuples), np.random.default_rng([seed, 1]))}
            self.examples = len(self.tuples)
        elif self.kind == "pooled":
            self.pooled = [
                (lang, i, vocabs.encode(lang, c))
                for lang, pairs in c2i_pairs(captions).items()
                for i, c in pairs
            ]
            self.streams = {"pooled": Cycler(len(self.pooled), np.random.default_rng([seed, 1]))}
            self.examples = len(self.pooled)
        else:
            self.c2i = {
                lang: [(i, vocabs.encode(lang, c)) for i, c in pairs]
                for lang, pairs in c2i_pairs(captions).items()
                if pairs
            }
            self.streams = {
                lang: Cycler(len(pairs), np.random.default_rng([seed, 1, k]))
                for k, (lang, pairs) in enumerate(self.c2i.items())
            }
            self.c2c = []
            if record["c2c"]:
                self.c2c = [
                    (la, vocabs.encode(la, a), lb, vocabs.encode(lb, b))
                    for la, a, lb, b in c2c_pairs(captions)
                ]
                if self.c2c:
                    self.streams["c2c"] = Cycler(len(self.c2c), np.random.default_rng([seed, 2]))
            self.examples = sum(len(p) for p in self.c2i.values())
        if self.examples < 2:
            raise InputError(where, "training captions for the variant", "none")
        self.tasks = np.random.default_rng([seed, 3])

    def next_batch(self, batch_size: int) -> Batch:
        if self.kind == "joint":
            batch = [self.tuples[i] for i in self.streams["joint"].next(batch_size)]
            texts = [
                ([lang] * len(batch), [caps[k] for _, caps in batch])
                for k, lang in enumerate(self.langs)
            ]
            return Batch([i for i, _ in batch], texts, joint=True)
        if self.kind == "pooled":
            batch = [self.pooled[i] for i in self.streams["pooled"].next(batch_size)]
            return Batch([i for _, i, _ in batch], [([p[0] for p in batch], [p[2] for p in batch])])
        if self.c2c and self.tasks.random() < self.record["c2c_probability"]:
            batch = [self.c2c[i] for i in self.streams["c2c"].next(batch_size)]
            a = ([p[0] for p in batch], [p[1] for p in batch])
            b = ([p[2] for p in batch], [p[3] for p in batch])
            return Batch(None, [a, b])
        langs = list(self.c2i)
        lang = langs[int(self.tasks.integers(len(langs)))]
        batch = [self.c2i[lang][i] for i in self.streams[lang].next(batch_size)]
        return Batch([i for i, _ in batch], [([lang] * len(batch), [c for _, c in batch])])

    def state(self) -> dict:
        return {
            "streams": {key: stream.state() for key, stream in self.streams.items()},
            "tasks": self.tasks.bit_generator.state,
        }

    def load(self, state: dict) -> None:
        for key, stream in self.streams.items():
            stream.load(state["streams"][key])
        self.tasks.bit_generator.state = state["tasks"]
