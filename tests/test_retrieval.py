"""Unit tests of the retrieval pieces: losses by hand, order similarity, data settings,
c2c pairs, Procrustes, the alignment ratio and variant resolution."""

from __future__ import annotations

import math
from pathlib import Path

import numpy as np
import pytest
import torch
import yaml
from helpers.retrieval import record_of, tiny_world

from mlmm.errors import InputError
from mlmm.retrieval import rcsls, word_vector_files
from mlmm.retrieval.config import resolve_variant
from mlmm.retrieval.data import Cycler, c2c_pairs, image_subsets, joint_tuples, training_captions
from mlmm.retrieval.losses import ranking_loss, weighted_loss
from mlmm.retrieval.model import rowwise_score, score_matrix

ROOT = Path(__file__).resolve().parents[1]


def test_ranking_loss_sum_and_max_by_hand():
    s = torch.tensor([[0.9, 0.5, 0.8], [0.1, 0.7, 0.6], [0.3, 0.65, 0.4]])
    m = 0.2
    # row i: image i vs captions j != i; column j: caption j vs images i != j
    rows = [
        [0, max(0, m + 0.5 - 0.9), max(0, m + 0.8 - 0.9)],
        [max(0, m + 0.1 - 0.7), 0, max(0, m + 0.6 - 0.7)],
        [max(0, m + 0.3 - 0.4), max(0, m + 0.65 - 0.4), 0],
    ]
    cols = [
        [0, max(0, m + 0.5 - 0.7), max(0, m + 0.8 - 0.4)],
        [max(0, m + 0.1 - 0.9), 0, max(0, m + 0.6 - 0.4)],
        [max(0, m + 0.3 - 0.9), max(0, m + 0.65 - 0.7), 0],
    ]
    total = sum(map(sum, rows)) + sum(map(sum, cols))
    hardest = sum(max(r) for r in rows) + sum(max(c[j] for c in cols) for j in range(3))
    assert ranking_loss(s, m, "sum").item() == pytest.approx(total)
    assert ranking_loss(s, m, "max").item() == pytest.approx(hardest)


def test_only_the_diagonal_is_masked():
    # two identical captions (columns 0 and 1 equal): they stay negatives of each other
    s = torch.tensor([[1.0, 1.0], [1.0, 1.0]])
    assert ranking_loss(s, 0.2, "sum").item() == pytest.approx(4 * 0.2)
    assert ranking_loss(torch.eye(2) * 5, 0.2, "max").item() == 0


def test_weighted_loss_is_calixto_eq3():
    a, b = torch.tensor(2.0), torch.tensor(6.0)
    assert weighted_loss([a, a], [b], 0.75).item() == pytest.approx(0.75 * 4 + 0.25 * 6)
    assert weighted_loss([a], [], 1.0).item() == pytest.approx(2.0)


def test_order_similarity_is_vsepp_order_sim():
    """VSE++ / AME-CMR order_sim: -||max(0, s - im)|| (the norm, not its square)."""
    image = torch.tensor([[1.0, 2.0, 0.0]])
    caps = torch.tensor([[0.5, 1.0, 0.0], [2.0, 2.0, 1.0]])
    expected = torch.tensor([[0.0, -(2.0**0.5)]])  # violations (1, 0, 1)
    assert torch.allclose(score_matrix(image, caps, "order"), expected)
    assert torch.allclose(rowwise_score(image.repeat(2, 1), caps, "order"), expected[0])
    # asymmetric: swapping the roles changes the score (violations 0.5, 1.0, 0)
    assert score_matrix(caps[:1], image, "order").item() == pytest.approx(-(1.25**0.5))
    assert torch.allclose(score_matrix(caps, caps, "cosine"), caps @ caps.t())


def test_order_score_has_finite_gradient_without_violation():
    image = torch.tensor([[1.0, 2.0, 0.5]], requires_grad=True)
    caps = torch.tensor([[0.5, 1.0, 0.0]], requires_grad=True)  # below the image: score 0
    score_matrix(image, caps, "order").sum().backward()
    assert torch.isfinite(image.grad).all() and torch.isfinite(caps.grad).all()


def test_order_ranks_as_evaluation_module():
    """Evaluation ranks with the squared norm; the square root is monotone, so ranks agree."""
    from mlmm import evaluation

    a, b = torch.rand(4, 5), torch.rand(6, 5)
    assert torch.allclose(score_matrix(a, b, "order"), -((-evaluation.order_scores(a, b)).sqrt()))


