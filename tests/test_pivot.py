"""Pivot image-caption retrieval (Rajendran 2016 Table 5) on small generated worlds."""

from __future__ import annotations

import json

import numpy as np
import pytest
import scipy.sparse as sp
import torch
from helpers.features import write_array
from helpers.pivot import PAPER_TABLES, SETTINGS, fake_run, make_world
from PIL import Image

from mlmm.cli import main
from mlmm.errors import InputError
from mlmm.features import BACKBONES, build_trunk, extract
from mlmm.origin import Origin
from mlmm.outcomes import read_outcomes, verified_outcomes
from mlmm.pivot import data as pdata
from mlmm.pivot.evaluate import criterion, recalls, recalls_of_ranks
from mlmm.pivot.experiment import check_request, train_stage
from mlmm.pivot.models import BridgeMAE, chain_scores, nearest, random_scores
from mlmm.records import write_record
from mlmm.results.pivot_table import table5
from mlmm.ted import corrnet


@pytest.fixture(scope="module")
def world(tmp_path_factory):
    return make_world(tmp_path_factory.mktemp("pivot"))


# --- data ------------------------------------------------------------------------------


def test_captions_are_flat_and_image_major(world):
    coco, _, _ = world
    captions = pdata.read_captions(coco, "mic", "fr")
    assert len(captions) == 40 * 5
    second = (coco / "data/task2/tok/mic.lc.norm.tok.2.fr").read_text().splitlines()
    assert captions[5 * 3 + 1] == second[3].split()  # image 3, caption file 2


def test_missing_inputs_are_input_errors(world, tmp_path):
    coco, feats, _ = world
    with pytest.raises(InputError, match=r"features/alexnet_fc6/mic.npy.*no such file"):
        pdata.read_features(tmp_path / "features", "alexnet_fc6", "mic", 40)
    with pytest.raises(InputError, match=r"a 2-d array of 41 rows"):
        pdata.read_features(feats, "alexnet_fc6", "mic", 41)
    short = tmp_path / "coco"
    for path in coco.rglob("*"):
        if path.is_file():
            target = short / path.relative_to(coco)
            target.parent.mkdir(parents=True, exist_ok=True)
            target.write_bytes(path.read_bytes())
    bad = short / "data/task2/tok/mic.lc.norm.tok.4.de"
    bad.write_text("\n".join(bad.read_text().splitlines()[:-1]) + "\n")
    with pytest.raises(InputError, match=r"mic.lc.norm.tok.4.de: expected 40 lines"):
        pdata.read_captions(short, "mic", "de")
    with pytest.raises(InputError, match="image_splits/pivot_train.txt"):
        pdata.read_captions(tmp_path / "nowhere", "pivot_train", "en")


def test_requests_that_do_not_fit_the_model_are_input_errors(world):
    _, _, ted = world
    with pytest.raises(InputError, match="--language"):
        check_request("bridge", None, ted)
    with pytest.raises(InputError, match="--ted-root"):
        check_request("two", "fr", None)
    with pytest.raises(InputError, match="none for direct"):
        check_request("direct", "fr", ted)
    check_request("random", None, None)


def test_z1_features_are_looked_up_in_every_karpathy_split(tmp_path):
    """pivot_split paper: Z1 holds val and test images too, whose rows live in their own arrays."""
    splits = tmp_path / "data/task1/image_splits"
    splits.mkdir(parents=True)
    lists = {"train": ["t0.jpg", "t1.jpg"], "val": ["v0.jpg"], "test": ["s0.jpg", "s1.jpg"]}
    for split, names in lists.items():
        (splits / f"{split}.txt").write_text("\n".join(names) + "\n")
        rows = [[float(ord(name[0])), float(i)] for i, name in enumerate(names)]
        write_array(tmp_path / f"feats/bb/{split}.npy", np.array(rows, dtype=np.float32), names)
    names = ["s1.jpg", "t0.jpg", "v0.jpg"]
    got = pdata.pivot_train_features(tmp_path, tmp_path / "feats", "bb", names)
    np.testing.assert_array_equal(got, [[ord("s"), 1], [ord("t"), 0], [ord("v"), 0]])
    # the Karpathy Z1 (train only) never opens the val/test arrays
    (tmp_path / "feats/bb/val.npy").unlink()
    got = pdata.pivot_train_features(tmp_path, tmp_path / "feats", "bb", ["t1.jpg"])
    np.testing.assert_array_equal(got, [[ord("t"), 1]])
    with pytest.raises(InputError, match="1 missing, e.g. mic.jpg"):
        pdata.pivot_train_features(tmp_path, tmp_path / "feats", "bb", ["mic.jpg"])


