"""Kádár's data draws and the monolingual lr decay, against hand computations.

The paper cuts one random half of the images and samples one caption per image once; mulisera
master draws per language and per data set. Both readings are selectable; these tests pin what
each one draws from a given seed.
"""

from __future__ import annotations

from pathlib import Path
from types import SimpleNamespace

import numpy as np
import pytest
import torch
from helpers.retrieval import record_of, tiny_world

from mlmm.catalogue import TABLES
from mlmm.results.protocol_notes import protocol_notes
from mlmm.results.retrieval_tables import Run as ReportRun
from mlmm.results.retrieval_tables import _notes
from mlmm.retrieval.data import Vocabularies, c2c_pairs, image_subsets, training_sets
from mlmm.retrieval.streams import TrainingStreams
from mlmm.retrieval.train import Run

N = 6  # images of the tiny world; comparable captions read "c<lang> <image> <k>", k = 1..5
BOTH = [{"portion": "comparable", "languages": ["en", "de"]}]
ONE_EACH = [{"portion": "comparable", "languages": ["en", "de"], "captions_per_image": 1}]


def _subset(draw: str, assignment: str = "overlap") -> dict:
    return {"fraction": 0.5, "assignment": assignment, "draw": draw, "c2c": "subset"}


@pytest.mark.parametrize("assignment", ["overlap", "disjoint"])
def test_shared_draw_cuts_one_permutation(assignment):
    perm = np.random.default_rng(7).permutation(10)
    got = image_subsets(10, ["en", "de"], _subset("shared", assignment), np.random.default_rng(7))
    de_part = perm[:5] if assignment == "overlap" else perm[5:]
    assert got["en"].tolist() == sorted(perm[:5].tolist())
    assert got["de"].tolist() == sorted(de_part.tolist())


@pytest.mark.parametrize("assignment", ["overlap", "disjoint"])
def test_per_language_draw_gives_each_language_its_own_permutation(assignment):
    """mulisera master: each language's loader shuffles 0..N-1 anew and keeps its slice."""
    hand = np.random.default_rng(7)
    first, second = hand.permutation(10), hand.permutation(10)
    got = image_subsets(
        10, ["en", "de"], _subset("per-language", assignment), np.random.default_rng(7)
    )
    de_part = second[:5] if assignment == "overlap" else second[5:]
    assert got["en"].tolist() == sorted(first[:5].tolist())
    assert got["de"].tolist() == sorted(de_part.tolist())
    again = image_subsets(
        10, ["en", "de"], _subset("per-language", assignment), np.random.default_rng(7)
    )
    assert all(np.array_equal(got[lang], again[lang]) for lang in got)  # same seed, same halves


def _caption_index(caption: list[str]) -> int:
    return int(caption[2]) - 1  # "c<lang> <image> <k>" -> k - 1


def _hand_draw(seed: list[int], langs: list[str], skip_permutation: bool) -> dict:
    """What ``caption_draw`` samples: one index of five per image, language after language."""
    rng = np.random.default_rng(seed)
    if skip_permutation:
        rng.permutation(N)  # the image subset's draw comes first on the c2i generator
    return {lang: [int(rng.choice(5, 1, replace=False)[0]) for _ in range(N)] for lang in langs}


def test_shared_captions_feed_c2i_c2c_and_the_vocabulary(tmp_path):
    tiny_world(tmp_path, N)
    sets = training_sets(tmp_path, record_of(train_data=ONE_EACH, c2c=True), seed=3)
    assert sets.c2c == sets.c2i and sets.vocabulary == sets.c2i
    hand = _hand_draw([3, 0], ["en", "de"], skip_permutation=False)
    for lang in ("en", "de"):
        assert [_caption_index(caps[0]) for caps in sets.c2i[lang]] == hand[lang]
    pairs = c2c_pairs(sets.c2c)
    assert len(pairs) == N and all(a[1] == b[1] for _, a, _, b in pairs)  # one pair per image


