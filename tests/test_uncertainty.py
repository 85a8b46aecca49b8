"""The bootstrap of mlmm.uncertainty: a hand computation, scipy's percentile bootstrap, a
planted effect, determinism, Holm; and the per-query files of mlmm.outcomes giving back every
metric exactly."""

from __future__ import annotations

import numpy as np
import pytest
import scipy.stats
import torch

from mlmm import evaluation, rank_metrics
from mlmm import uncertainty as u
from mlmm.errors import InputError
from mlmm.outcomes import read_outcomes, run_metrics, write_outcomes


def test_every_resample_of_two_queries_by_hand():
    """Ranks (0, 3): the four draws of two queries give R@1 = 100, 50, 50, 0 (by hand), and
    the percentile interval of those four is numpy's linear interpolation of them."""
    ranks = np.array([0, 3])
    draws = np.array([[0, 0], [0, 1], [1, 0], [1, 1]])
    values = u.replicates([ranks], u.rank_statistic("R@1"), draws, np.random.default_rng(0))
    assert values.tolist() == [100.0, 50.0, 50.0, 0.0]
    # sorted 0, 50, 50, 100; 2.5th percentile at position 0.075 -> 3.75; 97.5th -> 96.25
    assert u.percentile_interval(values) == pytest.approx((3.75, 96.25))
    assert u.point([ranks], u.rank_statistic("medr")) == 2.0  # floor(median 1.5) + 1


def test_statistics_match_the_metrics_they_resample():
    rng = np.random.default_rng(1)
    ranks = rng.integers(0, 40, size=50)
    expected = rank_metrics.metrics_of_folds(ranks, folds=5)
    for metric, value in expected.items():
        assert u.point([ranks], u.rank_statistic(metric, folds=5)) == pytest.approx(value)
    pred, gold = rng.normal(size=30), rng.normal(size=30)
    gold[[3, 7]] = np.nan
    pairs = np.stack([pred, gold], axis=1)
    assert u.point([pairs], u.pearson_statistic) == pytest.approx(
        rank_metrics.pearson_of(pred, gold)
    )


def test_draws_stay_within_their_folds():
    draws = u.query_draws(20, 200, np.random.default_rng(0), folds=4)
    assert draws.shape == (200, 20)
    for f in range(4):
        part = draws[:, 5 * f : 5 * f + 5]
        assert part.min() >= 5 * f and part.max() < 5 * f + 5


def test_one_seed_interval_agrees_with_scipy_percentile_bootstrap():
    rng = np.random.default_rng(2)
    ranks = rng.geometric(0.08, size=600) - 1
    ours = u.cell_interval([ranks], u.rank_statistic("R@10"), resamples=4000, seed=3)
    reference = scipy.stats.bootstrap(
        ((ranks < 10) * 100.0,),
        np.mean,
        n_resamples=4000,
        method="percentile",
        random_state=np.random.default_rng(4),
    ).confidence_interval
    width = reference.high - reference.low
    assert abs(ours.low - reference.low) < 0.08 * width
    assert abs(ours.high - reference.high) < 0.08 * width


def test_seed_spread_widens_the_interval():
    rng = np.random.default_rng(5)
    base = rng.integers(0, 30, size=400)
    same = [base, base, base]
    spread = [base, np.maximum(base - 6, 0), base + 6]
    stat = u.rank_statistic("R@10")
    narrow, wide = u.cell_interval(same, stat), u.cell_interval(spread, stat)
    assert wide.high - wide.low > narrow.high - narrow.low


def test_planted_effect_is_found_and_a_null_is_not():
    rng = np.random.default_rng(6)
    a = rng.integers(0, 40, size=500)
    better = np.where(rng.random(500) < 0.3, 0, a)  # 30 % of queries moved to rank 0
    stat = u.rank_statistic("R@1")
    found = u.paired_difference([better], [a], stat, seed=1)
    assert found.p < 0.01 and found.low > 0
    noise = rng.permutation(a)  # the same distribution, other queries: no effect on average
    null = u.paired_difference([a], [a.copy()], stat, seed=1)
    assert null.value == 0 and null.p == 1.0
    assert u.paired_difference([noise], [a], stat, seed=1).p > 0.05


def test_same_seed_same_interval():
    ranks = np.random.default_rng(7).integers(0, 30, size=300)
    stat = u.rank_statistic("R@5")
    assert u.cell_interval([ranks], stat, seed=9) == u.cell_interval([ranks], stat, seed=9)
    assert u.cell_interval([ranks], stat, seed=9) != u.cell_interval([ranks], stat, seed=10)


def test_holm_by_hand():
    # sorted 0.01, 0.02, 0.04 (x3, x2, x1) -> 0.03, 0.04, 0.04; the NaN stays out
    got = u.holm([0.04, np.nan, 0.01, 0.02])
    assert np.isnan(got[1])
    assert got[[0, 2, 3]] == pytest.approx([0.04, 0.03, 0.04])