def test_chunked_memory_mapped_z1_equals_loading_whole_arrays(world, monkeypatch):
    """The streaming path (memory-mapped arrays, rows gathered and checked ROW_CHUNK at a
    time, the fit rows standardised in place) gives the numbers of the whole-array path."""
    coco, feats, _ = world
    names = pdata.image_list(coco, pdata.TRAIN_SPLIT)
    whole = {s: np.load(feats / f"alexnet_fc6/{s}.npy").astype(np.float32)
             for s in pdata.FEATURE_SPLITS if (feats / f"alexnet_fc6/{s}.npy").is_file()}
    where = {n: (s, i) for s in pdata.FEATURE_SPLITS if s in whole
             for i, n in enumerate(pdata.image_list(coco, s))}  # fmt: skip
    expected = np.stack([whole[where[n][0]][where[n][1]] for n in names])
    big = pdata.load(coco, feats, "alexnet_fc6", None, None, 1, 0.1, 1000, 1, True)
    monkeypatch.setattr(pdata, "ROW_CHUNK", 7)
    np.testing.assert_array_equal(
        pdata.pivot_train_features(coco, feats, "alexnet_fc6", names), expected
    )
    small = pdata.load(coco, feats, "alexnet_fc6", None, None, 1, 0.1, 1000, 1, True)
    for field in ("images", "val_images"):
        np.testing.assert_array_equal(getattr(small.z1, field), getattr(big.z1, field))
    np.testing.assert_array_equal(small.mean, big.mean)
    # the fit rows moved to the front in place are the rows the whole-array path indexes
    fit, val = pdata.held_out(len(names), 0.1, 1000, 1)
    raw = pdata.load(coco, feats, "alexnet_fc6", None, None, 1, 0.1, 1000, 1)
    np.testing.assert_array_equal(raw.z1.images, expected[fit])
    np.testing.assert_array_equal(raw.z1.val_images, expected[val])
    mean, std = pdata.standardiser(expected[fit])
    np.testing.assert_array_equal(big.z1.images, (expected[fit] - mean) / std)


def test_repeated_rows_index_without_copying():
    base = np.arange(12, dtype=np.float32).reshape(4, 3)
    rows = pdata.RepeatedRows(base, np.array([0, 0, 3, 2, 2, 2]))
    assert rows.shape == (6, 3) and len(rows) == 6
    np.testing.assert_array_equal(rows[np.array([1, 2])], base[[0, 3]])
    np.testing.assert_allclose(rows.mean(axis=0), base[[0, 0, 3, 2, 2, 2]].mean(0))


def test_load_splits_and_shapes(world):
    coco, feats, ted = world
    data = pdata.load(coco, feats, "alexnet_fc6", ted, "fr", 1, 0.1, 1000, 1, True)
    assert data.z1.images.shape == (270, 32) and data.z1.val_images.shape == (30, 32)
    assert data.z1.captions.shape == (270 * 5, len(data.words["en"]))
    assert data.z2.foreign.shape[0] == 72 and data.z2.val_foreign.shape[0] == 8
    assert data.mic.images.shape == (40, 32)
    assert data.mic.captions.shape == (200, len(data.words["fr"]))
    np.testing.assert_allclose(data.z1.images.mean(0), 0, atol=1e-4)  # standardised on Z1
    assert "chat3" in data.words["fr"] and "cat3" in data.words["en"]
    direct = pdata.load(coco, feats, "alexnet_fc6", None, None, 1, 0.1, 1000, 1)
    assert direct.language == "en" and set(direct.words) == {"en"}