def test_c2c_pairs_are_cartesian_products_per_image():
    caps = {"en": [[["a"], ["b"]], [["c"]]], "de": [[["x"]], [["y"], ["z"]]], "fr": [[], [["f"]]]}
    pairs = c2c_pairs(caps)
    assert ("en", ["a"], "de", ["x"]) in pairs and ("en", ["b"], "de", ["x"]) in pairs
    assert ("en", ["c"], "de", ["z"]) in pairs and ("de", ["z"], "fr", ["f"]) in pairs
    # en-de: 2*1 + 1*2, en-fr: 0 + 1, de-fr: 0 + 2
    assert len(pairs) == 4 + 1 + 2
    assert not any(p[1] == ["a"] and p[3] == ["y"] for p in pairs)  # never across images
    assert joint_tuples({"en": caps["en"], "de": caps["de"]}) == [
        (0, [["a"], ["x"]]),
        (1, [["c"], ["y"]]),
    ]


def test_image_subsets_half_overlap_and_disjoint():
    rng = np.random.default_rng(0)

    def subsets(langs, fraction, assignment):
        spec = {"fraction": fraction, "assignment": assignment, "draw": "shared"}
        return image_subsets(10, langs, spec, rng)

    full = subsets(["en", "de"], 1.0, "overlap")
    assert all(len(v) == 10 for v in full.values())
    over = subsets(["en", "de"], 0.5, "overlap")
    assert len(over["en"]) == 5 and np.array_equal(over["en"], over["de"])
    dis = subsets(["en", "de"], 0.5, "disjoint")
    assert len(dis["en"]) == len(dis["de"]) == 5 and not set(dis["en"]) & set(dis["de"])
    with pytest.raises(InputError):
        subsets(["en", "de", "fr"], 0.5, "disjoint")


def test_training_captions_data_settings(tmp_path):
    tiny_world(tmp_path)
    rng = np.random.default_rng(0)
    full = training_captions(tmp_path, record_of(), rng)
    assert list(full) == ["en"] and all(len(c) == 5 for c in full["en"])
    under = training_captions(
        tmp_path,
        record_of(
            train_data=[
                {"portion": "comparable", "languages": ["en", "de"], "captions_per_image": 1}
            ]
        ),
        rng,
    )
    assert all(len(c) == 1 for lang in ("en", "de") for c in under[lang])
    assert len({tuple(c[0]) for c in under["en"]}) == 6  # one of the image's own captions
    assert all(c[0][1] == str(i) for i, c in enumerate(under["en"]))
    half = training_captions(
        tmp_path,
        record_of(
            train_data=[{"portion": "comparable", "languages": ["en", "de"]}],
            image_subset={"fraction": 0.5, "assignment": "disjoint"},
        ),
        rng,
    )
    used = {lang: {i for i, c in enumerate(half[lang]) if c} for lang in ("en", "de")}
    assert len(used["en"]) == len(used["de"]) == 3 and not used["en"] & used["de"]
    assert c2c_pairs(half) == []  # disjoint images: nothing to pair
    mixed = training_captions(
        tmp_path,
        record_of(
            train_data=[
                {"portion": "translation", "languages": ["en", "de", "fr"]},
                {"portion": "comparable", "languages": ["en", "de"]},
            ]
        ),
        rng,
    )
    assert [len(c) for c in mixed["en"]] == [6] * 6 and [len(c) for c in mixed["fr"]] == [1] * 6


def test_cycler_reshuffles_and_restores():
    a = Cycler(5, np.random.default_rng(1))
    seen = [a.next(2) for _ in range(2)]
    assert sorted(np.concatenate(seen).tolist()) == sorted(set(np.concatenate(seen).tolist()))
    state = {k: (v.copy() if isinstance(v, np.ndarray) else v) for k, v in a.state().items()}
    after = [a.next(2).tolist() for _ in range(4)]
    b = Cycler(5, np.random.default_rng(99))
    b.load(state)
    assert [b.next(2).tolist() for _ in range(4)] == after
    assert all(len(x) >= 2 for x in after)


