"""End-to-end tests of the retrieval trainer on a tiny generated Multi30K-layout world.

Images have three latent attributes (colour, object, place); features are a noisy random
projection of their one-hot codes, captions name the attributes in four languages (task1) and
with five phrasings in en/de (task2), so a working trainer must beat chance quickly.
"""

from __future__ import annotations

import dataclasses
import json
import math
import os
import signal
import subprocess
import time
from pathlib import Path

import numpy as np
import pytest
import torch
from helpers.paper_config import paper_variant
from helpers.retrieval import (
    FRAMES,
    WORDS,
    make_world,
    save_features,
    section,
    trainer_argv,
    write_lines,
)

from mlmm.demo import word_vectors as demo_vectors
from mlmm.errors import InputError
from mlmm.outcomes import verified_outcomes
from mlmm.retrieval import word_vector_files
from mlmm.retrieval.api import load_trained
from mlmm.retrieval.config import resolve_variant
from mlmm.retrieval.train import Paths, train_variant
from mlmm.retrieval.word_embeddings import Alignment

# Calixto's model on en + de: one GRU per language, (image, sentences) tuples, sum of hinges
CALIXTO_EN_DE = {
    "train_data": [{"portion": "comparable", "languages": ["en", "de"]}],
    "encoder": "per-language",
    "batching": "joint",
    "loss": "sum",
}

@pytest.fixture(scope="module")
def world(tmp_path_factory) -> Paths:
    root = tmp_path_factory.mktemp("toy")
    paths = make_world(root)
    demo_vectors.derive_demo(paths.data_root, paths.muse, ["en", "de"], 8, 0.8, paths.vectors)
    return paths



def test_bilingual_c2c_beats_chance_and_reloads(world, tmp_path):
    variant = {"train_data": [{"portion": "comparable", "languages": ["en", "de"]}], "c2c": True}
    record = resolve_variant(section(bi=variant), "bi")
    metrics = train_variant(record, 1, world, tmp_path, progress=False, threads=1)
    # chance R@10 with 40 test images is 25% for t2i
    for lang in ("en", "de"):
        assert metrics["test"][lang]["t2i"]["R@10"] > 50
        assert metrics["test"][lang]["i2t"]["R@10"] > 50
    assert set(metrics["c2c"]) == {"en-de", "de-en"}
    assert "2014" in metrics["sts"]
    saved = json.loads((tmp_path / "metrics.json").read_text())
    assert saved["best_step"] == metrics["best_step"] and saved["history"]
    # its queries.npz is its own and gives its numbers back (mlmm.outcomes' contract)
    assert saved["outcomes"]["file"] == "queries.npz"
    assert verified_outcomes(tmp_path / "metrics.json", "queries") is not None
    assert (tmp_path / "history.csv").read_text().startswith("step,epoch,loss")
    assert not (tmp_path / "checkpoint.pt").exists()
    model = load_trained(tmp_path)
    feats = np.load(world.features_root / "toy/test_2016_flickr.npy")[:3]
    images = model.embed_images(feats)
    sents = model.embed_sentences("de", [["rot", "katze", "im", "park"]] * 3)
    assert images.shape == sents.shape == (3, 32)
    assert model.similarity(images, sents).shape == (3,)


def test_training_is_deterministic(world, tmp_path):
    record = resolve_variant(section(mono={"epochs": 1}), "mono")
    a = train_variant(record, 3, world, tmp_path / "a", progress=False, threads=1)
    b = train_variant(record, 3, world, tmp_path / "b", progress=False, threads=1)
    assert a["test"] == b["test"]
    sa = torch.load(tmp_path / "a/model.pt", weights_only=False)["state"]
    sb = torch.load(tmp_path / "b/model.pt", weights_only=False)["state"]
    assert all(torch.equal(sa[k], sb[k]) for k in sa)


@pytest.mark.parametrize("embeddings", ["fme", "ame"])
def test_aligned_embeddings_log_alignment(world, tmp_path, embeddings):
    variant = {
        "train_data": [{"portion": "comparable", "languages": ["en", "de"]}],
        "batching": "joint",
        "word_embeddings": embeddings,
        "embed_dim": 8,
        "similarity": "order",
        "margin": 0.05,
        "alignment": {"every": 5, "train_fraction": 0.5},
    }
    record = resolve_variant(section(v=variant), "v")
    metrics = train_variant(record, 1, world, tmp_path, progress=False, threads=1)
    assert 0 <= metrics["alignment"]["en-de"] <= 100
    assert all(row["alignment"] is not None for row in metrics["history"])
    if embeddings == "fme":  # frozen vectors: the ratio cannot move
        assert len({row["alignment"] for row in metrics["history"]}) == 1


