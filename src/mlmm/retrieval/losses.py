"""Hinge ranking losses over in-batch negatives (VSE / VSE++) and Calixto's weighted sum.

``scores[i, j]`` = s(a_i, b_j) with the true pairs on the diagonal. Only the diagonal is
masked, as in VSE++ (two captions of one image in a batch count as negatives of each other).
"""

from __future__ import annotations

import torch


def ranking_loss(scores: torch.Tensor, margin: float, reduction: str) -> torch.Tensor:
    """Both directions: for each a_i the negatives b_j, and for each b_j the negatives a_i.

    ``reduction`` "sum" adds every violating hinge (Kiros et al. VSE); "max" keeps only the
    hardest negative per query (VSE++ max-of-hinges).
    """
    diagonal = scores.diagonal().view(-1, 1)
    cost_b = (margin + scores - diagonal).clamp_min(0)  # row i: a_i against every b_j
    cost_a = (margin + scores - diagonal.t()).clamp_min(0)  # column j: b_j against every a_i
    mask = torch.eye(scores.shape[0], dtype=torch.bool, device=scores.device)
    cost_b = cost_b.masked_fill(mask, 0)
    cost_a = cost_a.masked_fill(mask, 0)
    if reduction == "max":
        return cost_b.max(dim=1).values.sum() + cost_a.max(dim=0).values.sum()
    if reduction == "sum":
        return cost_b.sum() + cost_a.sum()
    raise ValueError(f"unknown reduction {reduction!r}")


def weighted_loss(image_terms: list[torch.Tensor], sentence_terms: list[torch.Tensor], beta: float):
    """Calixto & Liu (2017) eq. 3: beta * S_I + (1 - beta) * S_S, each a sum of ranking losses."""
    zero = image_terms[0].new_zeros(())
    s_i = sum(image_terms, zero)
    s_s = sum(sentence_terms, zero)
    return beta * s_i + (1.0 - beta) * s_s
