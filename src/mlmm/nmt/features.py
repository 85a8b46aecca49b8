"""Extra n-best features as plug-ins: (feature name, scorer) pairs.

A scorer gets, for every hypothesis of a list flattened into one batch, the sentence id (= line of
the split, = image of the split's image list), the tokenised source and the tokenised hypothesis,
and returns one value per hypothesis. ``EmbeddingScorer`` gives the paper's features from a
trained retrieval model (`mlmm.retrieval.api.load_trained`): s_i(image, hypothesis) and
s_s(hypothesis, source).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from pathlib import Path

import numpy as np

from mlmm.errors import InputError
from mlmm.nbest import NBestList

Scorer = Callable[[np.ndarray, Sequence[list[str]], Sequence[list[str]]], np.ndarray]


def add_features(
    nbest: NBestList, sources: Sequence[list[str]], scorers: Sequence[tuple[str, Scorer]]
) -> NBestList:
    """``nbest`` with one more feature per (name, scorer)."""
    ids = np.concatenate([np.full(len(t), i) for i, t in zip(nbest.ids, nbest.texts, strict=True)])
    missing = [i for i in nbest.ids if i >= len(sources)]
    if missing:
        raise InputError("n-best list", f"sentence ids below {len(sources)}", f"id {missing[0]}")
    src = [sources[i] for i in ids]
    hyps = [h.split() for texts in nbest.texts for h in texts]
    sizes = np.cumsum([len(t) for t in nbest.texts])[:-1]
    for name, scorer in scorers:
        values = np.asarray(scorer(ids, src, hyps), dtype=np.float64)
        if values.shape != (len(hyps),):
            raise InputError(f"feature {name}", f"{len(hyps)} values", f"shape {values.shape}")
        nbest = nbest.with_features(name, np.split(values, sizes))
    return nbest


class EmbeddingScorer:
    """Similarity from a trained retrieval model: ``kind`` 'image' gives s_i(image, hypothesis),
    'source' gives s_s(hypothesis, source sentence)."""

    def __init__(
        self, model_path: str | Path, kind: str, target: str, source: str,
        images: np.ndarray | None = None, batch_size: int = 512,
    ) -> None:
        from mlmm.retrieval.api import load_trained

        if kind not in ("image", "source"):
            raise InputError(model_path, "kind 'image' or 'source'", repr(kind))
        if kind == "image" and images is None:
            raise InputError(model_path, "image features for an image-sentence feature", "none")
        self.model = load_trained(model_path)
        self.kind, self.target, self.source = kind, target, source
        self.images, self.batch_size = images, batch_size

    def __call__(self, ids, sources, hypotheses) -> np.ndarray:
        import torch

        out = []
        with torch.no_grad():
            for start in range(0, len(hypotheses), self.batch_size):
                part = slice(start, start + self.batch_size)
                # an empty hypothesis is embedded as the unknown word
                hyps = [h or ["<unk>"] for h in hypotheses[part]]
                hyp = self.model.embed_sentences(self.target, hyps)
                if self.kind == "image":  # the image first: the specific side of order scores
                    image = self.model.embed_images(np.asarray(self.images[ids[part]]))
                    scores = self.model.similarity(image, hyp)
                else:
                    src = self.model.embed_sentences(self.source, list(sources[part]))
                    scores = self.model.similarity(hyp, src)
                out.append(scores.detach().cpu().numpy())
        return np.concatenate(out) if out else np.zeros(0)