def test_image_features_stay_raw_unless_standardised(world):
    """Paper and apsarath/CorrNet (`NNUtil.denseloader`) feed the features as they are."""
    coco, feats, _ = world
    raw = pdata.load(coco, feats, "alexnet_fc6", None, None, 1, 0.1, 1000, 1)
    mic = np.load(feats / "alexnet_fc6/mic.npy")
    np.testing.assert_array_equal(raw.mic.images, mic)
    assert raw.mean.tolist() == [0.0] * 32 and raw.std.tolist() == [1.0] * 32
    z = pdata.load(coco, feats, "alexnet_fc6", None, None, 1, 0.1, 1000, 1, True)
    np.testing.assert_allclose(z.mic.images, (mic - z.mean) / z.std, rtol=1e-5, atol=1e-5)
    np.testing.assert_allclose(z.z1.images.std(0), 1, atol=1e-3)


# --- models ----------------------------------------------------------------------------


def toy_pairs(seed=0, n=200, concepts=10, dim=16):
    rng = np.random.default_rng(seed)
    z = (rng.random((n, concepts)) < 0.3).astype(np.float32)
    images = z @ rng.normal(size=(concepts, dim)).astype(np.float32)
    en = sp.csr_matrix(z)
    talks = (rng.random((n, concepts)) < 0.3).astype(np.float32)
    return {"image": (images, en), "fr": (sp.csr_matrix(talks[:, ::-1]), sp.csr_matrix(talks))}


def test_dense_encoder_is_a_linear_map_with_the_shared_bias():
    torch.manual_seed(0)
    model = corrnet.BridgeCorrNet({"image": 5, "en": 4}, hidden=3, dense=["image"])
    x = np.random.default_rng(0).normal(size=(6, 5)).astype(np.float32)
    weight = model.encoders["image"].weight.detach().numpy()  # hidden x dim
    expected = 1 / (1 + np.exp(-(x @ weight.T + model.bias.detach().numpy())))
    np.testing.assert_allclose(corrnet.encode(model, "image", x), expected, rtol=1e-5)
    with pytest.raises(ValueError, match="dense views"):
        corrnet.BridgeCorrNet({"en": 4}, dense=["image"])


def test_dense_and_sparse_bridge_corrnet_trains_and_round_trips(tmp_path):
    pairs = toy_pairs()
    model, history = corrnet.train(
        pairs, 10, hidden=8, epochs=15, learning_rate=0.05, lam=2.0, progress=False
    )
    assert model.dense == ("image",)
    assert history[-1]["loss"] < history[0]["loss"]
    assert history[-1]["correlation"] > history[0]["correlation"]
    codes = corrnet.encode(model, "image", pairs["image"][0])
    assert codes.shape == (200, 8)
    corrnet.save(model, tmp_path / "model.pt")
    again = corrnet.load(tmp_path / "model.pt")
    np.testing.assert_allclose(corrnet.encode(again, "image", pairs["image"][0]), codes)


def test_mae_trains_without_a_correlation_term():
    pairs = toy_pairs(1)
    model, history = corrnet.train(
        pairs,
        10,
        hidden=8,
        epochs=15,
        learning_rate=0.05,
        lam=50.0,
        progress=False,
        model_class=BridgeMAE,
    )
    assert isinstance(model, BridgeMAE)
    assert history[-1]["loss"] < 0.8 * history[0]["loss"]
    assert all(h["loss"] == h["reconstruction"] for h in history)  # lambda plays no part


