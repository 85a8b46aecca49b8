"""Retrieval metrics against a VSE++-style reference loop, STS reading and Pearson."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest
import torch

from mlmm import evaluation as ev
from mlmm import rank_metrics
from mlmm.cli import main
from mlmm.errors import InputError

SHARED = Path(__file__).resolve().parents[1].parent / "shared"


# ---- reference: per-query loops, ties ranked against the query (the module's rule) ---------


def ref_i2t(scores: np.ndarray, k: int) -> np.ndarray:
    """Rank of image i: the other images' captions scoring at least its best own caption."""
    ranks = np.zeros(scores.shape[0])
    for i in range(scores.shape[0]):
        own = np.zeros(scores.shape[1], dtype=bool)
        own[k * i : k * i + k] = True
        ranks[i] = np.sum(scores[i, ~own] >= scores[i, own].max())
    return ranks


def ref_t2i(scores: np.ndarray, k: int) -> np.ndarray:
    """Rank of caption c: the other images scoring at least its own image."""
    ranks = np.zeros(scores.shape[1])
    for c in range(scores.shape[1]):
        others = np.delete(scores[:, c], c // k)
        ranks[c] = np.sum(others >= scores[c // k, c])
    return ranks


def ref_metrics(ranks: np.ndarray) -> dict[str, float]:
    return {
        "R@1": 100.0 * len(np.where(ranks < 1)[0]) / len(ranks),
        "R@5": 100.0 * len(np.where(ranks < 5)[0]) / len(ranks),
        "R@10": 100.0 * len(np.where(ranks < 10)[0]) / len(ranks),
        "medr": np.floor(np.median(ranks)) + 1,
        "meanr": ranks.mean() + 1,
    }


def unit_rows(rng, n: int, d: int = 8) -> np.ndarray:
    """Rows with four entries of +-0.5: unit norm exactly, scores exact multiples of 1/4."""
    x = np.zeros((n, d))
    for row in x:
        row[rng.choice(d, 4, replace=False)] = rng.choice([-0.5, 0.5], 4)
    return x


# ---- hand-built cases --------------------------------------------------------------------


def test_perfect_and_reversed():
    n, k = 12, 2
    perfect = np.repeat(np.eye(n), k, axis=1)  # caption c scores 1 with image c // k only
    assert ev.i2t(perfect, k) == {"R@1": 100.0, "R@5": 100.0, "R@10": 100.0, "medr": 1, "meanr": 1}
    assert ev.t2i(perfect, k)["R@1"] == 100.0
    # reversed: each image's own captions score lowest of all
    reverse = 1 - perfect
    out = ev.i2t(reverse, k)
    # ties among the 2*(n-1) other captions at 1.0; own at 0: rank = 22 for every image
    assert out == {"R@1": 0.0, "R@5": 0.0, "R@10": 0.0, "medr": 23, "meanr": 23}
    assert ev.t2i(reverse, k)["meanr"] == n


def test_ties_count_against_the_query_wherever_they_sit():
    # everything ties: every other candidate counts as above, whatever its position
    scores = np.zeros((3, 3))
    assert ev.i2t(scores, 1) == {"R@1": 0.0, "R@5": 100.0, "R@10": 100.0, "medr": 3, "meanr": 3}
    assert ev.t2i(scores, 1)["meanr"] == 3
    # i2t takes the best of the k captions: image 0 owns captions 0, 1 tied with 2 and 3
    scores = np.array([[1.0, 1.0, 1.0, 1.0], [0.0, 0.0, 1.0, 0.0]])
    ranks = ev._score_matrix_ranks(scores, 2, ("i2t", "t2i"), None)
    assert ranks["i2t"].tolist() == ref_i2t(scores, 2).tolist() == [2, 0]
    assert ranks["t2i"].tolist() == ref_t2i(scores, 2).tolist() == [0, 0, 1, 1]
    # the same images in the other order rank the same: position decides nothing
    swapped = scores[::-1][:, [2, 3, 0, 1]]
    again = ev._score_matrix_ranks(swapped, 2, ("i2t", "t2i"), None)
    assert again["i2t"].tolist() == [0, 2] and again["t2i"].tolist() == [1, 1, 0, 0]


@pytest.mark.parametrize("seed", range(6))
def test_equal_to_reference_loop_on_tie_heavy_matrices(seed):
    rng = np.random.default_rng(seed)
    for _ in range(20):
        n, k = int(rng.integers(1, 14)), int(rng.integers(1, 6))
        scores = rng.integers(0, 3, (n, n * k)).astype(np.float64)
        chunk = int(rng.integers(1, n * k + 2))
        ranks = ev._score_matrix_ranks(scores, k, ("i2t", "t2i"), chunk)
        assert ranks["i2t"].tolist() == ref_i2t(scores, k).tolist()
        assert ranks["t2i"].tolist() == ref_t2i(scores, k).tolist()
        assert ev.i2t(scores, k, chunk) == pytest.approx(ref_metrics(ref_i2t(scores, k)))
        assert ev.t2i(scores, k, chunk) == pytest.approx(ref_metrics(ref_t2i(scores, k)))


def test_embeddings_equal_reference_on_random_data():
    rng = np.random.default_rng(1)
    images, captions = rng.normal(size=(60, 16)), rng.normal(size=(300, 16))
    unit = lambda x: x / np.linalg.norm(x, axis=1, keepdims=True)  # noqa: E731
    scores = unit(images) @ unit(captions).T
    out = ev.retrieval_metrics(images, captions, 5, chunk=37)
    assert out["i2t"] == pytest.approx(ref_metrics(ref_i2t(scores, 5)))
    assert out["t2i"] == pytest.approx(ref_metrics(ref_t2i(scores, 5)))


def test_embeddings_with_exact_ties_and_chunking_invariance():
    rng = np.random.default_rng(2)
    images, captions = unit_rows(rng, 30), unit_rows(rng, 90)
    scores = images @ captions.T  # exact: multiples of 1/4
    expected = {"i2t": ref_i2t(scores, 3), "t2i": ref_t2i(scores, 3)}
    for chunk in (1, 2, 3, 7, 89, 90, 1000, None):
        ranks = ev.retrieval_ranks(images, captions, 3, chunk=chunk)
        for direction in ("i2t", "t2i"):
            assert ranks[direction].tolist() == expected[direction].tolist(), (chunk, direction)


def test_order_similarity():
    rng = np.random.default_rng(3)
    images = rng.integers(0, 4, (20, 6)).astype(np.float64)
    captions = rng.integers(0, 4, (40, 6)).astype(np.float64)
    scores = -np.square(np.maximum(0, captions[None, :, :] - images[:, None, :])).sum(-1)
    assert torch.equal(ev.order_scores(torch.tensor(images), torch.tensor(captions)),
                       torch.tensor(scores))  # fmt: skip
    ranks = ev.retrieval_ranks(images, captions, 2, similarity="order", chunk=9)
    assert ranks["i2t"].tolist() == ref_i2t(scores, 2).tolist()
    assert ranks["t2i"].tolist() == ref_t2i(scores, 2).tolist()
    # a caption below its image in every coordinate scores 0, the best possible (ties with
    # other images above it in every coordinate count against it)
    assert ev.retrieval_metrics(captions + 0.5, captions, 1, "order")["t2i"]["R@1"] > 0


def test_folds_are_means_over_consecutive_parts():
    rng = np.random.default_rng(4)
    images, captions = rng.normal(size=(50, 8)), rng.normal(size=(100, 8))
    whole = ev.retrieval_metrics(images, captions, 2, folds=5)
    parts = [ev.retrieval_metrics(images[10 * f : 10 * f + 10], captions[20 * f : 20 * f + 20], 2)
             for f in range(5)]  # fmt: skip
    for direction in ("i2t", "t2i"):
        for metric in rank_metrics.METRICS:
            expected = np.mean([p[direction][metric] for p in parts])
            assert whole[direction][metric] == pytest.approx(expected)
    with pytest.raises(ValueError, match="folds"):
        ev.retrieval_metrics(images[:49], captions[:98], 2, folds=5)


def test_layout_errors():
    with pytest.raises(ValueError, match="captions per image"):
        ev.retrieval_metrics(np.ones((4, 3)), np.ones((7, 3)), 2)
    with pytest.raises(ValueError, match="similarity"):
        ev.retrieval_metrics(np.ones((2, 3)), np.ones((2, 3)), 1, similarity="dot")


def test_caption_caption_retrieval():
    rng = np.random.default_rng(5)
    en = unit_rows(rng, 40)
    de = en.copy()  # translations that embed identically: every query finds its own image
    assert ev.c2c_metrics(en, de, per_image=2)["R@1"] == 100.0
    queries, targets = unit_rows(rng, 40), unit_rows(rng, 40)
    scores = queries @ targets.T
    # reference: query q ranks all targets; best rank among the k targets of image q // k
    expected = []
    for q in range(40):
        own = np.zeros(40, dtype=bool)
        own[q // 2 * 2 : q // 2 * 2 + 2] = True
        expected.append(np.sum(scores[q, ~own] >= scores[q, own].max()))
    got = ev.c2c_metrics(queries, targets, per_image=2, chunk=7)
    assert got == pytest.approx(ref_metrics(np.array(expected, dtype=float)))


def test_recall_sum():
    m = {d: {"R@1": 1.0, "R@5": 2.0, "R@10": 3.0, "medr": 9.0} for d in ("i2t", "t2i")}
    assert rank_metrics.recall_sum(m) == 12.0


# ---- STS --------------------------------------------------------------------------------


def write_sts(tmp_path, pairs: str, gold: str):
    (tmp_path / "in.txt").write_text(pairs, encoding="utf-8")
    (tmp_path / "gs.txt").write_text(gold, encoding="utf-8")
    return tmp_path / "in.txt", tmp_path / "gs.txt"


def test_read_sts_and_pearson(tmp_path):
    paths = write_sts(tmp_path, "a b\tc d\ne f\tg h\ni j\tk l\n", "4.5\n\n1.0\n")
    first, second, gold = ev.read_sts(*paths)
    assert first == ["a b", "e f", "i j"] and second[2] == "k l"
    assert gold[0] == 4.5 and np.isnan(gold[1])
    a = np.array([[1.0, 0.0], [1.0, 0.0], [1.0, 0.0], [0.0, 1.0]])
    b = np.array([[1.0, 0.0], [0.0, 1.0], [1.0, 1.0], [0.0, 1.0]])
    gold = np.array([5.0, np.nan, 2.0, 4.0])
    cos = np.array([1.0, 0.0, 2**-0.5, 1.0])
    expected = np.corrcoef(5 * cos[[0, 2, 3]], gold[[0, 2, 3]])[0, 1]
    assert ev.sts_pearson(a, b, gold) == pytest.approx(expected)


@pytest.mark.parametrize(
    ("pairs", "gold", "message"),
    [
        ("a\tb\nc\td\n", "1\n", "expected 2 lines"),
        ("a\tb\nc d\n", "1\n2\n", "line 2: expected two non-empty sentences"),
        ("a\tb\tc\n", "1\n", "line 1: expected two non-empty sentences"),
        ("a\tb\n", "six\n", "line 1: expected a score in"),
        ("a\tb\n", "7\n", "line 1: expected a score in"),
        ("a\tb\n\nc\td\n", "1\n\n2\n", "line 2: expected a non-empty line"),
    ],
)
def test_read_sts_errors(tmp_path, pairs, gold, message):
    with pytest.raises(InputError, match=message):
        ev.read_sts(*write_sts(tmp_path, pairs, gold))


@pytest.mark.shared_data
@pytest.mark.parametrize(("year", "scored"), [("2014", 750), ("2015", 750)])
def test_sts_on_real_semeval_files(year, scored):
    folder = SHARED / "data" / "sts" / year
    if not folder.is_dir():
        pytest.skip("../shared/data/sts absent")
    first, second, gold = ev.read_sts(folder / "STS.input.images.txt", folder / "STS.gs.images.txt")
    assert int((~np.isnan(gold)).sum()) == scored
    # a bag-of-words encoder: cosine of word counts must correlate clearly with the gold scores
    vocab = {
        w: i for i, w in enumerate(sorted({w for s in first + second for w in s.lower().split()}))
    }

    def bow(sentences):  # noqa: E306
        x = np.zeros((len(sentences), len(vocab)))
        for row, s in zip(x, sentences, strict=True):
            for w in s.lower().split():
                row[vocab[w]] += 1
        return x

    r = ev.sts_pearson(bow(first), bow(second), gold)
    from scipy.stats import pearsonr

    a, b, keep = bow(first), bow(second), ~np.isnan(gold)
    cos = (a * b).sum(1) / np.linalg.norm(a, axis=1) / np.linalg.norm(b, axis=1)
    assert r == pytest.approx(pearsonr(5 * cos[keep], gold[keep]).statistic)
    assert 0.4 < r < 0.95


# ---- command line -----------------------------------------------------------------------


def test_cli_eval_retrieval(tmp_path, capsys):
    rng = np.random.default_rng(6)
    images, captions = rng.normal(size=(20, 4)), rng.normal(size=(40, 4))
    np.save(tmp_path / "i.npy", images)
    np.save(tmp_path / "c.npy", captions)
    out = tmp_path / "m.json"
    files = ["--images", str(tmp_path / "i.npy"), "--captions", str(tmp_path / "c.npy")]
    argv = ["eval-retrieval", *files, "--per-image", "2", "--folds", "2", "--out", str(out)]
    assert main(argv) == 0
    metrics = json.loads(out.read_text())
    assert metrics["i2t"] == pytest.approx(
        ev.retrieval_metrics(images, captions, 2, folds=2)["i2t"]
    )
    assert set(metrics) >= {"i2t", "t2i", "provenance", "timings"}
    argv[argv.index("2")] = "3"  # 40 captions are not 3 per image
    assert main(argv) == 2
    assert "c.npy: expected 20 x 3 rows, found 40 rows" in capsys.readouterr().err


@pytest.mark.parametrize("bad", [float("nan"), float("inf")])
def test_metric_functions_refuse_non_finite_embeddings(bad: float) -> None:
    """A NaN row compares false with everything and would rank first: R@1 = 100 from garbage."""
    images, captions = np.eye(4, dtype=np.float32), np.eye(4, dtype=np.float32)
    images[2, 1] = bad
    with pytest.raises(InputError, match=r"image embeddings: expected finite values .* row 2"):
        ev.retrieval_metrics(images, captions, 1)
    with pytest.raises(InputError, match="query embeddings"):
        ev.c2c_metrics(images, captions)
    with pytest.raises(InputError, match="score matrix"):
        ev.i2t(images, 1)


# ---- collapsed embeddings ----------------------------------------------------------------


def test_identical_image_rows_are_refused_as_collapsed():
    rng = np.random.default_rng(7)
    captions = rng.normal(size=(40, 8))
    images = np.tile(rng.normal(size=(1, 8)), (20, 1))
    with pytest.raises(ev.CollapsedEmbeddings, match="image embeddings.*20 of 20 rows"):
        ev.retrieval_metrics(images, captions, 2)
    with pytest.raises(ev.CollapsedEmbeddings, match="collapsed; not scored"):
        ev.fold_ranks(images, captions, 2, folds=2)
    # rows of one direction but another length are one point for cosine, not for order
    scaled = images * np.arange(1, 21)[:, None]
    with pytest.raises(ev.CollapsedEmbeddings):
        ev.retrieval_metrics(scaled, captions, 2)
    ev.retrieval_metrics(np.abs(scaled), np.abs(captions), 2, similarity="order")
    # validation scores them by the tie rule: no recall from ties
    scored = ev.retrieval_metrics(images, captions, 2, refuse_collapsed=False)
    assert scored["t2i"]["R@1"] == 0.0 and scored["t2i"]["medr"] == 20


def test_collapse_is_a_share_of_rows():
    rng = np.random.default_rng(8)
    images, captions = rng.normal(size=(20, 8)), rng.normal(size=(20, 8))
    images[:10] = images[0]  # half the rows at one point: still a ranking
    ev.retrieval_metrics(images, captions, 1)
    images[:11] = images[0] + 1e-7 * rng.normal(size=(11, 8))  # more than half, near-identical
    with pytest.raises(ev.CollapsedEmbeddings, match="11 of 20"):
        ev.retrieval_metrics(images, captions, 1)
    with pytest.raises(ev.CollapsedEmbeddings, match="target embeddings"):
        ev.c2c_ranks(captions, np.ones((20, 8)))
