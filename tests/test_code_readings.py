"""Behaviour of the readings of the authors' code that the config selects by key: Kádár's
tokens and vocabulary (mulisera master data.py), AME-CMR's integer translator rate."""

from __future__ import annotations

import pytest
from helpers.retrieval import make_world, rcsls_update, toy_alignment

from mlmm.retrieval.config import merge_config, variant_defaults
from mlmm.retrieval.data import END, START, Vocabularies, caption_words, eval_set


def _record(**keys) -> dict:
    return merge_config(variant_defaults(), {"min_count": 2, **keys})


def test_joint_count_keeps_a_word_rare_in_each_language_but_frequent_in_all():
    """mulisera master build_vocabulary: one Counter over every language's captions, then
    ``cnt >= threshold``; per-language applies the threshold before the union."""
    captions = {"en": [[["a", "dog"]], [["a", "cat"]]], "de": [[["ein", "dog"]], [["ein"]]]}
    per = Vocabularies.build(captions, _record(count_words="per-language"))
    joint = Vocabularies.build(captions, _record(count_words="joint"))
    assert "dog" not in per.vocabs["shared"].index  # once in each language
    assert "dog" in joint.vocabs["shared"].index  # twice in all
    assert "cat" not in joint.vocabs["shared"].index
    assert {"a", "ein"} <= set(per.vocabs["shared"].index) & set(joint.vocabs["shared"].index)


def test_nltk_tokens_and_boundary_tokens_as_mulisera_master():
    """data.py __getitem__: word_tokenize(caption.lower()), then <start> words <end>; the tok
    files' Moses escapes are split as nltk splits them."""
    line = ["A", "man", "&apos;s", "dog", ",", "running", "."]
    assert caption_words(line, "whitespace", False) == line
    words = caption_words(line, "nltk", True)
    assert words[0] == START and words[-1] == END
    assert words[1:-1] == ["a", "man", "&", "apos", ";", "s", "dog", ",", "running", "."]
    vocabs = Vocabularies.build(
        {"en": [[line], [line]]}, _record(tokens="nltk", boundary_tokens=True)
    )
    ids = vocabs.encode("en", line)
    index = vocabs.vocabs["shared"].index
    assert ids[0] == index[START] and ids[-1] == index[END] and len(ids) == len(words)
    restored = Vocabularies.from_state(vocabs.state())
    assert restored.encode("en", line) == ids


def test_integer_lr_halving_floors_as_python_2_ints():
    """AME-CMR train.py: ``--lr_translator`` type=int; ``lr_translator /= 2`` on a rise is floor
    division under Python 2.7: 5 -> 2 -> 1 -> 0, then the mapping stays where it is."""
    run = toy_alignment(lr=5.0, lr_schedule="halve_on_rise", lr_halving="integer",
                         orthogonalise=False)  # fmt: skip
    rates = []
    for _ in range(4):
        run.directions[0].previous = -100.0  # every loss rises
        rcsls_update(run)
        rates.append(run.lr)
    assert rates == [2.0, 1.0, 0.0, 0.0]
    before, _ = rcsls_update(run)
    assert (run.directions[0].mapping.detach() == before[0]).all()  # lr 0: frozen
    floats = toy_alignment(lr=5.0, lr_schedule="halve_on_rise", orthogonalise=False)
    floats.directions[0].previous = -100.0
    rcsls_update(floats)
    assert floats.lr == pytest.approx(2.5)


def test_integer_rate_starts_from_the_int_of_the_configured_rate():
    assert toy_alignment(lr=2.0, lr_halving="integer").lr == 2.0
    assert toy_alignment(lr=5.5, lr_halving="integer").lr == 5.0