def test_two_corrnet_chains_through_the_nearest_pool_caption():
    # Queries live in space A with the pool; the pool item's code in space B scores targets.
    queries = np.array([[0.0, 0.1], [5.0, 5.2]])
    pool_a = np.array([[5.0, 5.0], [0.0, 0.0], [9.0, 9.0]])
    pool_b = np.array([[1.0, 0.0], [0.0, 1.0], [3.0, 3.0]])
    targets = np.array([[0.0, 1.0], [1.0, 0.0], [2.0, 2.0]])
    np.testing.assert_array_equal(nearest(queries, pool_a), [1, 0])
    scores = chain_scores(queries, pool_a, pool_b, targets)
    expected = -np.array([[0.0, np.sqrt(2), np.sqrt(5)], [np.sqrt(2), 0.0, np.sqrt(5)]])
    np.testing.assert_allclose(scores, expected)


def test_random_baseline_recall_is_near_k_over_n():
    n, k = 1000, 5
    metrics = recalls(random_scores(n, n * k, seed=3), k)
    for cut in (5, 10, 50):
        assert metrics["t2i"][f"R@{cut}"] == pytest.approx(cut / n, abs=0.01)
        best_of_five = 1 - (1 - cut / (n * k)) ** k
        assert metrics["i2t"][f"R@{cut}"] == pytest.approx(best_of_five, abs=0.025)
    assert criterion(metrics["t2i"]) == pytest.approx(
        sum(metrics["t2i"][f"R@{c}"] for c in (5, 10, 50))
    )


def test_bridge_corrnet_beats_random_through_the_pivot(world, tmp_path):
    coco, feats, ted = world
    bridge = train_stage(
        coco,
        feats,
        "alexnet_fc6",
        ted,
        "fr",
        "bridge",
        2.0,
        SETTINGS,
        tmp_path / "bridge",
        progress=False,
    )
    rand = train_stage(
        coco,
        feats,
        "alexnet_fc6",
        None,
        None,
        "random",
        0.0,
        SETTINGS,
        tmp_path / "random",
        progress=False,
    )
    for direction in ("i2t", "t2i"):
        assert bridge["test"][direction]["R@5"] > rand["test"][direction]["R@5"] + 0.1
    # the MIC test ranks kept beside each run give its recalls exactly (mlmm.outcomes)
    for out, result, key in ((tmp_path / "bridge", bridge, "fr"), (tmp_path / "random", rand, "")):
        kept = read_outcomes(out / "queries.npz")
        assert kept["folds"] == 1 and set(kept["test"]) == {key}
        assert recalls_of_ranks(kept["test"][key]) == result["test"]
        assert kept["provenance"]["config"]["model"] == result["model"]
        assert verified_outcomes(out / "metrics.json", "queries")["test"].keys() == {key}
    saved = json.loads((tmp_path / "bridge/metrics.json").read_text())
    assert saved["provenance"]["config"]["lambda"] == 2.0
    assert set(saved["validation"]) == {"z1", "z2_en_to_x"}
    assert saved["data"]["z2_validation_talks"] == 8


# --- table and CLI ---------------------------------------------------------------------


def test_pivot_split_is_read_from_the_coco_provenance(tmp_path):
    from mlmm.pivot.experiment import coco_pivot_split

    assert coco_pivot_split(tmp_path) == "karpathy"
    (tmp_path / "provenance.json").write_text(
        json.dumps({"provenance": {"config": {"pivot_split": "paper"}}})
    )
    assert coco_pivot_split(tmp_path) == "paper"


