"""Pre-trained word vectors in the shared encoder and AME's alignment of them (RCSLS).

``word_embeddings``: fme loads fastText's aligned vectors and freezes them; pretrained loads them
and fine-tunes (AME's Mono); ame loads and fine-tunes them and learns a mapping W of the English
rows onto the other language (and with ``alignment.mappings: two`` one of the other language's
rows onto English): W starts from Procrustes on the MUSE training pairs, moves only by the RCSLS
loss every ``alignment.every`` steps, and enters the forward pass as a constant (AME-CMR's
"translators"). The alignment ratio is word-translation precision@1 on the held-out
MUSE pairs, both restricted to the training words.
"""

from __future__ import annotations

from pathlib import Path

import torch

from mlmm.errors import InputError
from mlmm.retrieval import rcsls, word_vector_files
from mlmm.retrieval.data import Vocabularies
from mlmm.retrieval.model import JointEmbedding

EMBED_KEY = "text.shared.embed.weight"
# The least share of a language's training vocabulary its vector file must cover: fastText's
# aligned wiki vectors cover most of Multi30K's and COCO's words; a file of another language
# (or of another tokenisation) covers few, and FME would train on random rows as if aligned.
MIN_VECTOR_COVERAGE = 0.5


def load_vectors(
    model: JointEmbedding, vocabs: Vocabularies, langs: list[str], record: dict, vectors: Path
) -> dict[str, set[str]]:
    """Copy ``wiki.<lang>.align.vec`` rows into the shared embedding (frozen for fme). The rows
    of words without a vector keep the model's uniform(-0.1, 0.1), or with ``unknown_word_init:
    normal`` are drawn from N(0, 0.05) as AME-CMR vocab.py (8263f53) ``add_word`` does.
    Returns the words of each language that have a vector (the alignment ratio asks those)."""
    if vectors is None:
        raise InputError("train-retrieval", "--vectors DIR for pre-trained word embeddings", "none")
    vocab = vocabs.vocabs["shared"]
    weight = model.text["shared"].embed.weight
    known: dict[str, set[str]] = {}
    if record["unknown_word_init"] == "normal":  # AME-CMR vocab.py: words without a vector
        with torch.no_grad():
            weight.normal_(0.0, 0.05)
    for lang in langs:
        path = Path(vectors) / f"wiki.{lang}.align.vec"
        words = {w.split(":", 1)[1] for w in vocab.words if w.startswith(f"{lang}:")}
        found = word_vector_files.read_vec(path, words)
        if len(found) < MIN_VECTOR_COVERAGE * len(words):
            raise InputError(
                path, f"vectors for at least {MIN_VECTOR_COVERAGE:.0%} of the {len(words)} "
                f"{lang} training words", f"{len(found)} ({len(found) / len(words):.0%})",
            )  # fmt: skip
        known[lang] = set(found)
        for word, vec in found.items():
            if vec.shape[0] != record["embed_dim"]:
                raise InputError(
                    path, f"{record['embed_dim']}-d vectors (embed_dim)", f"{vec.shape[0]}-d"
                )
            with torch.no_grad():
                weight[vocab.index[f"{lang}:{word}"]] = torch.from_numpy(vec)
    if record["word_embeddings"] == "fme":
        weight.requires_grad_(False)
    return known


class Direction:
    """One mapping W of the ``src`` rows onto the ``tgt`` rows (a MUSE dictionary's direction)."""

    def __init__(
        self,
        pair: str,
        src: torch.Tensor,
        tgt: torch.Tensor,
        train: torch.Tensor,
        gold: dict[int, set[int]],
        device: torch.device,
        known_src: set[int] | None = None,
        known_tgt: set[int] | None = None,
    ) -> None:
        self.pair, self.gold = pair, gold
        # the src / tgt positions of words with a pre-trained vector (None: every word)
        self.known_src, self.known_tgt = known_src, known_tgt
        self.src, self.tgt, self.train = src.to(device), tgt.to(device), train.to(device)
        self.mapping: torch.Tensor | None = None
        self.previous: float | None = None  # RCSLS loss of the last update that did not rise


