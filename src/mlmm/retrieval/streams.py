"""Training examples of a variant, encoded once into padded tensors, and the seeded streams
that batch them by index.

- ``switch`` (Kádár Fig. 2): one stream per language of (image, caption) pairs and one of c2c
  caption pairs; per step a c2c batch with probability ``c2c_probability``, else a c2i batch of
  a uniformly drawn language.
- ``joint`` (Calixto): images with one caption per language; one batch, one text per language.
- ``pooled`` (AME-CMR ``data.py``): every (image, caption) pair of every language in one
  shuffled stream; a batch mixes languages.

Token ids live on the training device as one padded (examples, longest) tensor per caption
column; a batch is gathered by index and cut to its longest caption, whose length comes from a
CPU copy, so batching needs no host-device synchronisation. Every stream is a ``Cycler`` with
its own seeded generator; ``state``/``load`` carry them (and the task draw) through checkpoints,
so a resumed run sees the batches an uninterrupted one sees.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import torch

from mlmm.errors import InputError
from mlmm.retrieval.data import Captions, Cycler, Vocabularies, c2c_pairs, c2i_pairs, joint_tuples


@dataclass
class Text:
    """Captions of a batch: each row's language and encoder, padded ids (on the device),
    lengths (CPU)."""

    languages: np.ndarray
    encoders: np.ndarray
    tokens: torch.Tensor
    lengths: torch.Tensor


class EncodedCaptions:
    """One caption column, padded once: ``take(index)`` gathers a batch."""

    def __init__(
        self, ids: list[list[int]], languages: list[str], vocabs: Vocabularies, device
    ) -> None:
        seqs = [s or [1] for s in ids]  # an empty caption becomes one <unk>
        self.lengths = torch.tensor([len(s) for s in seqs], dtype=torch.long)
        # int32 halves the memory of large c2c sets; a gathered batch becomes int64
        tokens = np.zeros((len(seqs), int(self.lengths.max())), dtype=np.int32)
        for row, s in enumerate(seqs):
            tokens[row, : len(s)] = s
        self.tokens = torch.from_numpy(tokens).to(device)
        self.languages = np.asarray(languages)
        self.encoders = np.asarray([vocabs.encoder_of[lang] for lang in languages])
        self.device = device

    def take(self, index: np.ndarray) -> Text:
        rows = torch.from_numpy(np.asarray(index, dtype=np.int64))
        lengths = self.lengths[rows]
        tokens = self.tokens[rows.to(self.device, non_blocking=True), : int(lengths.max())].long()
        return Text(self.languages[index], self.encoders[index], tokens, lengths)


@dataclass
class Batch:
    """``images`` (training image rows, on the device) or None for a c2c batch; ``texts`` one
    or more caption columns aligned with them (joint: one per language; c2c: two)."""

    images: torch.Tensor | None
    texts: list[Text]
    joint: bool = False

    def __len__(self) -> int:
        return len(self.texts[0].lengths)


class _Pairs:
    """(image, caption) examples: image rows on the device, one caption column."""

    def __init__(self, pairs, languages: list[str], vocabs: Vocabularies, device) -> None:
        self.images = torch.tensor([i for i, _ in pairs], dtype=torch.long, device=device)
        self.captions = EncodedCaptions([c for _, c in pairs], languages, vocabs, device)
        self.device = device

    def __len__(self) -> int:
        return len(self.images)

    def take(self, index: np.ndarray) -> Batch:
        rows = torch.from_numpy(np.asarray(index, dtype=np.int64)).to(self.device)
        return Batch(self.images[rows], [self.captions.take(index)])


class TrainingStreams:
    def __init__(
        self,
        captions: Captions,
        vocabs: Vocabularies,
        record: dict,
        seed: int,
        device: torch.device,
        where,
        c2c_captions: Captions | None = None,
    ) -> None:
        """``c2c_captions``: the captions the c2c pairs come from (default: ``captions``)."""
        self.record, self.device = record, device
        self.kind = record["batching"]
        if self.kind == "joint":
            langs = list(captions)
            tuples = joint_tuples(captions)
            self.images = torch.tensor([i for i, _ in tuples], dtype=torch.long, device=device)
            self.columns = [
                EncodedCaptions(
                    [vocabs.encode(lang, caps[k]) for _, caps in tuples],
                    [lang] * len(tuples),
                    vocabs,
                    device,
                )
                for k, lang in enumerate(langs)
            ]
            self.streams = {"joint": Cycler(len(tuples), np.random.default_rng([seed, 1]))}
            self.examples = len(tuples)
        elif self.kind == "pooled":
            tagged = [(lang, i, c) for lang, pairs in c2i_pairs(captions).items() for i, c in pairs]
            self.pooled = _Pairs(
                [(i, vocabs.encode(lang, c)) for lang, i, c in tagged],
                [lang for lang, _, _ in tagged],
                vocabs,
                device,
            )
            self.streams = {"pooled": Cycler(len(tagged), np.random.default_rng([seed, 1]))}
            self.examples = len(tagged)
        else:
            self.c2i = {
                lang: _Pairs(
                    [(i, vocabs.encode(lang, c)) for i, c in pairs],
                    [lang] * len(pairs),
                    vocabs,
                    device,
                )
                for lang, pairs in c2i_pairs(captions).items()
                if pairs
            }
            self.streams = {
                lang: Cycler(len(pairs), np.random.default_rng([seed, 1, k]))
                for k, (lang, pairs) in enumerate(self.c2i.items())
            }
            self.c2c: list[EncodedCaptions] = []
            if record["c2c"]:
                pairs = c2c_pairs(captions if c2c_captions is None else c2c_captions)
                if pairs:
                    self.c2c = [
                        EncodedCaptions(
                            [vocabs.encode(p[side], p[side + 1]) for p in pairs],
                            [p[side] for p in pairs],
                            vocabs,
                            device,
                        )
                        for side in (0, 2)
                    ]
                    self.streams["c2c"] = Cycler(len(pairs), np.random.default_rng([seed, 2]))
            self.examples = sum(len(p) for p in self.c2i.values())
        if self.examples < 2:
            raise InputError(where, "training captions for the variant", "none")
        self.tasks = np.random.default_rng([seed, 3])

    def next_batch(self, batch_size: int) -> Batch:
        if self.kind == "joint":
            index = self.streams["joint"].next(batch_size)
            rows = torch.from_numpy(np.asarray(index, dtype=np.int64)).to(self.device)
            texts = [column.take(index) for column in self.columns]
            return Batch(self.images[rows], texts, joint=True)
        if self.kind == "pooled":
            return self.pooled.take(self.streams["pooled"].next(batch_size))
        if self.c2c and self.tasks.random() < self.record["c2c_probability"]:
            index = self.streams["c2c"].next(batch_size)
            return Batch(None, [column.take(index) for column in self.c2c])
        langs = list(self.c2i)
        lang = langs[int(self.tasks.integers(len(langs)))]
        return self.c2i[lang].take(self.streams[lang].next(batch_size))

    def state(self) -> dict:
        return {
            "streams": {key: stream.state() for key, stream in self.streams.items()},
            "tasks": self.tasks.bit_generator.state,
        }

    def load(self, state: dict) -> None:
        for key, stream in self.streams.items():
            stream.load(state["streams"][key])
        self.tasks.bit_generator.state = state["tasks"]