def test_table5_chooses_lambda_per_direction_on_validation(tmp_path):
    runs = [
        fake_run(tmp_path / "b1", "bridge", "fr", 1.0, {"i2t": 0.9, "t2i": 0.1}, 0.10),
        fake_run(tmp_path / "b10", "bridge", "fr", 10.0, {"i2t": 0.2, "t2i": 0.5}, 0.20),
        fake_run(tmp_path / "d1", "direct", None, 1.0, {"i2t": 0.3, "t2i": 0.3}, 0.30),
        fake_run(tmp_path / "r", "random", None, 0.0, None, 0.0),
    ]
    paper = PAPER_TABLES if PAPER_TABLES.is_dir() else None
    frame = table5(runs, paper, tmp_path / "out/rajendran2016_table5")
    cell = frame.set_index(["system", "language", "direction", "metric"])
    assert cell.loc[("Bridge CorrNet", "fr", "i2t", "R@5"), "ours"] == pytest.approx(0.105)
    assert cell.loc[("Bridge CorrNet", "fr", "t2i", "R@5"), "ours"] == pytest.approx(0.205)
    assert cell.loc[("En-Image CorrNet", "en", "t2i", "R@50"), "ours"] == pytest.approx(0.35)
    assert cell.loc[("Random", "", "i2t", "R@10"), "ours"] == pytest.approx(0.01)
    markdown = (tmp_path / "out/rajendran2016_table5.md").read_text()
    assert "CorrNet + MT: the paper translates" in markdown and "AlexNet" in markdown
    assert "Karpathy train + restval minus MIC" in markdown  # runs without pivot_split
    assert "Bridge CorrNet fr i2t: 1; Bridge CorrNet fr t2i: 10" in markdown
    assert "Features used as extracted" in markdown  # no standardise_images recorded: raw
    for suffix in (".csv", ".tex"):
        assert (tmp_path / f"out/rajendran2016_table5{suffix}").is_file()
    if paper is None:
        pytest.skip("no paper tables here: the paper column is not checked")
    assert cell.loc[("Bridge CorrNet", "fr", "i2t", "R@5"), "paper"] == pytest.approx(0.072)
    assert cell.loc[("Random", "", "t2i", "R@50"), "paper"] == pytest.approx(0.050)
    mt = cell.loc[("CorrNet + MT (NMT; the paper used Moses)", "de", "i2t", "R@50")]
    assert mt["paper"] == pytest.approx(0.420) and np.isnan(mt["ours"])


def test_table5_without_paper_tables_and_bad_runs(tmp_path):
    from mlmm.fingerprint import record_directory

    run = fake_run(tmp_path / "d", "direct", None, 1.0, {"i2t": 0.3, "t2i": 0.3}, 0.3)
    frame = table5([run], tmp_path / "absent", tmp_path / "t5")
    assert frame["paper"].isna().all()
    assert "paper column is empty" in (tmp_path / "t5.md").read_text()
    with pytest.raises(InputError, match="no such file"):
        table5([tmp_path / "missing.json"], None, tmp_path / "t5")
    (tmp_path / "bad.json").write_text(json.dumps({"model": "direct"}))
    with pytest.raises(InputError, match=r"bad.json: expected its record .* rerun pivot-train"):
        table5([tmp_path / "bad.json"], None, tmp_path / "t5")  # made by hand: no record
    (tmp_path / "bad").mkdir()
    (tmp_path / "bad/metrics.json").write_text(json.dumps({"model": "direct"}))
    record_directory(tmp_path / "bad", "metrics.json")  # recorded, but not a pivot-train run
    with pytest.raises(InputError, match="key 'language': expected a metrics.json of mlmm pivot"):
        table5([tmp_path / "bad"], None, tmp_path / "t5")


def test_cli_trains_two_corrnet_direct_and_random_then_the_table(world, tmp_path, capsys):
    coco, feats, ted = world
    record = write_record(tmp_path / "train.json", {"hidden": 16, "epochs": 3, "min_count": 1})
    common = ["--coco-root", str(coco), "--features", str(feats), "--config", str(record)]
    jobs = {
        "two": ["--model", "two", "--language", "de", "--ted-root", str(ted), "--lambda", "1"],
        "direct": ["--model", "direct", "--lambda", "1"],
        "random": ["--model", "random"],
    }
    for name, args in jobs.items():
        assert main(["pivot-train", *common, *args, "--out", str(tmp_path / name)]) == 0
    two = json.loads((tmp_path / "two/metrics.json").read_text())
    assert set(two["history"]) == {"image_en", "en_de"} and len(two["history"]["en_de"]) == 3
    assert set(two["test"]) == {"i2t", "t2i"} and "R@50" in two["test"]["t2i"]
    runs = [str(tmp_path / name) for name in jobs]
    out = tmp_path / "tables/rajendran2016_table5"
    assert main(["pivot-table", "--runs", *runs, "--out", str(out)]) == 0
    assert out.with_suffix(".md").is_file()
    code = main(
        [
            "pivot-train",
            *common[2:],
            "--coco-root",
            str(tmp_path / "none"),
            "--features",
            str(feats),
            "--model",
            "direct",
            "--out",
            str(tmp_path / "x"),
        ]
    )
    assert code == 2
    assert "pivot_train.txt: expected an existing file" in capsys.readouterr().err
    assert not (tmp_path / "x/metrics.json").exists()