class Alignment:
    """English rows against one other language: the ratio, and for AME the mapping(s).

    ``alignment.mappings`` one: W maps the English rows onto the other language; two: a second
    W' maps the other language's rows onto English (AME-CMR's ``R_ende`` and ``R_deen``, both in
    the forward pass). Each W starts from Procrustes on its training pairs and moves by SGD on
    its RCSLS loss; ``lr_schedule: halve_on_rise`` halves the one rate of both whenever a loss
    is above the last one that did not rise (AME-CMR ``VSE.train_emb``)."""

    def __init__(
        self, model: JointEmbedding, directions: list[Direction], record: dict, device: torch.device
    ) -> None:
        self.model, self.record = model, record
        self.settings = record["alignment"]
        self.directions = directions  # the ratio is the first's; updates run last to first
        self.pair, self.gold = directions[0].pair, directions[0].gold
        # AME-CMR's --lr_translator is argparse type=int: an int rate under Python 2.7
        integer = self.settings["lr_halving"] == "integer"
        self.lr = float(int(self.settings["lr"]) if integer else self.settings["lr"])
        self._losses: list[torch.Tensor] = []
        self.translators: list[tuple[torch.Tensor, torch.Tensor]] = []
        if record["word_embeddings"] == "ame" and all(len(d.train) >= 2 for d in directions):
            weight = self.weight()
            for d in directions:
                x, y = weight[d.src[d.train[:, 0]]], weight[d.tgt[d.train[:, 1]]]
                d.mapping = rcsls.procrustes(x, y).to(device).requires_grad_(True)
                rows = torch.zeros(weight.shape[0], dtype=torch.bool, device=device)
                rows[d.src] = True
                self.translators.append((rows, d.mapping))
            model.text["shared"].translators = self.translators

    @property
    def mapping(self) -> torch.Tensor | None:
        """W of the English rows (the first direction)."""
        return self.directions[0].mapping

    @classmethod
    def build(
        cls,
        model: JointEmbedding,
        vocabs: Vocabularies,
        langs: list[str],
        record: dict,
        muse: Path | None,
        device: torch.device,
        known: dict[str, set[str]] | None = None,
    ) -> Alignment | None:
        """None unless the variant has English and another language, FME/AME and MUSE.
        ``known``: per language the words with a pre-trained vector (``load_vectors``), which
        the ratio asks and searches as AME-CMR does; None asks and searches every word."""
        others = [lang for lang in langs if lang != "en"]
        if record["word_embeddings"] not in ("fme", "ame") or "en" not in langs or not others:
            return None
        if muse is None:
            return None
        target = others[0]
        words = vocabs.vocabs["shared"].words
        rows = {
            lang: {w.split(":", 1)[1]: i for i, w in enumerate(words) if w.startswith(f"{lang}:")}
            for lang in ("en", target)
        }
        two = record["word_embeddings"] == "ame" and record["alignment"]["mappings"] == "two"
        directions = [cls._direction(rows, "en", target, muse, record, device, False, known)]
        if two:
            directions.append(cls._direction(rows, target, "en", muse, record, device, True, known))
        return cls(model, directions, record, device)

    @staticmethod
    def _direction(rows, source, target, muse, record, device, reverse, known) -> Direction:
        other = target if source == "en" else source
        train, held_out = word_vector_files.alignment_lexicons(
            muse, other, record["alignment"], reverse
        )
        src_pos = {w: k for k, w in enumerate(rows[source])}
        tgt_pos = {w: k for k, w in enumerate(rows[target])}
        sections = record["alignment"]["sections"]
        name = sections["train"][0] if sections else "full"
        lexicon = word_vector_files.lexicon_file(muse, other, name, reverse)
        train_pairs, _ = rcsls.lexicon_indices(train, src_pos, tgt_pos, lexicon)
        _, gold = rcsls.lexicon_indices(held_out, src_pos, tgt_pos)
        return Direction(
            f"{source}-{target}",
            torch.tensor(list(rows[source].values())),
            torch.tensor(list(rows[target].values())),
            torch.tensor(train_pairs[: record["alignment"]["max_pairs"]]).view(-1, 2),
            gold,
            device,
            None if known is None else {src_pos[w] for w in known[source] if w in src_pos},
            None if known is None else {tgt_pos[w] for w in known[target] if w in tgt_pos},
        )

    def weight(self) -> torch.Tensor:
        """The embedding table, detached: RCSLS moves W only (AME-CMR's ``train_emb``)."""
        return self.model.text["shared"].embed.weight.detach().float()

    def ratio(self) -> float:
        """Precision@1 of the held-out en-X pairs, English rows through W; with two mappings the
        other language's rows through W' too, as both enter the GRU (AME-CMR ``METRIC_SIMIL``
        kind 1: ``X_en R_ende^T`` against ``X_de R_deen^T`` on the en-de test pairs)."""
        first = self.directions[0]
        weight = self.weight()
        targets = weight[first.tgt]
        if len(self.directions) > 1 and self.directions[1].mapping is not None:
            targets = targets @ self.directions[1].mapping.detach().t()
        return rcsls.precision_at_1(
            weight[first.src],
            targets,
            first.gold,
            None if first.mapping is None else first.mapping.detach(),
            first.known_src,
            first.known_tgt,
        )

    def loss(self) -> torch.Tensor | None:
        """The sum of every direction's RCSLS loss (each moves only its own W)."""
        if self.mapping is None:
            return None
        weight = self.weight()
        self._losses = [
            rcsls.rcsls_loss(
                weight[d.src],
                weight[d.tgt],
                d.train,
                d.mapping,
                self.settings["knn"],
                self.settings["normalise"],
            )
            for d in self.directions
        ]
        return torch.stack(self._losses).sum()

    def zero_grad(self) -> None:
        for d in self.directions:
            d.mapping.grad = None

    def step(self) -> None:
        """SGD on each W, last direction first as AME-CMR (R_deen, then R_ende), each with the
        rate as it stands (a rise halves it for the next); then optionally W back to the nearest
        orthogonal matrix (the paper, Section 3.2: W orthogonal)."""
        values = [float(v) for v in torch.stack(self._losses).detach().tolist()]
        for d, value in reversed(list(zip(self.directions, values, strict=True))):
            with torch.no_grad():
                d.mapping -= self.lr * d.mapping.grad
                if self.settings["orthogonalise"]:
                    u, _, vt = torch.linalg.svd(d.mapping.double())
                    d.mapping.copy_((u @ vt).float())
            if self.settings["lr_schedule"] == "halve_on_rise":
                # AME-CMR restores R_old after a rise, but R_old is the tensor it has just
                # updated in place (R -= lr * df), so the update stays; only the rate halves
                if d.previous is not None and value > d.previous:
                    self.lr = self.halved(self.lr)
                else:
                    d.previous = value

    def halved(self, lr: float) -> float:
        """``lr /= 2``: float, or Python 2.7's floor division of AME-CMR's int rate (2 -> 1 -> 0,
        5 -> 2 -> 1 -> 0), after which the mapping no longer moves (``lr_halving: integer``)."""
        return lr // 2 if self.settings["lr_halving"] == "integer" else lr / 2

    # ---------------------------------------------------------------- the selected point
    def snapshot(self) -> list[torch.Tensor] | None:
        if self.mapping is None:
            return None
        return [d.mapping.detach().clone() for d in self.directions]

    def restore(self, snapshot: list[torch.Tensor] | torch.Tensor | None) -> None:
        if snapshot is None:
            return
        if isinstance(snapshot, torch.Tensor):  # checkpoints written with one mapping
            snapshot = [snapshot]
        with torch.no_grad():
            for d, mapping in zip(self.directions, snapshot, strict=True):
                d.mapping.copy_(mapping)

    def baked(self, state: dict, snapshot: list[torch.Tensor] | None) -> dict:
        """A model state with each W multiplied into its rows, so the saved model needs no
        translator (as AME-CMR's ``load_state_dict`` does)."""
        if snapshot is None:
            return state
        if isinstance(snapshot, torch.Tensor):
            snapshot = [snapshot]
        state = {**state, EMBED_KEY: state[EMBED_KEY].clone()}
        table = state[EMBED_KEY]
        original = table.clone()
        for d, mapping in zip(self.directions, snapshot, strict=True):
            src = d.src.to(table.device)
            table[src] = original[src] @ mapping.to(table.device).t()
        return state

    def state(self) -> dict | None:
        if self.mapping is None:
            return None
        return {
            "mappings": self.snapshot(),
            "lr": self.lr,
            "previous": [d.previous for d in self.directions],
        }

    def load(self, state: dict | None) -> None:
        if state is None:
            return
        if "mapping" in state:  # checkpoints written with one mapping and a plain SGD
            self.restore(state["mapping"])
            return
        self.restore(state["mappings"])
        self.lr = state["lr"]
        for d, previous in zip(self.directions, state["previous"], strict=True):
            d.previous = previous
