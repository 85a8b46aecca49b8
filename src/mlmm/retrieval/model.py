"""Joint image-sentence embedding: GRU sentence encoders, a linear image projection, L2 norm.

Cosine similarity is the symmetric score; the order-embedding score of Vendrov et al. (2015) is
the asymmetric one, as VSE++ and AME-CMR compute it (``order_sim``: S(a, b) = -||max(0, b - a)||,
the norm, not its square; a the image or more specific item); with ``use_abs`` (VSE++'s
``--use_abs``) the order variant takes absolute values of the normalised embeddings, without it
(AME-CMR: ``--use_abs`` off) they stay signed. The margin (AME: 0.05) is in norm units.
"""

from __future__ import annotations

import torch
from torch import nn
from torch.nn.utils.rnn import pack_padded_sequence

SIMILARITIES = ("cosine", "order")


def l2norm(x: torch.Tensor) -> torch.Tensor:
    return x / x.norm(dim=-1, keepdim=True).clamp_min(1e-12)


def score_matrix(a: torch.Tensor, b: torch.Tensor, similarity: str) -> torch.Tensor:
    """scores[i, j] = s(a_i, b_j); for ``order`` a holds the more specific items (images)."""
    if similarity == "cosine":
        return a @ b.t()
    if similarity == "order":
        # vector_norm's gradient at a zero vector is 0 (not NaN as sqrt(sum(x^2)) would give)
        return -torch.linalg.vector_norm((b.unsqueeze(0) - a.unsqueeze(1)).clamp_min(0), dim=-1)
    raise ValueError(f"unknown similarity {similarity!r}")


def rowwise_score(a: torch.Tensor, b: torch.Tensor, similarity: str) -> torch.Tensor:
    """scores[i] = s(a_i, b_i)."""
    if similarity == "cosine":
        return (a * b).sum(-1)
    if similarity == "order":
        return -torch.linalg.vector_norm((b - a).clamp_min(0), dim=-1)
    raise ValueError(f"unknown similarity {similarity!r}")


def projection(hidden: int, joint: int) -> nn.Module:
    """GRU state -> joint space (the identity when the sizes agree, as in VSE++)."""
    return nn.Linear(hidden, joint) if joint != hidden else nn.Identity()


class TextEncoder(nn.Module):
    """Word embeddings -> GRU (packed) -> last hidden state -> projection to the joint space.

    ``proj`` may be a module shared with other encoders (Calixto's one ``ff_sentence_mm``).
    ``translators`` are AME's learned mappings in the forward pass: pairs of (a boolean mask of
    the vocabulary rows it applies to, W); those rows enter the GRU as W x (AME-CMR's
    ``EncoderText`` multiplies the English rows by ``R_ende``, the German ones by ``R_deen``).
    They are not parameters: the ranking loss does not train W, RCSLS does.
    """

    def __init__(
        self, vocab_size: int, embed_dim: int, hidden: int, proj: nn.Module, dropout: float
    ) -> None:
        super().__init__()
        self.embed = nn.Embedding(vocab_size, embed_dim, padding_idx=0)
        self.gru = nn.GRU(embed_dim, hidden, batch_first=True)
        self.dropout = nn.Dropout(dropout)
        self.proj = proj
        self.translators: list[tuple[torch.Tensor, torch.Tensor]] = []
        nn.init.uniform_(self.embed.weight, -0.1, 0.1)

    def forward(self, tokens: torch.Tensor, lengths: torch.Tensor) -> torch.Tensor:
        emb = self.embed(tokens)
        raw = emb
        for rows, mapping in self.translators:
            emb = torch.where(rows[tokens].unsqueeze(-1), raw @ mapping.detach().t(), emb)
        emb = self.dropout(emb)
        packed = pack_padded_sequence(emb, lengths.cpu(), batch_first=True, enforce_sorted=False)
        _, last = self.gru(packed)
        return self.proj(self.dropout(last[-1]))


class JointEmbedding(nn.Module):
    """Image projection plus one text encoder per ``vocab_sizes`` key ("shared" or a language)."""

    def __init__(
        self,
        feature_dim: int,
        vocab_sizes: dict[str, int],
        embed_dim: int,
        hidden: int,
        joint: int,
        dropout: float,
        similarity: str,
        shared_projection: bool = False,
        dropout_after_image_projection: bool = False,
        use_abs: bool = True,
    ) -> None:
        super().__init__()
        if similarity not in SIMILARITIES:
            raise ValueError(f"unknown similarity {similarity!r}")
        self.similarity = similarity
        self.use_abs = use_abs and similarity == "order"
        self.image = nn.Linear(feature_dim, joint)
        self.image_dropout = nn.Dropout(dropout)
        self.dropout_after_projection = dropout_after_image_projection
        shared = projection(hidden, joint) if shared_projection else None
        self.text = nn.ModuleDict(
            {
                name: TextEncoder(
                    n, embed_dim, hidden, shared or projection(hidden, joint), dropout
                )
                for name, n in vocab_sizes.items()
            }
        )
        # Xavier init of the image layer as in VSE++.
        r = (6.0 / (feature_dim + joint)) ** 0.5
        nn.init.uniform_(self.image.weight, -r, r)
        nn.init.zeros_(self.image.bias)

    def _finish(self, x: torch.Tensor) -> torch.Tensor:
        x = l2norm(x.float())
        return x.abs() if self.use_abs else x

    def embed_images(self, features: torch.Tensor) -> torch.Tensor:
        if self.dropout_after_projection:
            return self._finish(self.image_dropout(self.image(features)))
        return self._finish(self.image(self.image_dropout(features)))

    def embed_text(self, encoder: str, tokens: torch.Tensor, lengths: torch.Tensor) -> torch.Tensor:
        return self._finish(self.text[encoder](tokens, lengths))

    def scores(self, a: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
        return score_matrix(a, b, self.similarity)
