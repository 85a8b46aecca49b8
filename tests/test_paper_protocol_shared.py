"""Shared retrieval conventions of docs/fidelity.md's 'Shared conventions', each mechanism
against a hand computation: the ranking loss, the order score, the encoders, the stopping report,
the refusal of non-finite features, the recall metric. (The values each paper record gives them
are held by the behaviour tests that run the records: tests/test_paper_protocol_behaviour.py.)
"""

from __future__ import annotations

import math

import numpy as np
import pytest
import torch
from helpers.features import write_array

from mlmm import evaluation
from mlmm.errors import InputError
from mlmm.retrieval.data import load_features
from mlmm.retrieval.losses import ranking_loss
from mlmm.retrieval.model import JointEmbedding, score_matrix
from mlmm.retrieval.selection import Selector


def test_ranking_loss_is_vsepp_hinge_sum_or_max_over_in_batch_negatives():
    """Row 'ranking loss': the hinge summed (VSE) or its hardest negative (VSE++), both
    directions (each paper record's margin and reduction: the behaviour tests' trainer)."""
    # hand computation: scores with the true pairs on the diagonal, margin 0.2
    scores = torch.tensor([[0.5, 0.6, 0.1], [0.4, 0.9, 0.8], [0.0, 0.3, 0.2]])
    # rows (a_i against every b_j, diagonal masked): [0, .3, 0], [0, 0, .1], [0, .3, 0]
    # columns (b_j against every a_i): [0, .1, 0], [0, 0, 0], [0, .1, .8] (read down)
    assert ranking_loss(scores, 0.2, "sum").item() == pytest.approx(0.7 + 1.0)
    assert ranking_loss(scores, 0.2, "max").item() == pytest.approx(0.7 + 0.1 + 0.8)
    scores[0, 2] = 0.45  # row 0 gains .15, column 2 gains .45 - .1: sum adds both, max neither
    assert ranking_loss(scores, 0.2, "sum").item() == pytest.approx(1.7 + 0.15 + 0.35)
    assert ranking_loss(scores, 0.2, "max").item() == pytest.approx(1.6)


def test_order_score_is_the_vsepp_norm_and_ranks_as_evaluation():
    """Row 'order score': training -||max(0, c - i)||, evaluation its square (same ranking)."""
    images = torch.tensor([[1.0, 0.0], [0.2, 0.5]])
    captions = torch.tensor([[0.5, 0.5], [0.0, 1.0], [0.3, 0.1]])
    train = score_matrix(images, captions, "order")
    # image 0 vs caption 0: max(0, [-.5, .5]) -> -.5; caption 1: [0, 1] -> -1; 2: [0, .1]
    assert train[0].tolist() == pytest.approx([-0.5, -1.0, -0.1])
    assert train[1].tolist() == pytest.approx([-0.3, -0.5, -0.1])
    evaluated = evaluation.order_scores(images, captions)
    assert torch.allclose(evaluated, -(train**2))
    zero = torch.zeros(1, 2, requires_grad=True)
    score_matrix(zero, torch.zeros(1, 2), "order").sum().backward()
    assert torch.isfinite(zero.grad).all()


def test_embeddings_are_vsepp_encoders():
    """Row 'embeddings': Xavier-uniform image layer, uniform(-0.1, 0.1) words, l2 norm, abs."""
    torch.manual_seed(0)
    model = JointEmbedding(40, {"en": 50}, 8, 16, 24, 0.0, "order")
    bound = math.sqrt(6.0 / (40 + 24))
    assert model.image.weight.abs().max() <= bound and model.image.weight.abs().max() > 0.9 * bound
    assert not model.image.bias.any()
    words = model.text["en"].embed.weight
    assert words.abs().max() <= 0.1 and words.abs().max() > 0.09
    out = model.embed_images(torch.randn(5, 40))
    assert torch.allclose(out.norm(dim=1), torch.ones(5)) and (out >= 0).all()  # use_abs


def test_stopping_report_says_patience_or_cap():
    """Row 'stopping report': stopped_by and still_improving from the selector."""
    selector = Selector(patience=2)
    for step, score in enumerate([1.0, 0.5, 0.4], start=1):
        selector.update((score,), step)
    assert selector.exhausted
    assert selector.outcome() == {"stopped_by": "patience", "still_improving": False}
    capped = Selector(patience=None)
    capped.update((1.0,), 1)
    capped.update((2.0,), 2)
    assert capped.outcome() == {"stopped_by": "cap", "still_improving": True}


def test_non_finite_feature_rows_are_refused_naming_the_first(tmp_path):
    """Row 'bad input': NaN/inf rows refused on load, naming the file and the first bad row."""
    feats = np.ones((3, 2), dtype=np.float32)
    feats[1, 0] = np.inf
    names = ["a.jpg", "b.jpg", "c.jpg"]
    write_array(tmp_path / "bb/val.npy", feats, names)
    with pytest.raises(InputError, match=r"val\.npy.*1 of 3 rows \(first: row 1\)"):
        load_features(tmp_path, "bb", "val", names)


def test_metric_is_recall_at_k_on_zero_based_ranks():
    """Row 'metric': vsepp i2t/t2i; an image's rank is its best caption's."""
    images = torch.tensor([[1.0, 0.0], [0.0, 1.0]])
    # image 0's captions rank 2nd and 3rd, image 1's first; 2 captions per image
    captions = torch.tensor([[0.6, 0.8], [0.5, 0.9], [0.0, 1.0], [1.0, 0.1]])
    captions = torch.nn.functional.normalize(captions, dim=1)
    metrics = evaluation.retrieval_metrics(images, captions, per_image=2)
    # i2t: image 0 scores caption 3 first (0.995) then 0 (0.6): rank 1; image 1: caption 2 (1.0)
    # i2t ranks [1, 0]: R@1 50, R@5 100, medr floor(0.5) + 1, meanr 1.5
    assert metrics["i2t"]["R@1"] == pytest.approx(50.0)
    assert metrics["i2t"]["R@5"] == pytest.approx(100.0)
    assert (metrics["i2t"]["medr"], metrics["i2t"]["meanr"]) == (1.0, 1.5)
