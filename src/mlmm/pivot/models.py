"""The pivot experiment's models beyond Bridge CorrNet itself (mlmm.ted.corrnet), and the
scores each gives to (image, caption) pairs.

- Bridge MAE: the multimodal autoencoder of Ngiam et al. (2011) trained on the bridge data.
  One shared code from the views an instance offers, decoded into every view it offers; their
  training-set augmentation (an instance is shown with both views or with one of them zeroed)
  is drawn afresh per instance and step. No correlation term. Simplified to the one hidden
  layer of Bridge CorrNet: no modality-specific layers and no RBM pre-training.
- 2-CorrNet: two CorrNets chained through the nearest English training caption.
- Random: seeded uniform scores.
Scores are negative Euclidean distances (the paper ranks by Euclidean distance).
"""

from __future__ import annotations

import numpy as np
import torch

from mlmm.ted.corrnet import BridgeCorrNet, DenseBatch, SparseBatch, correlation


class BridgeMAE(BridgeCorrNet):
    """Same encoders and decoders as Bridge CorrNet; Ngiam's objective instead of Eq. 4."""

    def loss(
        self,
        view: str,
        pivot: str,
        xv: SparseBatch | DenseBatch,
        xp: SparseBatch | DenseBatch,
        lam: float,
    ) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
        """(total, reconstruction, corr): each instance is shown with both views, the view only
        or the pivot only (uniformly), and reconstructs both. `lam` is unused (no correlation
        term); corr is reported for comparison with CorrNet, without gradient."""
        av, ap = self.pre(view, xv), self.pre(pivot, xp)
        size = av.shape[0]
        shown = torch.randint(0, 3, (size, 1), device=av.device)  # 0 both, 1 view, 2 pivot
        h = torch.sigmoid(av * (shown != 2) + ap * (shown != 1) + self.bias)
        rec = self.reconstruction(view, h, xv.dense) + self.reconstruction(pivot, h, xp.dense)
        rec = rec / size
        with torch.no_grad():
            corr = correlation(torch.sigmoid(av + self.bias), torch.sigmoid(ap + self.bias))
        return rec, rec, corr


def distance_scores(queries: np.ndarray, targets: np.ndarray) -> np.ndarray:
    """-||q - t|| for every (query row, target row)."""
    q, t = (
        torch.as_tensor(queries, dtype=torch.float64),
        torch.as_tensor(targets, dtype=torch.float64),
    )
    return (-torch.cdist(q, t)).numpy()


def nearest(queries: np.ndarray, pool: np.ndarray, chunk: int | None = None) -> np.ndarray:
    """Index of the nearest pool row (Euclidean) for every query row; ties: the lowest index.
    Queries go in chunks of about 2**26 distances (256 MiB) against a large pool."""
    pool_t = torch.as_tensor(pool, dtype=torch.float32)
    chunk = chunk or max(1, (1 << 26) // max(1, len(pool)))
    out = []
    for a in range(0, len(queries), chunk):
        q = torch.as_tensor(queries[a : a + chunk], dtype=torch.float32)
        out.append(torch.cdist(q, pool_t).argmin(dim=1).numpy())
    return np.concatenate(out) if out else np.zeros(0, dtype=np.int64)


def chain_scores(
    queries: np.ndarray, pool_first: np.ndarray, pool_second: np.ndarray, targets: np.ndarray
) -> np.ndarray:
    """2-CorrNet: each query goes to its nearest pool item in the first CorrNet's space
    (`queries`, `pool_first`), and that item's code in the second CorrNet's space
    (`pool_second`, same rows) scores the targets there. Returns (queries, targets)."""
    if len(pool_first) != len(pool_second):
        raise ValueError(f"pool sizes differ: {len(pool_first)} vs {len(pool_second)}")
    return distance_scores(pool_second[nearest(queries, pool_first)], targets)


def random_scores(n_images: int, n_captions: int, seed: int) -> np.ndarray:
    """Seeded uniform scores: a random ranking in both directions."""
    return np.random.default_rng(seed).random((n_images, n_captions))