def test_undersampled_validation_draws_one_caption_per_image_and_language(tmp_path):
    """mulisera master get_loaders: the validation loaders take ``undersample`` from the
    options, so ``--undersample`` runs select on one ``random.choice`` caption per image;
    evaluation.py ``evalrank`` sets it off (every caption at test)."""
    paths = make_world(tmp_path)
    spec = {"split": "val", "images": [0, None], "portion": "comparable"}
    full = eval_set(paths.data_root, paths.features_root, "toy", spec, ["en", "de"])
    one = {"captions_per_image": 1}
    drawn = eval_set(paths.data_root, paths.features_root, "toy", {**spec, **one}, ["en", "de"], 3)
    again = eval_set(paths.data_root, paths.features_root, "toy", {**spec, **one}, ["en", "de"], 3)
    other = eval_set(paths.data_root, paths.features_root, "toy", {**spec, **one}, ["en", "de"], 4)
    assert full.per_image == {"en": 5, "de": 5} and drawn.per_image == {"en": 1, "de": 1}
    n = len(drawn.features)
    for lang in ("en", "de"):
        assert len(drawn.captions[lang]) == n
        for i, caption in enumerate(drawn.captions[lang]):
            assert caption in full.captions[lang][5 * i : 5 * i + 5]
    assert drawn.captions == again.captions and drawn.captions != other.captions


def test_rcsls_rotation_output_all_maps_every_word_of_the_source_file(tmp_path):
    """fastText align.py (58e186f) lines 139-144: W is trained on the first --maxload rows, then
    "Saving all aligned vectors": every row of the source file (maxload=-1) mapped by W and
    l2-normalised. ``output: loaded`` writes the trained rows only."""
    import numpy as np

    from mlmm.retrieval import word_vector_files

    rng = np.random.default_rng(5)
    words = [f"w{i}" for i in range(30)]
    english = dict(zip(words, rng.normal(size=(30, 5)).astype(np.float32), strict=True))
    q = np.linalg.qr(rng.normal(size=(5, 5)))[0].astype(np.float32)
    word_vector_files.write_vec(tmp_path / "wiki.en.align.vec", english)
    word_vector_files.write_vec(tmp_path / "cc.ja.vec", {f"j{w}": english[w] @ q.T for w in words})
    (tmp_path / "en-ja.txt").write_text("".join(f"{w} j{w}\n" for w in words[:15]), "utf-8")
    files = {}
    for output in ("loaded", "all"):
        out = tmp_path / output
        rotation = {"method": "rcsls", "knn": 3, "lr": 1.0, "iterations": 3,
                    "sections": ["full"], "output": output}  # fmt: skip
        english_vec, ja_vec = tmp_path / "wiki.en.align.vec", tmp_path / "cc.ja.vec"
        word_vector_files.derive_onto_english(
            "ja", english_vec, tmp_path, out, 0.8, vec=ja_vec, limit=20, rotation=rotation
        )
        files[output] = word_vector_files.read_vec(out / "wiki.ja.align.vec")
    assert len(files["loaded"]) == 20 and len(files["all"]) == 30
    for word, v in files["loaded"].items():
        assert np.allclose(files["all"][word], v, atol=2e-5)
    assert all(abs(np.linalg.norm(v) - 1) < 1e-3 for v in files["all"].values())
    header = (tmp_path / "all" / "wiki.ja.align.vec").read_text().splitlines()[0]
    assert header == "30 5"


def test_reported_and_validation_bleu_use_no_tokenisation_and_no_smoothing():
    """The text is tokenised Multi30K: sacrebleu tokenize "none", unsmoothed, for the table's
    BLEU and the NMT's validation BLEU alike; "13a" re-splits it and gives another number."""
    import sacrebleu

    from mlmm.nmt.metrics import mt_metrics
    from mlmm.nmt.train import bleu

    hyps = ["ein mann fährt auf einem fahrrad.", "zwei hunde spielen im schnee ."]
    refs = ["ein mann fährt fahrrad .", "zwei hunde spielen im schnee ."]
    none = sacrebleu.corpus_bleu(hyps, [refs], tokenize="none", smooth_method="none").score
    retokenised = sacrebleu.corpus_bleu(hyps, [refs], tokenize="13a", smooth_method="none").score
    assert none != retokenised
    assert mt_metrics(hyps, refs, "de")["BLEU"] == pytest.approx(none)
    assert bleu(hyps, refs) == pytest.approx(none)