def test_procrustes_recovers_a_rotation():
    gen = torch.Generator().manual_seed(0)
    q, _ = torch.linalg.qr(torch.randn(6, 6, generator=gen, dtype=torch.float64))
    x = torch.randn(50, 6, generator=gen, dtype=torch.float64)
    w = rcsls.procrustes(x, x @ q.t())
    assert torch.allclose(w, q, atol=1e-8)


def test_alignment_ratio_on_a_toy_lexicon():
    src = torch.eye(4)
    tgt = torch.tensor([[1.0, 0, 0, 0], [0, 0, 1.0, 0], [0, 1.0, 0, 0], [0, 0, 0, 1.0]])
    # source 0 -> target 0 (right), 1 -> 2 (right: gold 2), 2 -> 1 (gold says 3: wrong)
    gold = {0: {0}, 1: {1, 2}, 2: {3}}
    assert rcsls.precision_at_1(src, tgt, gold, None) == pytest.approx(200 / 3)
    swap = torch.eye(4)[[0, 2, 1, 3]]  # maps source 1 onto target row 1's direction
    assert rcsls.precision_at_1(src, tgt, gold, swap) == pytest.approx(100 * 2 / 3)
    assert math.isnan(rcsls.precision_at_1(src, tgt, {}, None))


def test_rcsls_prefers_the_true_mapping():
    gen = torch.Generator().manual_seed(1)
    q, _ = torch.linalg.qr(torch.randn(5, 5, generator=gen))
    x = torch.randn(30, 5, generator=gen)
    pairs = torch.stack([torch.arange(30), torch.arange(30)], 1)
    good = rcsls.rcsls_loss(x, x @ q.t(), pairs, q, 3)
    bad = rcsls.rcsls_loss(x, x @ q.t(), pairs, torch.eye(5), 3)
    assert good < bad


def test_lexicon_split_and_vec_roundtrip(tmp_path):
    pairs = [("a", "x"), ("a", "y"), ("b", "z"), ("c", "w"), ("d", "v")]
    train, test = rcsls.split_lexicon(pairs, 0.5)
    assert {s for s, _ in train}.isdisjoint({s for s, _ in test})
    assert sorted(train + test) == sorted(pairs)
    vectors = {"a": np.array([1.0, 2.0], np.float32), "b": np.array([0.5, -1.0], np.float32)}
    word_vector_files.write_vec(tmp_path / "v.vec", vectors)
    back = word_vector_files.read_vec(tmp_path / "v.vec", {"b"})
    assert list(back) == ["b"] and np.allclose(back["b"], vectors["b"])
    (tmp_path / "bad.vec").write_text("2 3\na 1 2\n")
    with pytest.raises(InputError, match="line 2"):
        word_vector_files.read_vec(tmp_path / "bad.vec")


def test_variant_resolution_merges_and_rejects():
    section = {
        "defaults": {"optimizer": {"lr": 1e-3}, "hidden": 64},
        "variants": {"v": {"optimizer": {"decay_epochs": 15}, "similarity": "order"}},
    }
    record = resolve_variant(section, "v")
    assert record["optimizer"] == {"lr": 1e-3, "decay_epochs": 15, "decay_factor": 0.1}
    assert record["hidden"] == 64 and record["similarity"] == "order" and record["name"] == "v"
    with pytest.raises(InputError, match="hiden"):
        resolve_variant({"variants": {"v": {"hiden": 3}}}, "v")
    with pytest.raises(InputError):
        resolve_variant({"variants": {"v": {"loss": "mean"}}}, "v")
    with pytest.raises(InputError):
        resolve_variant({"variants": {}}, "missing")


@pytest.mark.parametrize("config", ["config.yaml", "config/paper.yaml"])
def test_every_configured_variant_resolves(config):
    from mlmm.retrieval.config import merge_config

    merged = yaml.safe_load((ROOT / "config.yaml").read_text())
    if config != "config.yaml":
        merged = merge_config(merged, yaml.safe_load((ROOT / config).read_text()))
    section = merged["retrieval"]
    assert section["run"]
    for name in section["run"]:
        record = resolve_variant(section, name)
        for row in record["paper_rows"]:
            if "figure" in row:  # a figure's bars or curves: paper, figure number, system
                assert {"paper", "system"} <= set(row) and "table" not in row
                continue
            assert {"paper", "table", "system", "variant_note", "languages"} <= set(row)


SHARED = ROOT.parent / "shared" / "data"