# --- the image backbone ----------------------------------------------------------------


def test_alexnet_fc6_backbone_gives_rectified_4096_d_rows(tmp_path):
    trunk, label = build_trunk(BACKBONES["alexnet_fc6"], None)
    assert label == "random init" and len(trunk.classifier) == 3
    (tmp_path / "images").mkdir()
    names = ["a.jpg", "b.png"]
    Image.new("RGB", (300, 240), (200, 30, 30)).save(tmp_path / "images" / names[0])
    Image.effect_noise((260, 260), 50).convert("RGB").save(tmp_path / "images" / names[1])
    (tmp_path / "list.txt").write_text("\n".join(names) + "\n")
    sidecar = extract(
        tmp_path / "images",
        tmp_path / "list.txt",
        tmp_path / "f/alexnet_fc6/x.npy",
        "alexnet_fc6",
        weights=None,
        workers=0,
        progress=False,
    )
    features = np.load(tmp_path / "f/alexnet_fc6/x.npy")
    assert features.shape == (2, 4096) and sidecar["dim"] == 4096
    assert (features >= 0).all() and (features > 0).any()  # after fc6's ReLU
    assert not np.allclose(features[0], features[1])


def test_images_without_features_leave_training_but_not_the_test(world, tmp_path):
    coco, feats, ted = world
    for split in ("train", "mic"):
        array = np.load(feats / "alexnet_fc6" / f"{split}.npy")
        array[7 + 3 if split == "train" else 7] = np.nan  # train: 3 rows before pivot_train's
        write_array(tmp_path / "f/alexnet_fc6" / f"{split}.npy", array)
        if split == "train":
            write_array(tmp_path / "f/alexnet_fc6/mic.npy", np.load(feats / "alexnet_fc6/mic.npy"))
            data = pdata.load(coco, tmp_path / "f", "alexnet_fc6", None, None, 1, 0.1, 1000, 1)
            assert data.z1.dropped == [7] and len(data.z1.images) + len(data.z1.val_images) == 299
            assert np.isfinite(data.z1.images).all()
    with pytest.raises(InputError, match=r"mic.npy: expected features for every test image"):
        pdata.load(coco, tmp_path / "f", "alexnet_fc6", None, None, 1, 0.1, 1000, 1)


# --- Tables 6 and 7 (qualitative top-5) ------------------------------------------------


def test_top5_ranks_by_score_with_ties_to_the_lower_index():
    from mlmm.results.pivot_examples import top_k

    # hand ranking of the scores -0.5, -0.1, -0.9, -0.1, -0.3, -0.2, -1.0: indices 1 and 3 tie
    scores = np.array([-0.5, -0.1, -0.9, -0.1, -0.3, -0.2, -1.0])
    assert top_k(scores).tolist() == [1, 3, 5, 4, 0]
    assert top_k(scores, 2).tolist() == [1, 3]