def test_redrawn_captions_are_independent_draws(tmp_path):
    """mulisera master: the c2c set and the vocabulary draw their own caption per image."""
    tiny_world(tmp_path, N)
    record = record_of(train_data=ONE_EACH, c2c=True, c2c_captions="redrawn")
    sets = training_sets(tmp_path, record, seed=3)
    for part, seed in ((sets.c2i, [3, 0]), (sets.c2c, [3, 4]), (sets.vocabulary, [3, 5])):
        hand = _hand_draw(seed, ["en", "de"], skip_permutation=False)
        for lang in ("en", "de"):
            assert [_caption_index(caps[0]) for caps in part[lang]] == hand[lang]
    assert any(sets.c2c[lang][i] != sets.c2i[lang][i] for lang in ("en", "de") for i in range(N))


@pytest.mark.parametrize(("c2c_images", "images"), [("subset", 3), ("all", N)])
def test_c2c_images_follow_the_subset_or_take_every_image(tmp_path, c2c_images, images):
    tiny_world(tmp_path, N)
    subset = {**_subset("shared"), "c2c": c2c_images}
    sets = training_sets(tmp_path, record_of(train_data=BOTH, image_subset=subset, c2c=True), 3)
    assert sum(bool(c) for c in sets.c2i["en"]) == 3
    assert len({a[1] for _, a, _, _ in c2c_pairs(sets.c2c)}) == images
    assert len(c2c_pairs(sets.c2c)) == images * 25
    record = record_of(train_data=BOTH, image_subset=subset, c2c=True)
    vocabs = Vocabularies.build(sets.vocabulary, record)
    streams = TrainingStreams(sets.c2i, vocabs, record, 3, torch.device("cpu"), tmp_path, sets.c2c)
    assert len(streams.c2c[0].lengths) == images * 25  # the streams pair what c2c was given


def test_protocol_notes_name_the_reading_that_ran():
    paper = record_of(train_data=BOTH, image_subset=_subset("shared"), c2c=True)
    code = record_of(
        train_data=BOTH, image_subset={**_subset("per-language"), "c2c": "all"}, c2c=True
    )
    assert protocol_notes(paper) == [
        "image subset (0.5, overlap): one draw shared by the languages (paper)",
        "c2c pairs from the subset's images (paper)",
    ]
    assert protocol_notes(code) == [
        "image subset (0.5, overlap): an independent draw per language (mulisera master)",
        "c2c pairs from every training image (mulisera master)",
    ]
    sampled = record_of(train_data=ONE_EACH, c2c=True, c2c_captions="redrawn")
    assert protocol_notes(sampled) == [
        "c2c and vocabulary draw their own captions (mulisera master)"
    ]
    assert protocol_notes(record_of()) == []  # nothing to say for a full monolingual run
    spec = next(s for s in TABLES if (s.paper, s.table) == ("kadar2018", 5))
    row = {"paper": "kadar2018", "table": 5, "system": "Bi-overlap", "variant_note": "x"}
    runs = [ReportRun("v", 1, {"provenance": {}}, [row], protocol_notes(code))]
    notes = _notes(runs, spec, Path("/nonexistent"))
    assert f"v: {'; '.join(protocol_notes(code))}" in notes


def test_lr_decays_by_the_factor_every_decay_epochs():
    """VSE++/mulisera adjust_learning_rate: lr * 0.1 ** (epoch // 15)."""
    run = SimpleNamespace(
        record={"optimizer": {"lr": 2e-4, "decay_epochs": 15, "decay_factor": 0.1}}
    )
    hand = {0: 2e-4, 14: 2e-4, 15: 2e-5, 29: 2e-5, 30: 2e-6, 47: 2e-7}
    for epoch, lr in hand.items():
        assert Run._lr(run, epoch) == pytest.approx(lr, rel=1e-12)
    run.record["optimizer"]["decay_epochs"] = None
    assert Run._lr(run, 100) == 2e-4  # multilingual runs: constant
