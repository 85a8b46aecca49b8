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
INITS = ("vsepp", "calixto_paper", "calixto_code")
DROPOUT_POSITIONS = ("before_norm", "after_norm")
EMBEDDING_DROPOUTS = ("elementwise", "variational")


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


def kept_mask(shape: tuple[int, ...], p: float, like: torch.Tensor) -> torch.Tensor:
    """A 0/1 mask keeping each entry with probability 1 - p, without the 1/(1 - p) rescaling:
    Calixto's ``layers.shared_dropout_layer`` (``trng.binomial(shape, p=retain)``)."""
    return torch.bernoulli(torch.full(shape, 1.0 - p, device=like.device, dtype=like.dtype))


def word_dropout(emb: torch.Tensor, p: float) -> torch.Tensor:
    """Drop whole tokens: one draw per (sentence, position), shared by every embedding
    dimension (Calixto's ``source_dropout``, shape (steps, samples, 1) tiled over dim_word);
    inverted scaling, which for the GRU's linear input is a reparametrisation of its weights."""
    keep = kept_mask((*emb.shape[:2], 1), p, emb) / (1.0 - p)
    return emb * keep


def variational_dropout(emb: torch.Tensor, p: float) -> torch.Tensor:
    """One mask per sentence over the embedding dimensions, the same at every time step
    (Calixto's ``emb_dropout``, shape (samples, dim_word) reused by the GRU's scan)."""
    keep = kept_mask((emb.shape[0], 1, emb.shape[2]), p, emb) / (1.0 - p)
    return emb * keep


def gru_last_state(
    gru: nn.GRU,
    emb: torch.Tensor,
    lengths: torch.Tensor,
    masks: tuple[torch.Tensor, torch.Tensor],
) -> torch.Tensor:
    """The GRU's state after each sentence's last token, step by step, with Calixto's recurrent
    dropout (``layers.gru_layer``: ``h_ * rec_dropout[0]`` into the gates' ``U``,
    ``h_ * rec_dropout[1]`` into the candidate's ``Ux``, one (samples, dim) mask each for every
    step). PyTorch's gate order is (r, z, n); h = (1 - z) * n + z * h_prev as Theano's
    u * h_ + (1 - u) * h with u = z. Padding steps keep the state (the code's ``m_`` mask)."""
    hidden = gru.hidden_size
    w_hh, b_hh = gru.weight_hh_l0, gru.bias_hh_l0
    inputs = emb @ gru.weight_ih_l0.t() + gru.bias_ih_l0  # (batch, steps, 3H)
    h = emb.new_zeros(emb.shape[0], hidden)
    steps = lengths.to(emb.device)
    for t in range(emb.shape[1]):
        gates = (h * masks[0]) @ w_hh[: 2 * hidden].t() + b_hh[: 2 * hidden]
        candidate = (h * masks[1]) @ w_hh[2 * hidden :].t() + b_hh[2 * hidden :]
        x = inputs[:, t]
        r = torch.sigmoid(x[:, :hidden] + gates[:, :hidden])
        z = torch.sigmoid(x[:, hidden : 2 * hidden] + gates[:, hidden:])
        n = torch.tanh(x[:, 2 * hidden :] + r * candidate)
        h = torch.where((t < steps).unsqueeze(1), (1 - z) * n + z * h, h)
    return h