@pytest.mark.shared_data
def test_real_multi30k_data_settings_have_the_papers_sizes():
    """Kádár Section 5: Bi-overlap 14.5K images / 145K captions, Bi-disjoint 29K / 145K."""
    root = SHARED / "multi30k"
    if not (root / "data/task2").is_dir():
        pytest.skip("real Multi30K not available")
    rng = np.random.default_rng(0)
    both = [{"portion": "comparable", "languages": ["en", "de"]}]
    overlap = training_captions(
        root,
        record_of(train_data=both, image_subset={"fraction": 0.5, "assignment": "overlap"}),
        rng,
    )
    disjoint = training_captions(
        root,
        record_of(train_data=both, image_subset={"fraction": 0.5, "assignment": "disjoint"}),
        rng,
    )
    for setting, images in ((overlap, 14500), (disjoint, 29000)):
        used = {i for lang in ("en", "de") for i, c in enumerate(setting[lang]) if c}
        assert len(used) == images
        assert sum(len(c) for lang in ("en", "de") for c in setting[lang]) == 145000
    assert len(c2c_pairs(overlap)) == 14500 * 25


@pytest.mark.shared_data
def test_real_muse_lexicon_splits_by_source_word():
    path = SHARED / "muse/en-de.txt"
    if not path.is_file():
        pytest.skip("MUSE en-de not available")
    pairs = word_vector_files.read_lexicon(path)
    train, test = rcsls.split_lexicon(pairs, 0.8)
    assert len(train) + len(test) == len(pairs) > 100000
    assert {s for s, _ in train}.isdisjoint({s for s, _ in test})


def test_muse_dictionaries_download_atomically_and_must_parse(tmp_path):
    source = tmp_path / "arrival"
    source.mkdir()
    (source / "en-ja.txt").write_text("dog 犬\ncat 猫\n", encoding="utf-8")
    (source / "en-de.txt").write_text("dog\n", encoding="utf-8")  # no translation on the line
    out = tmp_path / "muse"
    word_vector_files.download_lexicons(source.as_uri(), ["ja"], out)
    assert word_vector_files.read_lexicon(out / "en-ja.txt") == [("dog", "犬"), ("cat", "猫")]
    with pytest.raises(InputError, match="en-de.txt"):
        word_vector_files.download_lexicons(source.as_uri(), ["de"], out)
    with pytest.raises(InputError, match="reachable URL"):
        word_vector_files.download_lexicons(source.as_uri(), ["fr"], out)
    shown = sorted(p.name for p in out.iterdir() if not p.name.startswith("."))  # not records
    assert shown == ["en-ja.txt"]  # nothing bad or partial


def _fasttext_rcsls(x_src, y_tgt, z_src, z_tgt, r, knn):
    """fastText alignment/align.py ``rcsls`` and ``getknn`` (numpy), as written there."""

    def getknn(sc, x, y, k):
        sidx = np.argpartition(sc, -k, axis=1)[:, -k:]
        ytopk = y[sidx.flatten(), :].reshape(sidx.shape[0], sidx.shape[1], y.shape[1])
        f = np.sum(sc[np.arange(sc.shape[0])[:, None], sidx])
        return f / k, np.dot(ytopk.sum(1).T, x) / k

    x_trans = x_src @ r.T
    f = 2 * np.sum(x_trans * y_tgt)
    df = 2 * y_tgt.T @ x_src
    fk0, dfk0 = getknn(x_trans @ z_tgt.T, x_src, z_tgt, knn)
    fk1, dfk1 = getknn((z_src @ r.T @ y_tgt.T).T, y_tgt, z_src, knn)
    return -(f - fk0 - fk1) / x_src.shape[0], -(df - dfk0 - dfk1.T) / x_src.shape[0]


def test_rcsls_objective_is_fasttext_align_in_chunks():
    rng = np.random.default_rng(0)
    z_src, z_tgt = rng.normal(size=(9, 4)), rng.normal(size=(7, 4))
    r = rng.normal(size=(4, 4))
    pairs = np.array([[0, 1], [2, 2], [3, 0], [5, 6], [8, 4]])
    x, y = z_src[pairs[:, 0]], z_tgt[pairs[:, 1]]
    f, df = _fasttext_rcsls(x, y, z_src, z_tgt, r, 3)
    t = [torch.from_numpy(a) for a in (x, y, z_src, z_tgt, r)]
    ours_f, ours_df = rcsls.rcsls_objective(*t, knn=3, chunk=2)  # chunks of 2, 2 and 1 pairs
    assert ours_f == pytest.approx(f, abs=1e-10)
    assert np.allclose(ours_df.numpy(), df, atol=1e-10)
    loss = rcsls.rcsls_loss(
        torch.from_numpy(z_src), torch.from_numpy(z_tgt), torch.from_numpy(pairs),
        torch.from_numpy(r), 3, normalise=False,
    )
    assert float(loss) == pytest.approx(f, abs=1e-10)