def test_ranking_scores_are_minus_euclidean_distances_of_the_codes(tmp_path):
    from mlmm.io import write_npz
    from mlmm.results.pivot_examples import ranking_scores

    images = np.array([[0.0, 0.0], [3.0, 4.0]], dtype=np.float32)
    captions = np.array([[3.0, 0.0], [0.0, 0.0], [3.0, 4.0]], dtype=np.float32)
    write_npz(tmp_path / "codes.npz", {"image_codes": images, "caption_codes": captions})
    i2t, t2i = ranking_scores(tmp_path / "codes.npz")
    np.testing.assert_allclose(i2t, [[-3, 0, -5], [-4, -5, 0]])  # |(0,0)-(3,0)| = 3, ...
    assert t2i is i2t
    write_npz(tmp_path / "two.npz", {"i2t_scores": images, "t2i_scores": images + 1})
    i2t, t2i = ranking_scores(tmp_path / "two.npz")
    np.testing.assert_array_equal(t2i - i2t, 1)
    with pytest.raises(InputError, match="no such file"):
        ranking_scores(tmp_path / "absent.npz")


def test_queries_take_the_found_paper_ones_then_a_seeded_draw():
    from mlmm.results.pivot_examples import choose_queries, find_caption

    captions = [["ein", "hund", "."], ["zwei", "pferde", "grasen", "."], ["ein", "hund", "."]]
    assert find_caption(captions, "Zwei Pferde grasen.", "de") == 1
    assert find_caption(captions, "Ein Hund.", "de") == 0  # the first of equal captions
    assert find_caption(captions, "Eine Katze.", "de") is None
    picked = choose_queries(10, [7, None, 7], 3, np.random.default_rng(5))
    assert picked[0] == (7, "paper") and [c for _, c in picked[1:]] == ["seeded", "seeded"]
    assert len({item for item, _ in picked}) == 3
    again = choose_queries(10, [7, None, 7], 3, np.random.default_rng(5))
    assert again == picked  # the same seed, the same queries
    assert choose_queries(10, [1, 2, 3], 2, np.random.default_rng(0)) == [
        (1, "paper"),
        (2, "paper"),
    ]


def test_table6_and_7_rows_hold_ids_ranks_and_relevance():
    from mlmm.results.pivot_examples import COLUMNS, rows_for

    images = ["a.jpg", "b.jpg"]
    captions = [[f"w{c}"] for c in range(10)]  # captions 0-4: image a, 5-9: image b
    scores = -np.array([[5, 4, 3, 2, 1, 0.5, 6, 7, 8, 9], [0, 1, 2, 3, 4, 5, 2, 7, 8, 9.0]])
    rows = rows_for(6, "de", scores, [(0, "seeded")], images, captions, 10.0)
    assert [r["caption"] for r in rows] == [5, 4, 3, 2, 1]  # distances 0.5, 1, 2, 3, 4
    assert [r["relevant"] for r in rows] == [False, True, True, True, True]
    assert [r["rank"] for r in rows] == [1, 2, 3, 4, 5] and rows[0]["text"] == "w5"
    assert rows[0]["distance"] == pytest.approx(0.5) and rows[0]["query_image"] == "a.jpg"
    assert all(set(r) == set(COLUMNS) for r in rows)
    rows = rows_for(7, "fr", scores, [(6, "paper")], images, captions, 1.0)
    # caption 6 (image b) lies 6 from image a and 2 from image b; two images: two ranks
    assert [r["image"] for r in rows] == ["b.jpg", "a.jpg"]
    assert [r["distance"] for r in rows] == pytest.approx([2.0, 6.0])
    assert [r["relevant"] for r in rows] == [True, False] and rows[0]["caption"] is None
    assert rows[0]["query_text"] == "w6" and rows[0]["query_image"] == "b.jpg"


