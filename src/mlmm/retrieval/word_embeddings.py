"""Pre-trained word vectors in the shared encoder and AME's alignment of them (RCSLS).

``word_embeddings``: fme loads fastText's aligned vectors and freezes them; pretrained loads them
and fine-tunes (AME's Mono); ame loads and fine-tunes them and learns a mapping W of the English
rows onto the other language: W starts from Procrustes on the MUSE training pairs, moves only by
the RCSLS loss every ``alignment.every`` steps, and enters the forward pass as a constant
(AME-CMR's "translators"). The alignment ratio is word-translation precision@1 on the held-out
MUSE pairs, both restricted to the training words.
"""

from __future__ import annotations

from pathlib import Path

import torch

from mlmm.errors import InputError
from mlmm.retrieval import align
from mlmm.retrieval.data import Vocabularies
from mlmm.retrieval.model import JointEmbedding

EMBED_KEY = "text.shared.embed.weight"


def load_vectors(
    model: JointEmbedding, vocabs: Vocabularies, langs: list[str], record: dict, vectors: Path
) -> None:
    """Copy ``wiki.<lang>.align.vec`` rows into the shared embedding (frozen for fme)."""
    if vectors is None:
        raise InputError("train-retrieval", "--vectors DIR for pre-trained word embeddings", "none")
    vocab = vocabs.vocabs["shared"]
    weight = model.text["shared"].embed.weight
    for lang in langs:
        path = Path(vectors) / f"wiki.{lang}.align.vec"
        words = {w.split(":", 1)[1] for w in vocab.words if w.startswith(f"{lang}:")}
        for word, vec in align.read_vec(path, words).items():
            if vec.shape[0] != record["embed_dim"]:
                raise InputError(
                    path, f"{record['embed_dim']}-d vectors (embed_dim)", f"{vec.shape[0]}-d"
                )
            with torch.no_grad():
                weight[vocab.index[f"{lang}:{word}"]] = torch.from_numpy(vec)
    if record["word_embeddings"] == "fme":
        weight.requires_grad_(False)


class Alignment:
    """English rows against one other language: the ratio, and for AME the mapping W."""

    def __init__(
        self,
        model: JointEmbedding,
        pair: str,
        src: torch.Tensor,
        tgt: torch.Tensor,
        train: torch.Tensor,
        gold: dict[int, set[int]],
        record: dict,
        device: torch.device,
    ) -> None:
        self.model, self.pair, self.gold, self.record = model, pair, gold, record
        self.src, self.tgt, self.train = src.to(device), tgt.to(device), train.to(device)
        self.mapping: torch.Tensor | None = None
        self.optimizer: torch.optim.Optimizer | None = None
        if record["word_embeddings"] == "ame" and len(train) >= 2:
            weight = self.weight()
            x, y = weight[self.src[self.train[:, 0]]], weight[self.tgt[self.train[:, 1]]]
            self.mapping = align.procrustes(x, y).to(device).requires_grad_(True)
            self.optimizer = torch.optim.SGD([self.mapping], lr=record["alignment"]["lr"])
            rows = torch.zeros(weight.shape[0], dtype=torch.bool, device=device)
            rows[self.src] = True
            model.text["shared"].translator = (rows, self.mapping)

    @classmethod
    def build(
        cls,
        model: JointEmbedding,
        vocabs: Vocabularies,
        langs: list[str],
        record: dict,
        muse: Path | None,
        device: torch.device,
    ) -> Alignment | None:
        """None unless the variant has English and another language, FME/AME and MUSE."""
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
        train, held_out = align.alignment_lexicons(muse, target, record["alignment"])
        src_pos = {w: k for k, w in enumerate(rows["en"])}
        tgt_pos = {w: k for k, w in enumerate(rows[target])}
        train_pairs, _ = align.lexicon_indices(train, src_pos, tgt_pos)
        _, gold = align.lexicon_indices(held_out, src_pos, tgt_pos)
        return cls(
            model,
            f"en-{target}",
            torch.tensor(list(rows["en"].values())),
            torch.tensor(list(rows[target].values())),
            torch.tensor(train_pairs[: record["alignment"]["max_pairs"]]).view(-1, 2),
            gold,
            record,
            device,
        )

    def weight(self) -> torch.Tensor:
        """The embedding table, detached: RCSLS moves W only (AME-CMR's ``train_emb``)."""
        return self.model.text["shared"].embed.weight.detach().float()

    def ratio(self) -> float:
        weight = self.weight()
        return align.precision_at_1(
            weight[self.src],
            weight[self.tgt],
            self.gold,
            None if self.mapping is None else self.mapping.detach(),
        )

    def loss(self) -> torch.Tensor | None:
        if self.mapping is None or len(self.train) == 0:
            return None
        weight = self.weight()
        return align.rcsls_loss(
            weight[self.src],
            weight[self.tgt],
            self.train,
            self.mapping,
            self.record["alignment"]["knn"],
        )

    def zero_grad(self) -> None:
        self.optimizer.zero_grad(set_to_none=True)

    def step(self) -> None:
        """SGD step on W, then W back to the nearest orthogonal matrix (Joulin et al. 2018)."""
        self.optimizer.step()
        with torch.no_grad():
            u, _, vt = torch.linalg.svd(self.mapping.double())
            self.mapping.copy_((u @ vt).float())

    # ---------------------------------------------------------------- the selected point
    def snapshot(self) -> torch.Tensor | None:
        return None if self.mapping is None else self.mapping.detach().clone()

    def restore(self, snapshot: torch.Tensor | None) -> None:
        if snapshot is not None:
            with torch.no_grad():
                self.mapping.copy_(snapshot)

    def baked(self, state: dict, snapshot: torch.Tensor | None) -> dict:
        """A model state with W multiplied into the English rows, so the saved model needs no
        translator (as AME-CMR's ``load_state_dict`` does)."""
        if snapshot is None:
            return state
        state = {**state, EMBED_KEY: state[EMBED_KEY].clone()}
        table = state[EMBED_KEY]
        src = self.src.to(table.device)
        table[src] = table[src] @ snapshot.to(table.device).t()
        return state

    def state(self) -> dict | None:
        if self.mapping is None:
            return None
        return {"mapping": self.mapping.detach().clone(), "optimizer": self.optimizer.state_dict()}

    def load(self, state: dict | None) -> None:
        if state is not None:
            self.restore(state["mapping"])
            self.optimizer.load_state_dict(state["optimizer"])
