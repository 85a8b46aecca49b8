"""Bidirectional GRU encoder, GRU decoder with additive (Bahdanau) attention.

Two decoders (``Sizes.decoder``), both with Nematus's initial state (tanh of a projection of
the mean annotation) and deep output (state, context and previous word embedding):

- ``bahdanau``: one GRU fed with [previous word, context], attention from the previous state
  (Bahdanau et al. 2015);
- ``cgru``: Nematus's conditional GRU (``gru_cond_layer`` in nematus/nmt.py, Sennrich et al.
  2017 Section 2): a first GRU reads the previous word, attention is computed from that
  intermediate state, a second GRU reads the context. Nematus's attention layer has size
  2 x hidden (the annotation size), which the paper configuration states in ``attention``.
"""

from __future__ import annotations

import pickle
from collections.abc import Iterable
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

import torch
from torch import nn
from torch.nn.utils.rnn import pack_padded_sequence, pad_packed_sequence

from mlmm.data.vocab import Vocabulary
from mlmm.errors import InputError
from mlmm.io import atomic_path, read_torch

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
    decoder: str = "bahdanau"  # or "cgru" (see the module docstring)


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
        if sizes.decoder == "cgru":
            self.cell = nn.GRUCell(e, h)
            self.cell2 = nn.GRUCell(2 * h, h)
        elif sizes.decoder == "bahdanau":
            self.cell = nn.GRUCell(e + 2 * h, h)
        else:
            raise ValueError(f"decoder must be bahdanau or cgru, not {sizes.decoder!r}")
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

    def attend(self, query, annotations, keys, mask):
        """Context vector (B, 2H): annotations weighted by softmax(v . tanh(K + W q))."""
        energy = self.att_score(torch.tanh(keys + self.att_query(query)[:, None])).squeeze(-1)
        alpha = torch.softmax(energy.masked_fill(~mask, float("-inf")), dim=-1)
        return torch.bmm(alpha[:, None], annotations).squeeze(1)

    def step(self, previous, state, annotations, keys, mask):
        """One decoder step: log-probabilities of the next word (B, V) and the new state."""
        embedded = self.dropout(self.tgt_embedding(previous))
        cgru = self.sizes.decoder == "cgru"
        query = self.cell(embedded, state) if cgru else state
        context = self.attend(query, annotations, keys, mask)
        if cgru:
            state = self.cell2(context, query)
        else:
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

    def save(
        self, path: str | Path, made_from: dict[str, str] | None = None,
        run: dict[str, Any] | None = None,
    ) -> None:  # fmt: skip
        """The checkpoint, with its record inside it (key ``made_from``, written in the same
        write): its languages and ``run`` (seed, config digest), the digests of what it was
        made from (``made_from``: its training data); checked by ``load_translator``."""
        from mlmm.fingerprint import RECORD_KEY, inside_record

        blob = {
            "sizes": asdict(self.model.sizes),
            "state": self.model.state_dict(),
            "src_words": self.src.words,
            "tgt_words": self.tgt.words,
            "languages": [self.src_lang, self.tgt_lang],
        }
        run = {"languages": [self.src_lang, self.tgt_lang], **(run or {})}
        blob[RECORD_KEY] = inside_record(blob, run, made_from or {})
        with atomic_path(path) as tmp:
            torch.save(blob, tmp)


def run_of_metrics(metrics: str | Path) -> dict[str, Any]:
    """The run a ``train-nmt`` metrics JSON describes, as a model's record names it: its seed
    and the digest of its training record."""
    from mlmm.fingerprint import value_digest
    from mlmm.io import read_json_object
    from mlmm.nmt import TRAIN_RECORD_KEYS

    provenance = read_json_object(metrics, ("provenance",), "a metrics.json of train-nmt")[
        "provenance"
    ]
    config = provenance.get("config") if isinstance(provenance, dict) else None
    if not isinstance(config, dict) or not all(key in config for key in TRAIN_RECORD_KEYS):
        raise InputError(
            metrics, f"the training record ({', '.join(TRAIN_RECORD_KEYS)})", "none",
            key="provenance.config",
        )  # fmt: skip
    record = {key: config[key] for key in TRAIN_RECORD_KEYS}
    return {"seed": provenance.get("seed"), "config": value_digest(record)}


def load_translator(
    path: str | Path, run: dict[str, Any] | None = None, asked: str = "asked for"
) -> Translator:
    """A checkpoint of ``save``, refused unless the record inside it names the run asked
    for (``run``, e.g. its languages) and, when a ``metrics.json`` of ``train-nmt`` is beside
    it, that run (another run's model copied over it is refused), and unless it is as written
    (``mlmm.fingerprint.check_inside_record``)."""
    from mlmm.fingerprint import RECORD_KEY, check_inside_record

    path = Path(path)
    blob = read_torch(path, "a translator of mlmm train-nmt", map_location="cpu", weights_only=True)
    beside = path.parent / "metrics.json"
    if isinstance(blob, dict):
        if beside.is_file():
            run = {**run_of_metrics(beside), **(run or {})}
            asked = f"{asked}, the run of metrics.json beside it"
        check_inside_record(
            path, blob.get(RECORD_KEY), lambda: {k: v for k, v in blob.items() if k != RECORD_KEY},
            maker="train-nmt", run=run, asked=asked,
        )  # fmt: skip
    try:
        src, tgt = Tokens(blob["src_words"]), Tokens(blob["tgt_words"])
        model = Seq2Seq(len(src), len(tgt), Sizes(**blob["sizes"]))
        model.load_state_dict(blob["state"])
    except (OSError, RuntimeError, KeyError, TypeError, pickle.UnpicklingError) as exc:
        raise InputError(path, "an NMT checkpoint written by `mlmm train-nmt`", str(exc)) from None
    model.eval()
    return Translator(model, src, tgt, *blob["languages"])