def init_calixto(module: nn.Module, scheme: str) -> None:
    """Initialise every text and image parameter as Calixto & Liu describe (``calixto_paper``,
    Section 4: non-recurrent matrices N(0, 0.01), read as the standard deviation; recurrent
    matrices random orthogonal; biases zero) or as their code does (``calixto_code``, utils.py /
    layers.py: word embeddings and GRU input matrices uniform(-0.1, 0.1) (``norm_weight``),
    recurrent matrices orthogonal per gate (``ortho_weight``), the image and sentence
    projections Xavier-uniform (``param_init_fflayer`` -> ``xavier_weight``), biases zero)."""

    def non_recurrent(weight: torch.Tensor, projection: bool) -> None:
        if scheme == "calixto_paper":
            nn.init.normal_(weight, 0.0, 0.01)
        elif projection:
            nn.init.xavier_uniform_(weight)
        else:
            nn.init.uniform_(weight, -0.1, 0.1)

    with torch.no_grad():
        for sub in module.modules():
            if isinstance(sub, nn.Embedding):
                non_recurrent(sub.weight, projection=False)
            elif isinstance(sub, nn.Linear):
                non_recurrent(sub.weight, projection=True)
                nn.init.zeros_(sub.bias)
            elif isinstance(sub, nn.GRU):
                hidden = sub.hidden_size
                for name, value in sub.named_parameters():
                    if name.startswith("weight_ih"):
                        non_recurrent(value, projection=False)
                    elif name.startswith("weight_hh"):  # (3H, H): one square block per gate
                        for gate in range(3):
                            nn.init.orthogonal_(value[gate * hidden : (gate + 1) * hidden])
                    else:
                        nn.init.zeros_(value)


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
        self,
        vocab_size: int,
        embed_dim: int,
        hidden: int,
        proj: nn.Module,
        dropout: float,
        embedding_dropout: str = "elementwise",
        word_dropout: float = 0.0,
        recurrent_dropout: float = 0.0,
    ) -> None:
        super().__init__()
        if embedding_dropout not in EMBEDDING_DROPOUTS:
            raise ValueError(f"unknown embedding_dropout {embedding_dropout!r}")
        self.embed = nn.Embedding(vocab_size, embed_dim, padding_idx=0)
        self.gru = nn.GRU(embed_dim, hidden, batch_first=True)
        self.dropout = nn.Dropout(dropout)
        self.embedding_dropout = embedding_dropout
        self.word_dropout = word_dropout
        self.recurrent_dropout = recurrent_dropout
        self.proj = proj
        self.translators: list[tuple[torch.Tensor, torch.Tensor]] = []
        nn.init.uniform_(self.embed.weight, -0.1, 0.1)

    def _drop_embeddings(self, emb: torch.Tensor) -> torch.Tensor:
        if self.training and self.word_dropout > 0:
            emb = word_dropout(emb, self.word_dropout)
        if self.embedding_dropout == "elementwise":
            return self.dropout(emb)
        if self.training and self.dropout.p > 0:
            return variational_dropout(emb, self.dropout.p)
        return emb

    def forward(self, tokens: torch.Tensor, lengths: torch.Tensor) -> torch.Tensor:
        emb = self.embed(tokens)
        raw = emb
        for rows, mapping in self.translators:
            emb = torch.where(rows[tokens].unsqueeze(-1), raw @ mapping.detach().t(), emb)
        emb = self._drop_embeddings(emb)
        if self.training and self.recurrent_dropout > 0:  # no cuDNN kernel takes a state mask
            p = self.recurrent_dropout
            shape = (emb.shape[0], self.gru.hidden_size)
            masks = (kept_mask(shape, p, emb) / (1 - p), kept_mask(shape, p, emb) / (1 - p))
            return self.proj(self.dropout(gru_last_state(self.gru, emb, lengths, masks)))
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
        init: str = "vsepp",
        dropout_position: str = "before_norm",
        embedding_dropout: str = "elementwise",
        word_dropout: float = 0.0,
        recurrent_dropout: float = 0.0,
        use_abs: bool = True,
        image_norm: str = "always",
    ) -> None:
        super().__init__()
        if image_norm not in ("always", "evaluation"):
            raise ValueError(f"unknown image_norm {image_norm!r}")
        self.image_norm = image_norm
        if similarity not in SIMILARITIES:
            raise ValueError(f"unknown similarity {similarity!r}")
        if init not in INITS:
            raise ValueError(f"unknown init {init!r}")
        if dropout_position not in DROPOUT_POSITIONS:
            raise ValueError(f"unknown dropout_position {dropout_position!r}")
        self.similarity = similarity
        self.use_abs = use_abs and similarity == "order"
        self.image = nn.Linear(feature_dim, joint)
        self.image_dropout = nn.Dropout(dropout)
        self.dropout_after_projection = dropout_after_image_projection
        self.dropout_position = dropout_position
        shared = projection(hidden, joint) if shared_projection else None
        self.text = nn.ModuleDict(
            {
                name: TextEncoder(
                    n,
                    embed_dim,
                    hidden,
                    shared or projection(hidden, joint),
                    dropout,
                    embedding_dropout,
                    word_dropout,
                    recurrent_dropout,
                )
                for name, n in vocab_sizes.items()
            }
        )
        # Xavier init of the image layer as in VSE++.
        r = (6.0 / (feature_dim + joint)) ** 0.5
        nn.init.uniform_(self.image.weight, -r, r)
        nn.init.zeros_(self.image.bias)
        if init != "vsepp":
            init_calixto(self, init)

    def _finish(self, x: torch.Tensor) -> torch.Tensor:
        x = l2norm(x.float())
        if self.dropout_position == "after_norm" and self.training and self.image_dropout.p > 0:
            # Calixto's model_multilingual.py build_model: ``sents_mm *= shared_dropout_layer``
            # (and ``images *=``) after l2norm, a 0/1 mask without rescaling; at test time the
            # code multiplies by the keep probability, a constant that changes no rank or cosine,
            # so evaluation keeps the unit vectors.
            x = x * kept_mask(tuple(x.shape), self.image_dropout.p, x)
        return x.abs() if self.use_abs else x

    def embed_images(self, features: torch.Tensor) -> torch.Tensor:
        if self.dropout_position == "after_norm":  # the code drops only the normalised image
            projected = self.image(features)
        elif self.dropout_after_projection:
            projected = self.image_dropout(self.image(features))
        else:
            projected = self.image(self.image_dropout(features))
        if self.training and self.image_norm == "evaluation":
            # Kiros's VSE (model.py build_model): the training loss scores the linear image
            # projection as it is; only build_image_encoder (evaluation) l2-normalises it
            return projected.float()
        return self._finish(projected)

    def embed_text(self, encoder: str, tokens: torch.Tensor, lengths: torch.Tensor) -> torch.Tensor:
        return self._finish(self.text[encoder](tokens, lengths))

    def scores(self, a: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
        return score_matrix(a, b, self.similarity)