def test_the_papers_rcsls_rate_halves_on_a_rising_loss_in_training(world, tmp_path, monkeypatch):
    """AME's RCSLS schedule through the trainer, with config/paper.yaml's ``ame_ame_sym`` record
    as it stands: pooled batching, AME word embeddings and its alignment block unchanged (two
    mappings, W' of the German rows updated before W of the English ones, one rate for both
    starting at ``int(lr)`` and halved by Python 2.7's floor division whenever a mapping's loss
    rises above its last loss that did not; MUSE's full + 5000-6500 sections to train on,
    0-5000 for the ratio). The paper miniature cannot reach a rise at T = 500 (its
    NOT_REACHED). Each RCSLS update's mappings are read before and after it: each must have
    moved by the rate the paper's rule gives it at that point of the update, so a rise of the
    de-en loss already halves the en-de step, and an en-de rise halves only the next update's.

    Changed, and none of it protocol: sizes (``embed_dim`` 8, the toy vectors' width;
    ``hidden`` / ``joint`` 32; 2 epochs of the toy world's 300 images, before the optimiser's
    decay epoch), the update interval (``alignment.every`` 1, RCSLS every update instead of
    every 500) and the data (the toy features, ``backbone: toy``; the toy world's 8-d vectors;
    its 16-pair en-de dictionary, both ways, under each of the paper's MUSE section names). On
    so small a dictionary the paper's rate 2 overshoots within a few dozen updates: the loss
    first rises at the 12th update (the de-en loss, so that update's en-de step is already
    halved) and again at the 18th, so the run's 48 updates see 2 -> 1 -> 0.
    ``alignment.sections`` names files, not a number of pairs, so it stays, as do
    ``train_fraction`` and ``max_pairs`` (unused with sections, and none)."""
    paper = paper_variant("ame_ame_sym")
    settings = paper["alignment"]
    muse = tmp_path / "muse"
    pairs = word_vector_files.read_lexicon(world.muse / "en-de.txt")
    for name in ("full", "5000-6500", "0-5000"):  # the toy world's one dictionary, every section
        for reverse in (False, True):
            lines = [f"{t} {e}" if reverse else f"{e} {t}" for e, t in pairs]
            write_lines(word_vector_files.lexicon_file(muse, "de", name, reverse), lines)
    variant = {
        **{key: value for key, value in paper.items() if key != "name"},
        **{"embed_dim": 8, "hidden": 32, "joint": 32, "epochs": 2},  # sizes
        "backbone": "toy",  # the toy world's features
        "alignment": {**settings, "every": 1},
    }
    record = resolve_variant({"variants": {"ame_ame_sym": variant}}, "ame_ame_sym")
    updates = []
    step = Alignment.step

    def spy(self):
        """Alignment.step, recording the rate before and after, each mapping's loss, and each
        mapping before, its gradient and after."""
        losses = [float(loss) for loss in torch.stack(self._losses).detach()]
        before = [(d.mapping.detach().clone(), d.mapping.grad.clone()) for d in self.directions]
        rate = self.lr
        step(self)
        updates.append(
            {
                "rate": rate,
                "after": self.lr,
                "losses": {d.pair: loss for d, loss in zip(self.directions, losses, strict=True)},
                "moves": {
                    d.pair: (*old, d.mapping.detach().clone())
                    for d, old in zip(self.directions, before, strict=True)
                },
            }
        )

    monkeypatch.setattr(Alignment, "step", spy)
    paths = dataclasses.replace(world, muse=muse)
    metrics = train_variant(record, 1, paths, tmp_path / "run", progress=False, threads=1)

    chain = [int(settings["lr"])]  # AME-CMR's int lr_translator and its Python 2 halvings
    while chain[-1]:
        chain.append(chain[-1] // 2)

    def moved_by(mapping, grad, after):
        """The rates of ``chain`` whose SGD step (then W made orthogonal) gives ``after``."""
        found = set()
        for rate in chain:
            moved = mapping - rate * grad
            if settings["orthogonalise"]:
                u, _, vt = torch.linalg.svd(moved.double())
                moved = (u @ vt).float()
            if torch.allclose(moved, after, atol=1e-5):
                found.add(rate)
        return found

    mappings = {tuple(sorted(u["moves"])) for u in updates}
    assert mappings == {("de-en", "en-de")}, mappings  # two, on every update
    rate, previous, split = chain[0], {}, []
    for k, u in enumerate(updates):
        assert u["rate"] == rate, (k, u["rate"], rate)
        for pair in ("de-en", "en-de"):  # R_deen, then R_ende, with the one rate as it stands
            assert moved_by(*u["moves"][pair]) == {rate}, (k, pair, rate)
            split += [k] if pair == "en-de" and rate != u["rate"] else []
            if pair in previous and u["losses"][pair] > previous[pair]:
                rate //= 2
            else:
                previous[pair] = u["losses"][pair]
        assert u["after"] == rate, (k, u["after"], rate)
    assert split, "no de-en rise halved an en-de step: the order went unobserved"
    used = [u["rate"] for u in updates]
    # halved on rises down to 0 (the mapping then frozen), never raised
    assert used == sorted(used, reverse=True) and set(used) == set(chain), used
    # the history's alignment_lr: the rate as it stands at each validation point
    history = metrics["history"]
    assert [row["alignment_lr"] for row in history] == [
        updates[row["step"] - 1]["after"] for row in history
    ]


def test_selection_by_mean_rank_keeps_the_lowest_sum_of_mean_ranks_in_training(world, tmp_path):
    """Calixto's criterion (config/paper.yaml's MLMME select_by) through the trainer: the run
    keeps the validation point with the lowest sum of mean ranks over en and de, here neither
    the last point nor the one the recall sum would keep, and its saved model scores what that
    point scored. The paper miniature's MLMME runs choose their last point (its NOT_REACHED)."""
    assert paper_variant("calixto_mlmme_beta1")["select_by"] == "mean_rank"
    variant = {
        **CALIXTO_EN_DE,
        "select_by": "mean_rank",
        "select_language": ["en", "de"],
        "optimizer": {"lr": 0.02},
        "epochs": 4,
        "early_stopping": {"every": 5, "patience": None},
        "test": {"split": "val"},  # the validation images: the selected point's ranks again
    }
    record = resolve_variant(section(c=variant), "c")
    metrics = train_variant(record, 1, world, tmp_path, progress=False, threads=1)
    history = metrics["history"]
    by_mean_rank = min(history, key=lambda row: (row["mean_rank"], -row["rsum"]))
    by_rsum = max(history, key=lambda row: row["rsum"])
    assert metrics["best_step"] == by_mean_rank["step"] < history[-1]["step"]
    assert by_rsum["step"] != by_mean_rank["step"]
    scored = sum(metrics["test"][lang][d]["meanr"] for lang in ("en", "de") for d in ("i2t", "t2i"))
    assert scored == pytest.approx(by_mean_rank["mean_rank"])


def test_calixto_joint_beta(world, tmp_path):
    variant = {
        **CALIXTO_EN_DE,
        "beta": 0.5,
        "validation": {"split": "val", "images": [0, 20]},
        "test": {"split": "val", "images": [20, None]},
    }
    record = resolve_variant(section(c=variant), "c")
    metrics = train_variant(record, 1, world, tmp_path, progress=False, threads=1)
    assert metrics["test"]["en"]["t2i"]["R@10"] > 50  # chance: 10 of 20 images


@pytest.mark.parametrize("reading", ["calixto_paper", "calixto_code"])
def test_calixto_readings_train_and_reload(world, tmp_path, reading):
    """The paper's and the authors' code's initialisation, dropout and vocabulary train end to
    end; the saved model embeds as the trained one (no dropout at evaluation)."""
    variant = {
        **CALIXTO_EN_DE,
        "sentence_projection": "shared",
        "image_dropout": "projection",
        "dropout": 0.2,
        "init": reading,
        "vocabulary": "train+val",
        "validation": {"split": "val", "images": [0, 20]},
        "test": {"split": "val", "images": [20, None]},
    }
    if reading == "calixto_code":
        variant.update(
            dropout_position="after_norm",
            embedding_dropout="variational",
            word_dropout=0.2,
            recurrent_dropout=0.2,
        )
    record = resolve_variant(section(c=variant), "c")
    metrics = train_variant(record, 1, world, tmp_path, progress=False, threads=1)
    assert metrics["test"]["en"]["t2i"]["R@10"] > 50  # chance: 10 of 20 images
    model = load_trained(tmp_path)
    assert model.record["init"] == reading
    sentence = [["a", "b"], ["c"]]
    torch.testing.assert_close(
        model.embed_sentences("en", sentence), model.embed_sentences("en", sentence)
    )


@pytest.mark.slow
def test_resume_after_kill(world, tmp_path):
    import yaml

    variant = {
        "train_data": [{"portion": "translation", "languages": ["en", "de", "fr", "cs"]}],
        "c2c": True,
        "epochs": 12,
        "checkpoint_every": 5,
    }
    config = tmp_path / "config.yaml"
    config.write_text(yaml.safe_dump({"retrieval": section(four=variant)}))
    subprocess.run(trainer_argv(config, tmp_path / "full", world), check=True)
    proc = subprocess.Popen(trainer_argv(config, tmp_path / "killed", world))
    checkpoint = tmp_path / "killed/checkpoint.pt"
    deadline = time.time() + 120
    while not checkpoint.exists() and proc.poll() is None and time.time() < deadline:
        time.sleep(0.05)
    if proc.poll() is not None:
        pytest.fail("the run ended before its first checkpoint; make it longer")
    os.kill(proc.pid, signal.SIGKILL)
    proc.wait()
    assert not (tmp_path / "killed/metrics.json").exists()
    killed_at = torch.load(checkpoint, weights_only=False)["step"]
    subprocess.run(trainer_argv(config, tmp_path / "killed", world), check=True)
    full = json.loads((tmp_path / "full/metrics.json").read_text())
    resumed = json.loads((tmp_path / "killed/metrics.json").read_text())
    assert resumed["timings"]["resumed"] and killed_at < resumed["steps"]
    assert full["test"] == resumed["test"] and full["best_step"] == resumed["best_step"]
    # the same history, wall-clock seconds aside (the training loss included)
    drop = lambda rows: [{k: v for k, v in r.items() if k != "seconds"} for r in rows]  # noqa: E731
    assert drop(full["history"]) == drop(resumed["history"])
    a = torch.load(tmp_path / "full/model.pt", weights_only=False)["state"]
    b = torch.load(tmp_path / "killed/model.pt", weights_only=False)["state"]
    assert all(torch.equal(a[k], b[k]) for k in a)


JA_WORDS = (
    ["赤い", "青い", "緑", "白い", "黒い", "ピンク"],
    ["猫", "犬", "車", "ボール", "男", "船"],
    ["公園", "通り", "浜辺", "部屋"],
)
JA_FRAMES = ["{p} に {c} {o} が いる", "{c} {o} が {p} に いる", "{p} の {c} {o}"]
COCO_SIZES = {"train": 300, "val": 40, "test": 40}


def make_coco_world(root: Path, seed: int = 0) -> Paths:
    """The prepared MS-COCO layout (mlmm.data.coco): splits train/val/test, en and ja captions
    as task2 files only, MUSE en-ja."""
    rng = np.random.default_rng(seed)
    projection = rng.normal(size=(16, 24))
    data = root / "data"
    words = {"en": WORDS["en"], "ja": JA_WORDS}
    frames = {"en": FRAMES["en"], "ja": JA_FRAMES}
    for split, n in COCO_SIZES.items():
        attrs = rng.integers([0, 0, 0], [6, 6, 4], size=(n, 3))
        names = [f"{split}2014/COCO_{split}_{i:012d}.jpg" for i in range(n)]
        write_lines(data / "task1/image_splits" / f"{split}.txt", names)
        write_lines(data / "task2/image_splits" / f"{split}_images.txt", names)
        save_features(root, split, attrs, projection, rng)
        for lang, (cs, os_, ps) in words.items():
            for k in range(5):
                lines = [
                    frames[lang][(i + k) % len(frames[lang])].format(c=cs[a], o=os_[b], p=ps[c])
                    for i, (a, b, c) in enumerate(attrs)
                ]
                write_lines(data / "task2/tok" / f"{split}.lc.norm.tok.{k + 1}.{lang}", lines)
    pairs = [f"{e} {t}" for g in range(3) for e, t in zip(WORDS["en"][g], JA_WORDS[g], strict=True)]
    write_lines(root / "muse/en-ja.txt", pairs)
    return Paths(root, root / "features", root / "vectors", root / "muse", None)


def test_coco_layout_japanese_five_folds_and_rotated_vectors(world, tmp_path):
    coco = make_coco_world(tmp_path / "coco")
    # Japanese vectors rotated onto the English ones of another data set, as the workflow does
    demo_vectors.derive_demo_onto_english(
        "ja", world.vectors / "wiki.en.align.vec", coco.muse, coco.vectors, 0.8, coco.data_root
    )
    (coco.vectors / "wiki.en.align.vec").write_bytes(
        (world.vectors / "wiki.en.align.vec").read_bytes()
    )
    ja = word_vector_files.read_vec(coco.vectors / "wiki.ja.align.vec")
    assert "猫" in ja and len(ja["猫"]) == 8
    variant = {
        "dataset": "coco",
        "train_data": [{"portion": "comparable", "languages": ["en", "ja"]}],
        "batching": "joint",
        "word_embeddings": "ame",
        "embed_dim": 8,
        "alignment": {"every": 5, "train_fraction": 0.5},
        "validation": {"split": "val"},
        "test": {"split": "test", "folds": 5},
        "sts": False,
    }
    record = resolve_variant(section(v=variant), "v")
    metrics = train_variant(record, 1, coco, tmp_path / "run", progress=False, threads=1)
    assert set(metrics["test"]) == set(metrics["test_full"]) == {"en", "ja"}
    assert 0 <= metrics["alignment"]["en-ja"] <= 100
    # 5 folds of 8 images: fold recalls beat those on all 40 images (fewer distractors)
    for lang in ("en", "ja"):
        assert metrics["test"][lang]["t2i"]["R@1"] >= metrics["test_full"][lang]["t2i"]["R@1"]
        assert metrics["test_full"][lang]["t2i"]["R@10"] > 25  # chance: 10 of 40
    bad = resolve_variant(section(v={**variant, "test": {"split": "test", "folds": 3}}), "v")
    with pytest.raises(InputError, match="divisible by test.folds=3"):
        train_variant(bad, 1, coco, tmp_path / "bad", progress=False, threads=1)


def test_training_log_has_a_start_line_timestamped_validations_and_a_bounded_size(
    world, tmp_path
):
    """The log a Snakemake job writes (stderr to a file, not a terminal): what the run is about
    to do, one timestamped line per validation, and progress bars of the epoch's steps drawn a
    few times per epoch, not ten times a second."""
    import re

    import yaml

    variant = {"train_data": [{"portion": "translation", "languages": ["en", "de"]}]}
    config = tmp_path / "config.yaml"
    config.write_text(yaml.safe_dump({"retrieval": section(four=variant)}))
    argv = [a for a in trainer_argv(config, tmp_path / "run", world) if a != "--no-progress"]
    log_path = tmp_path / "train.log"
    with open(log_path, "w") as log_file:
        subprocess.run(argv, stdout=subprocess.DEVNULL, stderr=log_file, check=True)
    text = log_path.read_text(encoding="utf-8")
    stamp = r"\d{4}-\d\d-\d\d \d\d:\d\d:\d\d mlmm train-retrieval INFO: "
    start = re.search(
        stamp + r"four seed 2: device cpu, 1 CPU threads; (\d+) training examples, 300 images"
        r" \(24-d features\)",
        text,
    )
    assert start, text[:2000]
    plan = re.search(stamp + r"batch 32: (\d+) steps an epoch, at most 3 epochs \((\d+) steps\)",
                     text)  # fmt: skip
    assert plan, text[:2000]
    per_epoch, total = int(plan[1]), int(plan[2])
    assert per_epoch == math.ceil(int(start[1]) / 32) and total == 3 * per_epoch
    assert "validation every 10 steps on 40 images (en)" in text
    validations = re.findall(stamp + r"validation at step (\d+) \(epoch [\d.]+\): rsum", text)
    history = json.loads((tmp_path / "run/metrics.json").read_text())["history"]
    assert [int(s) for s in validations] == [row["step"] for row in history]
    assert re.search(stamp + rf"stopped at step {total} \(epoch 3\.00\): epoch cap", text)
    # the bars count this epoch's steps (not a cap of thousands) and redraw rarely in a file
    bars = [part for part in re.split(r"[\r\n]", text) if "four epoch" in part]
    assert bars and all(f"/{per_epoch} " in bar for bar in bars), bars[:3]
    assert len(bars) <= 3 * 3, len(bars)  # start, end (+ one 30-s redraw) per epoch
    assert len(text) < 120 * (len(bars) + len(validations)) + 1500, len(text)