def test_rcsls_align_halves_lr_on_a_rising_loss_and_keeps_the_step():
    """align.py: R -= lr df; ``if f > fold and it > 0: lr /= 2`` (fold stays the last loss that
    did not rise); its R = Rold is the in-place-updated array, so no step is undone."""
    rng = np.random.default_rng(1)
    z = torch.from_numpy(rng.normal(size=(12, 3)))
    z = z / z.norm(dim=1, keepdim=True)
    q = torch.linalg.qr(torch.from_numpy(rng.normal(size=(3, 3))))[0]
    x, y = z[:8], (z @ q.t())[:8] + 0.3 * torch.from_numpy(rng.normal(size=(8, 3)))
    mapping, history = rcsls.rcsls_align(x, y, z, z @ q.t(), knn=2, lr=50.0, iterations=6)
    w = rcsls.procrustes(x, y)
    previous, lr = None, 50.0
    for step in history:  # the same loop by hand
        f, df = rcsls.rcsls_objective(x, y, z, z @ q.t(), w, 2)
        assert step == {"iteration": step["iteration"], "loss": pytest.approx(f), "lr": lr}
        w = w - lr * df
        if previous is not None and f > previous:
            lr /= 2
        else:
            previous = f
    assert torch.allclose(mapping, w)
    lrs = [step["lr"] for step in history]
    assert min(lrs) < lrs[0]  # a rise happened


def test_rcsls_rotation_of_japanese_vectors_recovers_a_rotation(tmp_path):
    """rotation.method rcsls (AME: Japanese aligned by RCSLS): vectors that are a rotation of
    the English ones come back onto them, l2-normalised, on the named MUSE sections."""
    rng = np.random.default_rng(2)
    words = [f"w{i}" for i in range(30)]
    english = dict(zip(words, rng.normal(size=(30, 5)).astype(np.float32), strict=True))
    q = np.linalg.qr(rng.normal(size=(5, 5)))[0].astype(np.float32)
    japanese = {f"j{w}": english[w] @ q.T for w in words}
    word_vector_files.write_vec(tmp_path / "wiki.en.align.vec", english)
    word_vector_files.write_vec(tmp_path / "cc.ja.vec", japanese)
    (tmp_path / "en-ja.txt").write_text("".join(f"{w} j{w}\n" for w in words[:20]), "utf-8")
    (tmp_path / "en-ja.5000-6500.txt").write_text("w20 jw20\n", "utf-8")
    rotation = {"method": "rcsls", "knn": 3, "lr": 1.0, "iterations": 3,
                "sections": ["full", "5000-6500"]}
    word_vector_files.derive_onto_english(
        "ja", tmp_path / "wiki.en.align.vec", tmp_path, tmp_path, 0.8,
        vec=tmp_path / "cc.ja.vec", limit=200000, rotation=rotation,
    )
    mapped = word_vector_files.read_vec(tmp_path / "wiki.ja.align.vec")
    for w in words[25:]:  # held out: nearest English word is its own
        v = mapped[f"j{w}"]
        assert np.linalg.norm(v) == pytest.approx(1.0, abs=1e-3)
        unit = {e: u / np.linalg.norm(u) for e, u in english.items()}
        assert max(unit, key=lambda e: float(unit[e] @ v)) == w


def test_rotation_options_name_the_rcsls_settings_and_sections():
    from mlmm.retrieval.config import rotation_options

    paper = {"method": "rcsls", "knn": 4, "lr": 5.0, "iterations": 10,
             "sections": ["full", "5000-6500"], "limit": 200000}
    assert rotation_options(paper) == (
        "--rotation rcsls --rcsls-knn 4 --rcsls-lr 5.0 --rcsls-iterations 10"
        " --rotation-sections full 5000-6500"
    )
    assert rotation_options({**paper, "method": "procrustes", "sections": None}) == (
        "--rotation procrustes"
    )