def test_kept_outcomes_give_back_every_metric_exactly(tmp_path):
    """Recomputing each metric from queries.npz gives the stored metric exactly."""
    torch.manual_seed(0)
    images, captions = torch.randn(20, 8), torch.randn(40, 8)
    en, de = torch.randn(40, 8), torch.randn(40, 8)
    sts_a, sts_b = torch.randn(12, 8), torch.randn(12, 8)
    gold = np.linspace(0, 5, 12)
    gold[4] = np.nan
    predicted = evaluation.sts_predicted(sts_a, sts_b, 12)
    stored = {
        "test": {"en": evaluation.retrieval_metrics(images, captions, 2, folds=2)},
        "c2c": {"en-de": evaluation.c2c_metrics(en, de, per_image=2)},
        "sts": {"2014": evaluation.sts_pearson(sts_a, sts_b, gold)},
    }
    outcomes = {
        "folds": 2,
        "images": 20,
        "test": {"en": evaluation.fold_ranks(images, captions, 2, folds=2)},
        "c2c": {"en-de": evaluation.c2c_ranks(en, de, per_image=2)},
        "sts": {"2014": (predicted, gold)},
    }
    write_outcomes(tmp_path / "queries.npz", outcomes, {"seed": 1})
    kept = read_outcomes(tmp_path / "queries.npz")
    assert kept["provenance"] == {"seed": 1}
    assert run_metrics(kept) == stored
    # every query's image: an image query itself, a caption its image (two per image)
    assert kept["image"]["test"]["en"]["i2t"].tolist() == list(range(20))
    assert kept["image"]["test"]["en"]["t2i"].tolist() == [i // 2 for i in range(40)]
    assert kept["image"]["c2c"]["en-de"].tolist() == [i // 2 for i in range(40)]


def test_queries_file_without_image_ids_is_refused_in_one_line(tmp_path):
    np.savez(tmp_path / "queries.npz", folds=np.asarray(1), **{"test/en/t2i": np.arange(10)})
    with pytest.raises(InputError, match=r"queries.npz, key 'image/test/en/t2i'.*rerun") as info:
        read_outcomes(tmp_path / "queries.npz")
    assert "\n" not in str(info.value)


def test_image_draws_keep_an_images_captions_together_within_folds():
    groups = np.repeat(np.arange(12), 5)  # 12 images, 5 captions each, 3 folds of 4 images
    draws = u.query_draws(60, 300, np.random.default_rng(0), folds=3, groups=groups)
    assert draws.shape == (300, 60)
    blocks = draws.reshape(300, 12, 5)
    # every drawn block of five is one image's five captions, in order
    assert (blocks - blocks[..., :1] == np.arange(5)).all()
    assert (blocks[..., 0] % 5 == 0).all()
    for f in range(3):
        part = draws[:, 20 * f : 20 * f + 20]
        assert part.min() >= 20 * f and part.max() < 20 * f + 20
    # one query an image: the caption-level draw, unchanged
    singles = u.query_draws(60, 5, np.random.default_rng(1), groups=np.arange(60))
    assert (singles == u.query_draws(60, 5, np.random.default_rng(1))).all()
    with pytest.raises(ValueError, match="unequal numbers"):
        u.query_draws(6, 2, np.random.default_rng(0), groups=np.array([0, 0, 0, 1, 1, 2]))
    with pytest.raises(ValueError, match="more than one fold"):
        u.query_draws(4, 2, np.random.default_rng(0), folds=2, groups=np.array([0, 1, 1, 0]))


def test_image_level_resampling_keeps_the_false_positive_rate():
    """1,000 null comparisons of two systems whose outcomes share an image-level component
    (an image hard or easy for a system on all its captions, independently per system): the
    image-level test rejects within 1 % of the nominal 5 %; drawing captions one at a time
    treats the five captions of an image as independent and rejects far more often."""
    rng = np.random.default_rng(0)
    images, k, nulls = 100, 5, 1000
    groups = np.repeat(np.arange(images), k)
    stat = u.rank_statistic("R@10")
    rejected = {"image": 0, "caption": 0}
    for trial in range(nulls):
        difficulty = rng.gamma(1.5, 8.0, size=images)

        def system(difficulty=difficulty):
            per_image = np.repeat(difficulty + rng.normal(0, 6, images), k)
            return np.maximum(0, np.round(per_image + rng.normal(0, 3, images * k))).astype(int)

        a, b = system(), system()
        for unit, g in (("image", groups), ("caption", None)):
            p = u.paired_difference([a], [b], stat, resamples=200, seed=trial, groups=g).p
            rejected[unit] += p < u.ALPHA
    assert abs(rejected["image"] / nulls - u.ALPHA) <= 0.01
    assert rejected["caption"] / nulls > 0.15


def test_non_inferiority_p_and_minimal_detectable_effect():
    rng = np.random.default_rng(3)
    a = rng.integers(0, 40, size=600)
    stat = u.rank_statistic("R@10")
    same = u.paired_difference([a], [rng.permutation(a)], stat, seed=1)
    # a wide margin is met, a tiny one is not
    assert u.paired_difference([a], [rng.permutation(a)], stat, seed=1, margin=10).p < 0.01
    assert u.paired_difference([a], [rng.permutation(a)], stat, seed=1, margin=0.01).p > 0.3
    assert same.se > 0 and len(same.replicates) == u.RESAMPLES
    assert u.minimal_detectable_effect(1.0) == pytest.approx(1.959964 + 0.841621, abs=1e-5)
    assert u.minimal_detectable_effect(1.0, alpha=0.01) > u.minimal_detectable_effect(1.0)


def test_holm_levels_by_hand():
    # sorted 0.01, 0.02, 0.04 (x3, x2, x1 -> 0.03, 0.04, 0.04 uncapped): levels 1 - 0.05 p/p_holm
    got = u.holm_levels([0.04, np.nan, 0.01, 0.02])
    assert np.isnan(got[1])
    assert got[[0, 2, 3]] == pytest.approx([0.95, 1 - 0.05 / 3, 1 - 0.05 / 2])
    assert u.holm_levels([0.3]) == pytest.approx([0.95])


HYPS = ["a man rides a red bike", "two dogs play in the snow", "a woman sings", "kids run",
        "the cat sleeps on a mat", "a boy throws a ball to his dog"]  # fmt: skip
REFS = ["a man rides a bike", "two dogs are playing in snow", "a woman is singing",
        "children run outside", "a cat sleeps on the mat", "a boy throws a ball"]  # fmt: skip


def test_kept_sentence_statistics_give_back_the_corpus_scores(tmp_path):
    """BLEU, TER and chrF from the kept per-sentence statistics equal mt_metrics exactly."""
    from mlmm.nmt.metrics import corpus_score, mt_metrics, sentence_statistics
    from mlmm.outcomes import read_sentence_statistics, write_sentence_statistics

    write_sentence_statistics(tmp_path / "s.npz", sentence_statistics(HYPS, REFS), {})
    kept = read_sentence_statistics(tmp_path / "s.npz")
    stored = mt_metrics(HYPS, REFS, "en")
    assert {name: corpus_score(name, stats) for name, stats in kept.items()} == stored


def test_bleu_resamples_are_sacrebleus():
    """The same seed draws the same sentences as sacrebleu's paired bootstrap
    (``rng.choice``), and each replicate's BLEU is sacrebleu's of the summed statistics."""
    from sacrebleu.metrics import BLEU

    from mlmm.nmt.metrics import corpus_statistic, sentence_statistics

    hyps, refs = HYPS * 20, REFS * 20
    stats = sentence_statistics(hyps, refs)["BLEU"]
    draws = u.query_draws(len(hyps), 200, np.random.default_rng(12345))
    ours = u.replicates([stats], corpus_statistic("BLEU"), draws, np.random.default_rng(0))
    idxs = np.random.default_rng(12345).choice(len(hyps), size=(200, len(hyps)), replace=True)
    bleu = BLEU(tokenize="none", smooth_method="none", force=True)
    theirs = [bleu._compute_score_from_stats(s.sum(0)).score for s in stats.astype("float32")[idxs]]
    assert ours == pytest.approx(theirs)


def test_planted_bleu_gain_agrees_with_sacrebleu_paired_bootstrap():
    from sacrebleu.metrics import BLEU
    from sacrebleu.significance import _paired_bs_test

    from mlmm.nmt.metrics import corpus_statistic, sentence_statistics

    rng = np.random.default_rng(3)
    refs = [" ".join(rng.choice(list("abcdefghij"), size=12)) for _ in range(300)]
    noisy = [" ".join(w if rng.random() < 0.5 else "z" for w in r.split()) for r in refs]
    better = [" ".join(w if rng.random() < 0.7 else "z" for w in r.split()) for r in refs]
    stat = corpus_statistic("BLEU")
    ours = u.paired_difference(
        [sentence_statistics(better, refs)["BLEU"]], [sentence_statistics(noisy, refs)["BLEU"]],
        stat, seed=1,
    )  # fmt: skip
    bleu = BLEU(tokenize="none", smooth_method="none", force=True)
    baseline = {"BLEU": (bleu._extract_corpus_statistics(noisy, [refs]),
                         bleu.corpus_score(noisy, [refs]))}  # fmt: skip
    _, theirs = _paired_bs_test(baseline, "better", better, [refs], {"BLEU": bleu}, seed=1)
    assert ours.value == pytest.approx(
        bleu.corpus_score(better, [refs]).score - baseline["BLEU"][1].score
    )
    assert ours.p < 0.05 and theirs["BLEU"].p_value < 0.05
    noisy_stats = sentence_statistics(noisy, refs)["BLEU"]
    assert u.paired_difference([noisy_stats], [noisy_stats], stat, seed=1).p == 1.0
