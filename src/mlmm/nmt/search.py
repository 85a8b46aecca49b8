"""Greedy decoding (for validation) and beam search producing n-best lists with NMT features."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import torch

from mlmm.logs import progress as progress_bar
from mlmm.nbest import NBestList
from mlmm.nmt.model import BOS, EOS, PAD, Seq2Seq, Translator


def pad_batch(sequences: Sequence[list[int]]) -> tuple[torch.Tensor, torch.Tensor]:
    """Right-padded (B, L) tensor and lengths; an empty sequence becomes a single EOS."""
    sequences = [s or [EOS] for s in sequences]
    lengths = torch.tensor([len(s) for s in sequences])
    out = torch.full((len(sequences), int(lengths.max())), PAD, dtype=torch.long)
    for i, s in enumerate(sequences):
        out[i, : len(s)] = torch.tensor(s)
    return out, lengths


# Decoding stops at 2 * source length + 10 target tokens (greedy and beam search alike).
# Nematus translate.py stops at maxlen=200 whatever the source; on Multi30K (captions of at most
# ~40 tokens) neither limit is reached by a finished hypothesis of a trained model.
LENGTH_LIMIT = {"times_source": 2, "plus": 10}


def max_length(source_length: int) -> int:
    return LENGTH_LIMIT["times_source"] * source_length + LENGTH_LIMIT["plus"]


def best_translation(
    hypotheses: Sequence[tuple[list[int], float]], normalise: bool
) -> tuple[list[int], float]:
    """The 1-best of ``beam_search``'s hypotheses: the highest log p(Y|X), or with ``normalise``
    the highest log p(Y|X) / (tokens + 1), as Nematus translate.py -n (its samples end in EOS,
    which ``len(s)`` counts; on ties the first, as numpy.argmin)."""
    if not hypotheses:
        raise ValueError("no hypothesis to choose from")
    if not normalise:
        return hypotheses[0]
    return max(hypotheses, key=lambda h: h[1] / (len(h[0]) + 1))


def _forbid(logp: torch.Tensor) -> torch.Tensor:
    logp[:, PAD] = float("-inf")
    logp[:, BOS] = float("-inf")
    return logp


@torch.no_grad()
def greedy(model: Seq2Seq, sources: Sequence[list[int]], batch_size: int = 128) -> list[list[int]]:
    """Greedy translations (token ids without EOS), batched."""
    model.eval()
    out: list[list[int]] = []
    device = next(model.parameters()).device
    for start in range(0, len(sources), batch_size):
        src, lengths = pad_batch(sources[start: start + batch_size])
        annotations, keys, mask, state = model.encode(src.to(device), lengths.to(device))
        previous = torch.full((len(src),), BOS, dtype=torch.long, device=device)
        words = []
        done = torch.zeros(len(src), dtype=torch.bool, device=device)
        for _ in range(max_length(int(lengths.max()))):
            logp, state = model.step(previous, state, annotations, keys, mask)
            previous = _forbid(logp).argmax(-1)
            words.append(previous)
            done |= previous == EOS
            if done.all():
                break
        table = torch.stack(words, 1).tolist()
        for row in table:
            out.append(row[: row.index(EOS)] if EOS in row else row)
    return out


@torch.no_grad()
def beam_search(model: Seq2Seq, source: list[int], beam: int) -> list[tuple[list[int], float]]:
    """The ``beam`` best (token ids, log p(Y|X)) of one source sentence, best first.

    Nematus's ``gen_sample`` bookkeeping: each step keeps the best ``beam - finished``
    extensions of all live hypotheses; those ending in EOS are finished (EOS's log-probability
    included) and the beam shrinks by one for each. Search ends when ``beam`` hypotheses are
    finished or at the length limit, where the live ones are returned as they are, so exactly
    ``beam`` come back (fewer only if the vocabulary cannot fill the beam).
    """
    model.eval()
    device = next(model.parameters()).device
    src, lengths = pad_batch([source])
    annotations, keys, mask, state = model.encode(src.to(device), lengths.to(device))
    live: list[list[int]] = [[]]
    scores = torch.zeros(1, device=device)
    finished: list[tuple[list[int], float]] = []
    for _ in range(max_length(len(source))):
        n = len(live)
        previous = torch.tensor([h[-1] if h else BOS for h in live], device=device)
        logp, state = model.step(
            previous, state, annotations.expand(n, -1, -1), keys.expand(n, -1, -1),
            mask.expand(n, -1),
        )
        candidates = (scores[:, None] + _forbid(logp)).view(-1)
        top = candidates.topk(min(beam - len(finished), candidates.numel()))
        vocab = logp.shape[1]
        keep, new_scores = [], []
        for value, index in zip(top.values.tolist(), top.indices.tolist(), strict=True):
            origin, word = divmod(index, vocab)
            if value == float("-inf"):
                continue
            if word == EOS:
                finished.append((live[origin], value))
            else:
                keep.append((origin, word))
                new_scores.append(value)
        live = [live[o] + [w] for o, w in keep]
        if not keep or len(finished) >= beam:
            break
        scores = torch.tensor(new_scores, device=device)
        state = state[torch.tensor([o for o, _ in keep], device=device)]
    else:
        finished += list(zip(live, new_scores, strict=True))
    finished.sort(key=lambda item: -item[1])
    return finished


def nbest_lists(
    translator: Translator, sources: Sequence[list[str]], beam: int, progress: bool = True
) -> NBestList:
    """n-best lists with features NMT = log p(Y|X) and WordPenalty = -|Y|; score = log p."""
    ids, texts, features, scores = [], [], [], []
    for i, tokens in enumerate(progress_bar(sources, desc="beam search", disable=not progress)):
        hyps = beam_search(translator.model, translator.src.encode(tokens), beam)
        ids.append(i)
        texts.append([" ".join(translator.tgt.decode(h)) for h, _ in hyps])
        features.append(np.array([[s, -len(h)] for h, s in hyps], dtype=np.float64))
        scores.append(np.array([s for _, s in hyps], dtype=np.float64))
    return NBestList([("NMT", 1), ("WordPenalty", 1)], ids, texts, features, scores)
