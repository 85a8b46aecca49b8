"""Training with teacher forcing, Adam or Adadelta and gradient clipping; early stopping on
validation BLEU."""

from __future__ import annotations

import copy
import logging
import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
import sacrebleu
import torch

from mlmm.degenerate import not_empty, parallel_text, same_count
from mlmm.errors import InputError
from mlmm.logs import progress as progress_bar
from mlmm.nmt.model import BOS, EOS, PAD, Seq2Seq, Sizes, Tokens, Translator
from mlmm.nmt.search import greedy, pad_batch

log = logging.getLogger(__name__)


@dataclass
class TrainConfig:
    sizes: Sizes = field(default_factory=Sizes)
    min_count: int = 1
    batch_size: int = 32
    learning_rate: float = 3e-3  # Adam's; Adadelta takes no rate (Nematus ignores lrate)
    clip: float = 1.0
    max_epochs: int = 20
    patience: int = 3
    seed: int = 1
    device: str = "cpu"  # auto | cpu | cuda (cuda without a visible GPU is an error)
    # adam | adadelta (Nematus optimizers.adadelta: rho 0.95, eps 1e-6, no learning rate)
    optimizer: str = "adam"
    # training pairs with a side of max_length tokens or more are left out (Nematus
    # prepare_data keeps l_x < maxlen and l_y < maxlen); None keeps every pair
    max_length: int | None = None


# Nematus optimizers.adadelta: running averages 0.95, eps 1e-6, no learning rate (torch's at 1).
ADADELTA = {"lr": 1.0, "rho": 0.95, "eps": 1e-6}


def make_optimiser(params, config: TrainConfig) -> torch.optim.Optimizer:
    """Adam at ``learning_rate``, or Nematus's Adadelta (its update is -sqrt(ru2 + 1e-6) /
    sqrt(rg2 + 1e-6) * g with 0.95 running averages: torch's Adadelta at lr 1)."""
    if config.optimizer == "adam":
        return torch.optim.Adam(params, lr=config.learning_rate)
    if config.optimizer == "adadelta":
        return torch.optim.Adadelta(params, **ADADELTA)
    raise ValueError(f"unknown optimizer {config.optimizer!r}")


def within_length(
    src: Sequence[list[str]], tgt: Sequence[list[str]], max_length: int | None
) -> list[tuple[list[str], list[str]]]:
    """The training pairs both of whose sides are shorter than ``max_length`` tokens."""
    pairs = list(zip(src, tgt, strict=True))
    if max_length is None:
        return pairs
    return [(s, t) for s, t in pairs if len(s) < max_length and len(t) < max_length]


def bleu(
    hypotheses: Sequence[str], references: Sequence[str],
    where: tuple[str | Path, str | Path] = ("hypotheses", "references"),
) -> float:  # fmt: skip
    """Corpus BLEU as everywhere in this stage: sacrebleu on tokenised text, no smoothing
    (degenerate input refused by ``mlmm.degenerate.parallel_text``)."""
    from mlmm.nmt.metrics import BLEU_SETTINGS

    hyps, refs = parallel_text(hypotheses, references, *where)
    return sacrebleu.corpus_bleu(hyps, [refs], **BLEU_SETTINGS).score


def _batches(pairs, batch_size: int, rng: np.random.Generator):
    """Batches of similar source length (sorted within shuffled pools of 20 batches)."""
    order = rng.permutation(len(pairs))
    pool = 20 * batch_size
    for start in range(0, len(order), pool):
        chunk = sorted(order[start: start + pool], key=lambda i: len(pairs[i][0]))
        batches = [chunk[b: b + batch_size] for b in range(0, len(chunk), batch_size)]
        for b in rng.permutation(len(batches)):
            yield [pairs[i] for i in batches[b]]


def train(
    train_src: Sequence[list[str]],
    train_tgt: Sequence[list[str]],
    val_src: Sequence[list[str]],
    val_tgt: Sequence[list[str]],
    config: TrainConfig,
    languages: tuple[str, str] = ("en", "de"),
    progress: bool = True,
    files: Sequence[str | Path] = ("train source", "train target", "val source", "val target"),
) -> tuple[Translator, list[dict]]:
    """Train; after every epoch translate the validation set greedily and keep the model with
    the best validation BLEU; stop after ``patience`` epochs without improvement. ``files``
    name the four texts in the refusal of degenerate input: sides of different lengths, no
    training pair left within ``max_length``."""
    from mlmm.features.extraction import resolve_device

    same_count(train_src, train_tgt, files[0], files[1])
    same_count(val_src, val_tgt, files[2], files[3])
    not_empty(val_tgt, files[3], "validation sentence")
    device = resolve_device(config.device)
    torch.manual_seed(config.seed)
    rng = np.random.default_rng(config.seed)
    src_tokens = Tokens.build(train_src, config.min_count)
    tgt_tokens = Tokens.build(train_tgt, config.min_count)
    model = Seq2Seq(len(src_tokens), len(tgt_tokens), config.sizes).to(device)
    optimiser = make_optimiser(model.parameters(), config)
    pairs = [
        (src_tokens.encode(s), tgt_tokens.encode(t))
        for s, t in within_length(train_src, train_tgt, config.max_length)
    ]
    if not pairs:
        cut = config.max_length
        within = f" shorter than train.max_length ({cut})" if cut else ""
        raise InputError(
            files[0], f"at least one training pair{within} on both sides",
            f"none of {len(train_src)}",
        )  # fmt: skip
    val_ids = [src_tokens.encode(s) for s in val_src]
    val_refs = [" ".join(t) for t in val_tgt]
    best_bleu, best_state, stale, history = -1.0, None, 0, []
    for epoch in range(1, config.max_epochs + 1):
        model.train()
        start, tokens, total = time.perf_counter(), 0, 0.0
        bar = progress_bar(list(_batches(pairs, config.batch_size, rng)), desc=f"epoch {epoch}",
                           disable=not progress)
        for batch in bar:
            src, lengths = pad_batch([s for s, _ in batch])
            tgt, _ = pad_batch([[BOS, *t, EOS] for _, t in batch])
            src, lengths, tgt = src.to(device), lengths.to(device), tgt.to(device)
            logp = model(src, lengths, tgt[:, :-1])
            gold = tgt[:, 1:]
            loss = torch.nn.functional.nll_loss(
                logp.reshape(-1, logp.shape[-1]), gold.reshape(-1), ignore_index=PAD,
                reduction="sum",
            )
            n = int((gold != PAD).sum())
            optimiser.zero_grad()
            (loss / n).backward()
            torch.nn.utils.clip_grad_norm_(model.parameters(), config.clip)
            optimiser.step()
            tokens += n
            total += loss.item()
        seconds = time.perf_counter() - start
        hyps = [" ".join(tgt_tokens.decode(h)) for h in greedy(model, val_ids)]
        score = bleu(hyps, val_refs)
        history.append({
            "epoch": epoch, "train_nll": total / max(tokens, 1), "val_bleu": score,
            "seconds": seconds, "tokens_per_second": tokens / seconds,
        })
        log.info("epoch %d: nll %.3f, val BLEU %.2f, %.0f s, %.0f tokens/s", epoch,
                 total / max(tokens, 1), score, seconds, tokens / seconds)
        if score > best_bleu:
            best_bleu, best_state, stale = score, copy.deepcopy(model.state_dict()), 0
        else:
            stale += 1
            if stale >= config.patience:
                break
    model.load_state_dict(best_state)
    model.eval()
    return Translator(model, src_tokens, tgt_tokens, *languages), history
