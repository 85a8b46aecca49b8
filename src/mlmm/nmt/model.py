"""Bidirectional GRU encoder, GRU decoder with additive (Bahdanau) attention.

As in Nematus (the implementation the paper used): the decoder's initial state is tanh of a
projection of the mean annotation, attention is computed from the previous decoder state, and a
deep output layer combines state, context and previous word embedding.
"""

from __future__ import annotations

import pickle
from collections.abc import Iterable
from dataclasses import asdict, dataclass
from pathlib import Path

import torch
from torch import nn
from torch.nn.utils.rnn import pack_padded_sequence, pad_packed_sequence

from mlmm.data.vocab import Vocabulary
from mlmm.errors import InputError
from mlmm.io import atomic_path

PAD, UNK, BOS, EOS = 0, 1, 2, 3
SPECIALS = ["<pad>", "<unk>", "<s>", "</s>"]


class Tokens:
    """Word <-> index map with <pad>, <unk>, <s>, </s> first, then words by frequency."""

    def __init__(self, words: list[str]) -> None:
        self.words = [str(w) for w in words]
        self.index = {w: i for i, w in enumerate(words)}

    @classmethod
    def build(cls, sentences: Iterable[list[str]], min_count: int) -> Tokens:
        vocab = Vocabulary.from_sentences(sentences, min_count)
        return cls(SPECIALS + [w for w in vocab.words[2:] if w not in SPECIALS])

    def __len__(self) -> int:
        return len(self.words)

    def encode(self, tokens: list[str]) -> list[int]:
        return [self.index.get(t, UNK) for t in tokens]

    def decode(self, ids: Iterable[int]) -> list[str]:
        return [self.words[i] for i in ids]


@dataclass
class Sizes:
    embedding: int = 64
    hidden: int = 128
    attention: int = 128
    dropout: float = 0.2


class Seq2Seq(nn.Module):
    def __init__(self, n_src: int, n_tgt: int, sizes: Sizes) -> None:
        super().__init__()
        e, h, a = sizes.embedding, sizes.hidden, sizes.attention
        self.sizes = sizes
        self.src_embedding = nn.Embedding(n_src, e, padding_idx=PAD)
        self.tgt_embedding = nn.Embedding(n_tgt, e, padding_idx=PAD)
        self.encoder = nn.GRU(e, h, batch_first=True, bidirectional=True)
        self.init_state = nn.Linear(2 * h, h)
        self.att_keys = nn.Linear(2 * h, a, bias=False)
        self.att_query = nn.Linear(h, a)
        self.att_score = nn.Linear(a, 1, bias=False)
        self.cell = nn.GRUCell(e + 2 * h, h)
        self.readout = nn.Linear(h + 2 * h + e, e)
        self.output = nn.Linear(e, n_tgt)
        self.dropout = nn.Dropout(sizes.dropout)

    def encode(self, src: torch.Tensor, lengths: torch.Tensor):
        """Annotations (B, S, 2H), attention keys (B, S, A), mask (B, S), initial state (B, H)."""
        packed = pack_padded_sequence(
            self.dropout(self.src_embedding(src)), lengths.cpu(), batch_first=True,
            enforce_sorted=False,
        )
        annotations, _ = pad_packed_sequence(
            self.encoder(packed)[0], batch_first=True, total_length=src.shape[1]
        )
        mask = src != PAD
        mean = (annotations * mask[..., None]).sum(1) / lengths[:, None].to(annotations.dtype)
        return annotations, self.att_keys(annotations), mask, torch.tanh(self.init_state(mean))

    def step(self, previous, state, annotations, keys, mask):
        """One decoder step: log-probabilities of the next word (B, V) and the new state."""
        embedded = self.dropout(self.tgt_embedding(previous))
        energy = self.att_score(torch.tanh(keys + self.att_query(state)[:, None])).squeeze(-1)
        alpha = torch.softmax(energy.masked_fill(~mask, float("-inf")), dim=-1)
        context = torch.bmm(alpha[:, None], annotations).squeeze(1)
        state = self.cell(torch.cat([embedded, context], dim=-1), state)
        hidden = torch.tanh(self.readout(torch.cat([state, context, embedded], dim=-1)))
        return torch.log_softmax(self.output(self.dropout(hidden)), dim=-1), state

    def forward(self, src, lengths, tgt_in):
        """Teacher-forced log-probabilities (B, T, V) of ``tgt_in`` shifted by one."""
        annotations, keys, mask, state = self.encode(src, lengths)
        out = []
        for t in range(tgt_in.shape[1]):
            logp, state = self.step(tgt_in[:, t], state, annotations, keys, mask)
            out.append(logp)
        return torch.stack(out, dim=1)


@dataclass
class Translator:
    """A trained model with its vocabularies and languages."""

    model: Seq2Seq
    src: Tokens
    tgt: Tokens
    src_lang: str
    tgt_lang: str

    def save(self, path: str | Path) -> None:
        blob = {
            "sizes": asdict(self.model.sizes),
            "state": self.model.state_dict(),
            "src_words": self.src.words,
            "tgt_words": self.tgt.words,
            "languages": [self.src_lang, self.tgt_lang],
        }
        with atomic_path(path) as tmp:
            torch.save(blob, tmp)


def load_translator(path: str | Path) -> Translator:
    try:
        blob = torch.load(path, map_location="cpu", weights_only=True)
        src, tgt = Tokens(blob["src_words"]), Tokens(blob["tgt_words"])
        model = Seq2Seq(len(src), len(tgt), Sizes(**blob["sizes"]))
        model.load_state_dict(blob["state"])
    except (OSError, RuntimeError, KeyError, TypeError, pickle.UnpicklingError) as exc:
        raise InputError(path, "an NMT checkpoint written by `mlmm train-nmt`", str(exc)) from None
    model.eval()
    return Translator(model, src, tgt, *blob["languages"])