def test_cli_writes_tables6_7_figures_and_csv_from_bridge_runs(world, tmp_path, capsys):
    import pandas as pd

    from mlmm.results.pivot_examples import COLUMNS

    coco, feats, ted = world
    record = write_record(tmp_path / "train.json", {"hidden": 8, "epochs": 2, "min_count": 1})
    runs = []
    for language in ("de", "fr"):
        for lam in ("1", "10"):
            out = tmp_path / f"bridge_{language}_{lam}"
            args = ["pivot-train", "--coco-root", str(coco), "--features", str(feats)]
            args += ["--model", "bridge", "--language", language, "--ted-root", str(ted)]
            args += ["--lambda", lam, "--config", str(record)]
            assert main([*args, "--out", str(out)]) == 0
            assert (out / "test_ranking.npz").is_file()
            runs.append(str(out / "metrics.json"))
    images = tmp_path / "images"
    images.mkdir()
    names = (coco / "data/task1/image_splits/mic.txt").read_text().split()
    for i, name in enumerate(names):
        Image.new("RGB", (40, 30), (6 * i, 100, 200)).save(images / name)
    mic_de = (coco / "data/task2/tok/mic.lc.norm.tok.3.de").read_text().splitlines()
    paper = {"table7": {"de": [mic_de[4], "nicht in MIC"]}, "table6": {"fr": ["absent"]}}
    common = ["pivot-examples", "--runs", *runs, "--coco-root", str(coco)]
    record = write_record(tmp_path / "examples.json", {"examples": {"paper_queries": paper}})
    common += ["--images", str(images), "--config", str(record)]
    code = main([*common, "--figures", str(tmp_path / "fig"), "--tables", str(tmp_path / "tab")])
    assert code == 0
    for table in (6, 7):
        for suffix in (".png", ".pdf"):
            assert (tmp_path / f"fig/rajendran2016_table{table}{suffix}").is_file()
    six = pd.read_csv(tmp_path / "tab/rajendran2016_table6.csv")
    seven = pd.read_csv(tmp_path / "tab/rajendran2016_table7.csv")
    origin = list(Origin().columns())  # what produced them (mlmm.origin)
    assert list(six.columns) == [*COLUMNS, *origin] == list(seven.columns)
    assert len(six) == len(seven) == 2 * 2 * 5  # 2 languages x 2 queries x top-5
    assert (
        six.groupby(["language", "query_number"])["rank"]
        .apply(list)
        .map(lambda ranks: ranks == [1, 2, 3, 4, 5])
        .all()
    )
    first = seven[(seven.language == "de") & (seven.query_number == 1)]
    # the paper's German query found: MIC line 5 of file 3 = caption 5*4 + 2 (image 4)
    assert set(first.query_choice) == {"paper"} and set(first.query_caption) == {22}
    assert set(first.query_image) == {names[4]}
    assert set(seven.query_choice[seven.language == "fr"]) == {"seeded"}
    assert (six.caption // 5).map(lambda i: names[i]).tolist() == six.image.tolist()
    assert "Table 7" in capsys.readouterr().out
    common[common.index("--images") + 1] = str(tmp_path / "none")
    bad = main([*common, "--figures", str(tmp_path / "f"), "--tables", str(tmp_path / "t")])
    assert bad == 2 and "expected a MIC image" in capsys.readouterr().err
    assert not (tmp_path / "f").exists() and not (tmp_path / "t").exists()  # nothing written


def test_table7_figure_with_fewer_images_than_the_top_5(tmp_path):
    """A test set of 3 images gives each caption 3 ranked images: the figure leaves the other
    columns empty instead of failing (the paper miniature's MIC set is that small)."""
    import pandas as pd

    from mlmm.results.pivot_examples import COLUMNS, plot

    images = tmp_path / "images"
    images.mkdir()
    for i in range(3):
        Image.new("RGB", (40, 30), (60 * i, 100, 200)).save(images / f"{i}.jpg")
    rows = [
        {"table": 7, "language": "de", "query_number": 1, "query_choice": "drawn",
         "query_image": "0.jpg", "query_caption": 0, "query_text": "ein hund", "lambda": 1.0,
         "rank": rank, "image": f"{i}.jpg", "caption": -1, "text": "", "distance": 0.1 * rank,
         "relevant": i == 0}
        for rank, i in enumerate((2, 0, 1), start=1)
    ]  # fmt: skip
    paths = plot(pd.DataFrame(rows, columns=COLUMNS), 7, images, tmp_path / "fig")
    assert sorted(p.suffix for p in paths) == [".pdf", ".png"]
    assert all(p.stat().st_size > 0 for p in paths)
