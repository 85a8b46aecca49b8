"""Bridge CorrNet pieces: the correlation term, sparse encoding, the loss, the batch plan."""

import numpy as np
import scipy.sparse as sp
import torch

from mlmm.ted.corrnet import BridgeCorrNet, SparseBatch, batches, correlation, encode, train


def test_correlation_matches_hand_computation():
    hx = np.array([[0.1, 0.9], [0.4, 0.2], [0.8, 0.5], [0.3, 0.3]])
    hy = np.array([[0.2, 0.1], [0.5, 0.7], [0.9, 0.4], [0.1, 0.6]])
    expected = 0.0
    for unit in range(2):
        x, y = hx[:, unit], hy[:, unit]
        mx, my = sum(x) / 4, sum(y) / 4
        cov = sum((a - mx) * (b - my) for a, b in zip(x, y, strict=True))
        vx = sum((a - mx) ** 2 for a in x)
        vy = sum((b - my) ** 2 for b in y)
        expected += cov / (vx * vy) ** 0.5
    got = correlation(torch.tensor(hx), torch.tensor(hy), eps=0.0).item()
    assert abs(got - expected) < 1e-12
    same = correlation(torch.tensor(hx), torch.tensor(hx)).item()
    assert abs(same - 2.0) < 1e-6  # a view is perfectly correlated with itself, per unit


def test_sparse_encoder_equals_dense_product():
    torch.manual_seed(0)
    model = BridgeCorrNet({"de": 7, "en": 5}, hidden=3)
    x = sp.csr_matrix(
        np.array([[0, 2, 0, 0, 1, 0, 0], [0, 0, 0, 0, 0, 0, 0], [1, 0, 0, 3, 0, 0, 1]])
    )
    batch = SparseBatch.from_csr(x)
    weight = model.encoders["de"].weight.detach().numpy()  # vocabulary x hidden
    expected = 1 / (1 + np.exp(-(x.toarray() @ weight + model.bias.detach().numpy())))
    np.testing.assert_allclose(model.encode("de", batch).detach().numpy(), expected, rtol=1e-5)


def test_loss_is_reconstructions_minus_lambda_correlation():
    torch.manual_seed(0)
    model = BridgeCorrNet({"de": 6, "en": 4}, hidden=3)
    rng = np.random.default_rng(0)
    xv = SparseBatch.from_csr(sp.csr_matrix((rng.random((5, 6)) > 0.5).astype(np.float32)))
    xp = SparseBatch.from_csr(sp.csr_matrix((rng.random((5, 4)) > 0.5).astype(np.float32)))
    total0, rec0, corr0 = model.loss("de", "en", xv, xp, lam=0.0)
    total2, rec2, corr2 = model.loss("de", "en", xv, xp, lam=2.0)
    assert torch.isclose(total0, rec0) and torch.isclose(rec0, rec2)
    assert torch.isclose(total2, rec2 - 2.0 * corr2)
    # The reconstruction sums three codes (joint, view, pivot) decoded into both views.
    av, ap = model.pre("de", xv), model.pre("en", xp)
    codes = [torch.sigmoid(a + model.bias) for a in (av + ap, av, ap)]
    by_hand = sum(
        model.reconstruction(v, h, x.dense) for h in codes for v, x in (("de", xv), ("en", xp))
    )
    assert torch.isclose(rec0, by_hand / 5)


def test_batches_hold_one_pair_and_cover_every_row_once():
    plan = list(batches({"de": 45, "fr": 21}, 20, np.random.default_rng(0)))
    for view, n in (("de", 45), ("fr", 21)):
        rows = np.concatenate([r for v, r in plan if v == view])
        assert sorted(rows.tolist()) == list(range(n))
    assert min(len(r) for _, r in plan) >= 2  # fr: 20 + 1 -> one batch of 21
    assert len(plan) == 3 + 1


def test_training_correlates_translations():
    rng = np.random.default_rng(0)
    concepts = (rng.random((120, 30)) < 0.15).astype(np.float32)
    de = sp.csr_matrix(concepts[:, rng.permutation(30)])
    en = sp.csr_matrix(concepts)
    model, history = train({"de": (de, en)}, 30, hidden=8, epochs=5, lam=5.0, progress=False)
    assert history[-1]["correlation"] > history[0]["correlation"]
    assert encode(model, "de", de).shape == (120, 8)


def test_reference_reconstruction_follows_the_authors_corrnet_code():
    """apsarath/CorrNet: sigmoid outputs, squared error / 2, weights uniform in
    +-4 sqrt(6 / (fan_in + fan_out)), decoder biases zero."""
    torch.manual_seed(0)
    dims = {"de": 300, "en": 200}
    model = BridgeCorrNet(dims, hidden=50, reconstruction="reference")
    for view, d in dims.items():
        bound = 4 * np.sqrt(6 / (d + 50))
        for weight in (model.encoders[view].weight, model.decoders[view].weight):
            assert weight.abs().max() <= bound and weight.abs().max() > 0.9 * bound
        model.init_decoder_bias(view, sp.csr_matrix(np.ones((2, d), np.float32)))
        assert (model.decoders[view].bias == 0).all()
    codes = torch.rand(3, 50)
    target = (torch.rand(3, 300) > 0.5).float()
    output = torch.sigmoid(codes @ model.decoders["de"].weight.T)
    expected = 0.5 * ((output - target) ** 2).sum()
    assert torch.isclose(model.reconstruction("de", codes, target), expected)
    images = BridgeCorrNet({"img": 4, "en": 3}, hidden=2, dense=["img"], reconstruction="reference")
    features = torch.tensor([[2.0, -1.0, 0.0, 5.0]])
    linear = images.decoders["img"](codes[:1, :2])
    by_formula = 0.5 * ((linear - features) ** 2).sum()  # unbounded features: linear outputs
    assert torch.isclose(images.reconstruction("img", codes[:1, :2], features), by_formula)
    default = BridgeCorrNet(dims, hidden=50)
    assert default.encoders["de"].weight.abs().max() <= np.sqrt(6 / 350)


def test_reference_reconstruction_trains_and_reloads(tmp_path):
    from mlmm.ted.corrnet import load, save

    rng = np.random.default_rng(0)
    x = sp.csr_matrix((rng.random((8, 6)) > 0.5).astype(np.float32))
    p = sp.csr_matrix((rng.random((8, 5)) > 0.5).astype(np.float32))
    model, history = train({"de": (x, p)}, 5, hidden=3, epochs=2, batch_size=4, device="cpu",
                           progress=False, reconstruction="reference")
    assert len(history) == 2 and np.isfinite(history[-1]["loss"])
    save(model, tmp_path / "m.pt")
    again = load(tmp_path / "m.pt")
    assert again.reconstruction_kind == "reference"
    np.testing.assert_array_equal(encode(again, "de", x), encode(model, "de", x))
