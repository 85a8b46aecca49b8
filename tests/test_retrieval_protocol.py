"""The papers' protocol mechanisms, each against a hand computation or the authors'
formula: model selection, pooled batching, Calixto's shared projection, stopping flags, the STS
tokens, bad inputs (NaN features, a non-finite loss)."""

from __future__ import annotations

import copy
import math
from collections import Counter

import numpy as np
import pytest
import torch
from helpers.features import write_array
from helpers.retrieval import make_world, rcsls_update, section, toy_alignment

from mlmm.demo import word_vectors as demo_vectors
from mlmm.errors import InputError
from mlmm.results.protocol_notes import calixto_notes
from mlmm.retrieval import rcsls, word_vector_files
from mlmm.retrieval import train as train_module
from mlmm.retrieval.api import load_trained
from mlmm.retrieval.config import resolve_variant
from mlmm.retrieval.data import (
    Vocabularies,
    load_features,
    split_captions,
    training_sets,
    vocabulary_captions,
)
from mlmm.retrieval.model import (
    JointEmbedding,
    gru_last_state,
    variational_dropout,
    word_dropout,
)
from mlmm.retrieval.selection import Selector, selection_score
from mlmm.retrieval.streams import EncodedCaptions
from mlmm.retrieval.train import Run, sts_tokens, train_variant


def _metrics(r1, r5, r10, meanr_i2t, meanr_t2i):
    return {
        "i2t": {"R@1": r1, "R@5": r5, "R@10": r10, "meanr": meanr_i2t},
        "t2i": {"R@1": r1, "R@5": r5, "R@10": r10, "meanr": meanr_t2i},
    }


def test_selection_sums_languages_and_breaks_mean_rank_ties_by_recall():
    m = {"en": _metrics(10, 20, 30, 4.0, 6.0), "de": _metrics(5, 10, 20, 8.0, 2.0)}
    # mulisera / AME: recall sums added over languages: 2 * 60 + 2 * 35
    assert selection_score(m, ["en", "de"], "rsum") == (190,)
    assert selection_score(m, ["de"], "rsum") == (70,)
    # Calixto: lowest sum of mean ranks (4 + 6 + 8 + 2 = 20), then the recall sum
    assert selection_score(m, ["en", "de"], "mean_rank") == (-20.0, 190)
    same_ranks_more_recall = {"en": _metrics(11, 20, 30, 4.0, 6.0), "de": m["de"]}
    assert selection_score(same_ranks_more_recall, ["en", "de"], "mean_rank") > (-20.0, 190)
    better_ranks_less_recall = {"en": _metrics(0, 0, 0, 3.0, 6.0), "de": m["de"]}
    assert selection_score(better_ranks_less_recall, ["en", "de"], "mean_rank") > (-20.0, 190)


def test_selector_patience_and_outcome():
    s = Selector(patience=2)
    assert s.update((1.0,), 10) and not s.update((1.0,), 20) and not s.exhausted
    assert not s.update((0.5,), 30) and s.exhausted
    assert s.step == 10 and s.outcome() == {"stopped_by": "patience", "still_improving": False}
    never = Selector(patience=None)  # AME: every epoch runs
    for step in range(1, 50):
        never.update((-float(step),), step)
    assert not never.exhausted
    assert never.outcome() == {"stopped_by": "cap", "still_improving": False}
    rising = Selector(patience=10)
    rising.update((1.0,), 5)
    rising.update((2.0,), 10)
    assert rising.outcome() == {"stopped_by": "cap", "still_improving": True}
    restored = Selector(patience=10)
    restored.load(rising.state())
    assert restored.state() == rising.state()


def test_calixto_shares_one_sentence_projection_and_drops_out_after_the_image_layer():
    model = JointEmbedding(64, {"en": 10, "de": 12}, 4, 5, 3, 0.5, "cosine", True, True)
    assert model.text["en"].proj is model.text["de"].proj
    assert sum(p.numel() for p in model.parameters()) == (
        64 * 3
        + 3  # image layer
        + 5 * 3
        + 3  # one shared projection
        + sum(n * 4 + 3 * (4 * 5 + 5 * 5 + 2 * 5) for n in (10, 12))  # embeddings + GRUs
    )
    separate = JointEmbedding(64, {"en": 10, "de": 12}, 4, 5, 3, 0.5, "cosine")
    assert separate.text["en"].proj is not separate.text["de"].proj
    torch.manual_seed(0)
    model.train()
    out = model.embed_images(torch.rand(200, 64) + 1.0)
    # dropout after the projection zeroes joint-space coordinates; on the features it would not
    assert (out == 0).any()
    separate.train()
    assert not (separate.embed_images(torch.rand(200, 64) + 1.0) == 0).any()


def test_sts_tokens_keep_hyphenated_words_like_multi30k():
    assert sts_tokens("A man in a T-shirt, smiling.") == [
        "a",
        "man",
        "in",
        "a",
        "t-shirt",
        ",",
        "smiling",
        ".",
    ]


def test_nan_feature_rows_are_refused(tmp_path):
    feats = np.ones((4, 3), dtype=np.float32)
    feats[2, 1] = np.nan
    feats[3, 0] = np.inf
    names = ["a.jpg", "b.jpg", "c.jpg", "d.jpg"]
    write_array(tmp_path / "bb/train.npy", feats, names)
    with pytest.raises(InputError, match=r"train\.npy.*2 of 4 rows \(first: row 2\)"):
        load_features(tmp_path, "bb", "train", names)


@pytest.fixture(scope="module")
def world(tmp_path_factory):
    return make_world(tmp_path_factory.mktemp("protocol"))


BILINGUAL = [{"portion": "comparable", "languages": ["en", "de"]}]


def test_pooled_batches_mix_languages_and_count_every_pair(world, tmp_path):
    """AME-CMR: each (image, caption) pair of 5 en + 5 de per image is one example."""
    record = resolve_variant(section(p={"train_data": BILINGUAL, "batching": "pooled"}), "p")
    run = Run(record, 1, world, tmp_path)
    n_images = 300  # make_world's training images, five captions each in en and de
    streams = run.streams
    assert streams.examples == n_images * 10
    assert run.steps_per_epoch == math.ceil(n_images * 10 / record["batch_size"])
    batch = streams.next_batch(record["batch_size"])
    assert len(batch) == record["batch_size"] and len(batch.texts) == 1
    assert {"en", "de"} == set(batch.texts[0].languages)  # one batch holds both languages
    assert run.batch_loss(batch).ndim == 0
    rest = streams.next_batch(streams.examples)  # the rest of the shuffled epoch
    langs = [*batch.texts[0].languages, *rest.texts[0].languages]
    assert sorted(langs) == ["de"] * 1500 + ["en"] * 1500


def test_multilingual_selection_and_epoch_end_validation(world, tmp_path):
    variant = {
        "train_data": BILINGUAL,
        "batching": "pooled",
        "select_language": ["en", "de"],
        "epochs": 2,
        "early_stopping": {"every": 7, "epoch_end": True, "patience": None},
    }
    record = resolve_variant(section(v=variant), "v")
    metrics = train_variant(record, 1, world, tmp_path, progress=False, threads=1)
    per_epoch = math.ceil(3000 / record["batch_size"])
    steps = [row["step"] for row in metrics["history"]]
    assert per_epoch in steps and 2 * per_epoch in steps and 7 in steps
    assert metrics["steps"] == 2 * per_epoch
    assert metrics["stopped_by"] == "cap" and isinstance(metrics["still_improving"], bool)
    assert metrics["provenance"]["threads"] == 1
    # rsum of the history is the en + de sum, above what one language can reach (600)
    assert max(row["rsum"] for row in metrics["history"]) > 0


def test_non_finite_loss_stops_with_the_step(world, tmp_path, monkeypatch):
    record = resolve_variant(section(v={"epochs": 1}), "v")
    monkeypatch.setattr(
        train_module, "ranking_loss", lambda scores, margin, reduction: scores.sum() * math.nan
    )
    with pytest.raises(InputError, match="a finite loss, found nan at step 1"):
        train_variant(record, 1, world, tmp_path, progress=False, threads=1)
    assert not (tmp_path / "metrics.json").exists()


def test_select_language_must_be_trained(world):
    with pytest.raises(InputError, match="select_language"):
        resolve_variant(section(v={"select_language": ["en", "fr"]}), "v")


def test_translator_maps_its_rows_in_the_forward_pass():
    """AME-CMR's EncoderText: the English rows enter the GRU as W x; equal to baking W into
    those rows (how model.pt stores it)."""
    torch.manual_seed(0)
    live = JointEmbedding(8, {"shared": 6}, 4, 5, 5, 0.0, "cosine").text["shared"].eval()
    baked = copy.deepcopy(live)
    w = torch.linalg.qr(torch.randn(4, 4))[0]
    rows = torch.tensor([False, False, True, True, False, False])
    live.translators = [(rows, w)]
    with torch.no_grad():
        baked.embed.weight[rows] = baked.embed.weight[rows] @ w.t()
    tokens, lengths = torch.tensor([[2, 3, 4], [5, 1, 0]]), torch.tensor([3, 2])
    assert torch.allclose(live(tokens, lengths), baked(tokens, lengths), atol=1e-6)
    live.translators = []  # without it the mapped rows differ
    assert not torch.allclose(live(tokens, lengths), baked(tokens, lengths), atol=1e-3)


AME = {
    "train_data": BILINGUAL,
    "batching": "pooled",
    "word_embeddings": "ame",
    "embed_dim": 8,
    "epochs": 1,
    "alignment": {"every": 5, "train_fraction": 0.5},
}


@pytest.fixture(scope="module")
def aligned_world(world):
    demo_vectors.derive_demo(world.data_root, world.muse, ["en", "de"], 8, 0.8, world.vectors)
    return world


def test_rcsls_moves_the_mapping_only(aligned_world, tmp_path):
    run = Run(resolve_variant(section(v=AME), "v"), 1, aligned_world, tmp_path)
    run.alignment.loss().backward()
    assert run.alignment.mapping.grad is not None
    assert run.model.text["shared"].embed.weight.grad is None


def test_ame_model_reloads_with_the_mapping_baked_in(aligned_world, tmp_path):
    run = Run(resolve_variant(section(v=AME), "v"), 1, aligned_world, tmp_path)
    run.train(progress=False)
    run.test()
    run.save_model()
    sentences = [["a", "red", "cat", "in", "the", "park"], ["the", "dog", "is", "blue"]]
    reloaded = load_trained(tmp_path).embed_sentences("en", sentences)
    assert torch.allclose(reloaded, run.embed_text("en", sentences), atol=1e-5)


def test_pretrained_embeddings_start_from_the_vectors(aligned_world, tmp_path):
    variant = {"word_embeddings": "pretrained", "embed_dim": 8}
    run = Run(resolve_variant(section(v=variant), "v"), 1, aligned_world, tmp_path)
    vectors = word_vector_files.read_vec(aligned_world.vectors / "wiki.en.align.vec", {"cat"})
    weight = run.model.text["shared"].embed.weight
    row = run.vocabs.vocabs["shared"].index["en:cat"]
    assert torch.allclose(weight[row], torch.from_numpy(vectors["cat"]))
    assert weight.requires_grad and run.alignment is None


def test_unknown_words_start_from_normal_0_05_as_ame_cmr_vocab(
    aligned_world, tmp_path, monkeypatch
):
    """AME-CMR vocab.py (8263f53) add_word: a word without a fastText vector gets
    np.random.normal(0, 0.05); the known rows are the vectors; uniform(-0.1, 0.1) otherwise."""
    import dataclasses

    # two vectors for the whole vocabulary: below the coverage a real run needs (a test of it:
    # test_bad_inputs_config_semantics), here so that nearly every row is an unknown word's
    monkeypatch.setattr("mlmm.retrieval.word_embeddings.MIN_VECTOR_COVERAGE", 0.0)

    few = tmp_path / "vectors"  # one English and one German vector: every other row unknown
    few.mkdir()
    for lang in ("en", "de"):
        lines = (aligned_world.vectors / f"wiki.{lang}.align.vec").read_text().splitlines()
        (few / f"wiki.{lang}.align.vec").write_text(f"1 8\n{lines[1]}\n", encoding="utf-8")
    paths = dataclasses.replace(aligned_world, vectors=few)
    known = {
        f"{lang}:{(few / f'wiki.{lang}.align.vec').read_text().split()[2]}" for lang in ("en", "de")
    }
    rows = {}
    for init in ("normal", "uniform"):
        variant = {"word_embeddings": "pretrained", "embed_dim": 8, "unknown_word_init": init}
        run = Run(resolve_variant(section(v=variant), "v"), 1, paths, tmp_path / init)
        vocab = run.vocabs.vocabs["shared"]
        unknown = [i for w, i in vocab.index.items() if w not in known]
        rows[init] = run.model.text["shared"].embed.weight.detach()[unknown]
    assert len(rows["normal"]) > 20
    assert rows["normal"].abs().max() > 0.1 and abs(float(rows["normal"].std()) - 0.05) < 0.01
    assert rows["uniform"].abs().max() <= 0.1


def test_ame_alignment_trains_on_full_plus_test_section_and_scores_on_train_section(tmp_path):
    """AME Section 4.1: RCSLS on MUSE "full" + "test" (5000-6500), the ratio on "train"."""
    (tmp_path / "en-de.txt").write_text("dog hund\ncat katze\n", encoding="utf-8")
    (tmp_path / "en-de.5000-6500.txt").write_text("cat katze\nboat boot\n", encoding="utf-8")
    (tmp_path / "en-de.0-5000.txt").write_text("dog hund\n", encoding="utf-8")
    sections = {"sections": {"train": ["full", "5000-6500"], "test": "0-5000"}}
    train, test = word_vector_files.alignment_lexicons(tmp_path, "de", sections)
    assert train == [("dog", "hund"), ("cat", "katze"), ("boat", "boot")]
    assert test == [("dog", "hund")]
    split = {"sections": None, "train_fraction": 0.5}
    train, test = word_vector_files.alignment_lexicons(tmp_path, "de", split)
    assert sorted(train + test) == [("cat", "katze"), ("dog", "hund")] and len(test) == 1


def test_fetch_muse_downloads_every_section(tmp_path):
    source = tmp_path / "arrival"
    source.mkdir()
    for name in ("en-de.txt", "en-de.0-5000.txt", "en-de.5000-6500.txt"):
        (source / name).write_text("dog hund\n", encoding="utf-8")
    out = tmp_path / "muse"
    sections = ("full", "0-5000", "5000-6500")
    word_vector_files.download_lexicons(source.as_uri(), ["de"], out, sections)
    assert sorted(p.name for p in out.iterdir() if not p.name.startswith(".")) == [
        "en-de.0-5000.txt",
        "en-de.5000-6500.txt",
        "en-de.txt",
    ]


def test_encoded_captions_pad_once_and_gather_by_index():
    vocabs = type("V", (), {"encoder_of": {"en": "shared", "de": "shared"}})()
    langs = ["en", "de", "en", "de"]
    column = EncodedCaptions([[5, 6, 7], [8], [], [9, 10]], langs, vocabs, "cpu")
    assert column.tokens.tolist() == [[5, 6, 7], [8, 0, 0], [1, 0, 0], [9, 10, 0]]
    text = column.take(np.array([3, 1]))
    assert text.tokens.tolist() == [[9, 10], [8, 0]]  # cut to the batch's longest caption
    assert text.lengths.tolist() == [2, 1] and list(text.languages) == ["de", "de"]


def test_mixed_encoder_batches_embed_each_row_with_its_encoder(world, tmp_path):
    variant = {"train_data": BILINGUAL, "batching": "pooled", "encoder": "per-language"}
    run = Run(resolve_variant(section(v=variant), "v"), 1, world, tmp_path)
    run.model.eval()
    text = run.streams.next_batch(16).texts[0]
    assert set(text.encoders) == {"en", "de"}
    together = run._embed(text)
    for row in range(len(text.lengths)):
        n = int(text.lengths[row])
        tokens, lengths = text.tokens[row : row + 1, :n], text.lengths[row : row + 1]
        alone = run.model.embed_text(text.encoders[row], tokens, lengths)
        assert torch.allclose(together[row], alone[0], atol=1e-5)


# ---------------------------------------------------------------- Calixto & Liu 2017
def test_calixto_word_dropout_drops_whole_tokens():
    """source_dropout: one draw per (sentence, position), tiled over the embedding dimensions."""
    torch.manual_seed(0)
    emb = torch.rand(50, 7, 6) + 1.0
    out = word_dropout(emb, 0.5)
    dropped = (out == 0).all(-1)
    kept = ~dropped
    assert not ((out == 0).any(-1) & kept).any()  # a token is either all zero or all kept
    torch.testing.assert_close(out[kept], emb[kept] * 2.0)  # inverted: kept tokens x 1/(1-p)
    assert 0.4 < dropped.float().mean() < 0.6


def test_calixto_variational_dropout_shares_one_mask_over_time_steps():
    """emb_dropout: one mask per sentence over the embedding dimensions, reused at every step."""
    torch.manual_seed(1)
    emb = torch.rand(40, 9, 8) + 1.0
    out = variational_dropout(emb, 0.5)
    zero = out == 0
    assert (zero == zero[:, :1, :]).all()  # the same dimensions dropped at every time step
    torch.testing.assert_close(out[~zero], (emb * 2.0)[~zero])
    assert 0.4 < zero[:, 0, :].float().mean() < 0.6
    encoder = JointEmbedding(4, {"en": 10}, 8, 5, 5, 0.5, "cosine", embedding_dropout="variational")
    encoder.eval()  # no dropout at evaluation
    tokens, lengths = torch.tensor([[2, 3, 4]]), torch.tensor([3])
    torch.testing.assert_close(
        encoder.embed_text("en", tokens, lengths), encoder.embed_text("en", tokens, lengths)
    )


def test_calixto_dropout_after_normalisation_masks_unit_vectors_without_rescaling():
    """model_multilingual.py: images = l2norm(ff_image_mm(im)); images *= binomial(retain)."""
    torch.manual_seed(2)
    model = JointEmbedding(6, {"en": 10}, 4, 5, 8, 0.5, "cosine", dropout_position="after_norm")
    features = torch.rand(300, 6)
    with torch.no_grad():
        unit = model.image(features)
        unit = unit / unit.norm(dim=-1, keepdim=True)
    model.train()
    out = model.embed_images(features)
    zero = out == 0
    torch.testing.assert_close(out[~zero], unit[~zero])  # kept entries: not scaled by 2
    assert 0.4 < zero.float().mean() < 0.6
    model.eval()
    torch.testing.assert_close(model.embed_images(features), unit)
    model.train()
    text = model.embed_text("en", torch.tensor([[2, 3, 4]] * 200), torch.tensor([3] * 200))
    assert (text == 0).any() and text.norm(dim=-1).max() <= 1.0 + 1e-5


def _orthogonal_blocks(weight_hh: torch.Tensor, hidden: int) -> bool:
    eye = torch.eye(hidden)
    return all(
        torch.allclose(block @ block.t(), eye, atol=1e-5)
        for block in weight_hh.detach().split(hidden)
    )


def test_calixto_initialisations_follow_the_paper_and_the_code():
    torch.manual_seed(3)
    sizes = dict(feature_dim=300, vocab_sizes={"en": 400}, embed_dim=200, hidden=64, joint=128)
    paper = JointEmbedding(**sizes, dropout=0.5, similarity="cosine", init="calixto_paper")
    code = JointEmbedding(**sizes, dropout=0.5, similarity="cosine", init="calixto_code")
    for model in (paper, code):
        gru = model.text["en"].gru
        assert _orthogonal_blocks(gru.weight_hh_l0, 64)  # recurrent: orthogonal per gate
        for bias in (gru.bias_ih_l0, gru.bias_hh_l0, model.image.bias, model.text["en"].proj.bias):
            assert (bias == 0).all()
    # Section 4: non-recurrent matrices N(0, 0.01)
    for weight in (
        paper.text["en"].embed.weight,
        paper.text["en"].gru.weight_ih_l0,
        paper.image.weight,
        paper.text["en"].proj.weight,
    ):
        weight = weight.detach()
        assert abs(float(weight.std()) - 0.01) < 0.001 and abs(float(weight.mean())) < 0.001
    # utils.py: norm_weight uniform(-0.1, 0.1) for words and GRU inputs, xavier_weight for ff
    for weight in (code.text["en"].embed.weight, code.text["en"].gru.weight_ih_l0):
        weight = weight.detach()
        assert float(weight.abs().max()) <= 0.1
        assert abs(float(weight.std()) - 0.1 / math.sqrt(3)) < 0.003
    for weight, (n_in, n_out) in (
        (code.image.weight, (300, 128)),
        (code.text["en"].proj.weight, (64, 128)),
    ):
        weight = weight.detach()
        bound = math.sqrt(6.0 / (n_in + n_out))
        assert float(weight.abs().max()) <= bound
        assert abs(float(weight.std()) - bound / math.sqrt(3)) < 0.1 * bound / math.sqrt(3)


def test_calixto_vocabulary_over_train_and_val(tmp_path):
    """train_multilingual.py: build_dictionary(train + dev): a word seen only in val gets a row."""
    paths = make_world(tmp_path)
    val_file = paths.data_root / "data/task2/tok/val.lc.norm.tok.1.en"
    lines = val_file.read_text(encoding="utf-8").splitlines()
    lines[0] += " zebracorn"
    val_file.write_text("\n".join(lines) + "\n", encoding="utf-8")
    base = {
        "train_data": [{"portion": "comparable", "languages": ["en"]}],
        "encoder": "per-language",
        "min_count": 1,
    }
    train_only = resolve_variant(section(v=base), "v")
    both = resolve_variant(section(v={**base, "vocabulary": "train+val"}), "v")
    training = training_sets(paths.data_root, train_only, 1).vocabulary
    assert vocabulary_captions(paths.data_root, train_only, training) is training
    merged = vocabulary_captions(paths.data_root, both, training)
    val = split_captions(paths.data_root, "val", "en", "comparable")
    assert merged["en"] == training["en"] + val  # the val images' captions appended, by hand

    def count(captions):
        return Counter(w for per_image in captions["en"] for c in per_image for w in c)

    assert count(merged) == count(training) + count({"en": val})
    assert "zebracorn" not in Vocabularies.build(training, train_only).vocabs["en"].words
    assert "zebracorn" in Vocabularies.build(merged, both).vocabs["en"].words


def test_calixto_sts_tokens_are_moses_escaped_like_multi30k():
    """Multi30K lc.norm.tok: Moses' tokenizer with its default escaping, lowercased."""
    assert sts_tokens('The man\'s T-shirt says "Hi" & waves.') == [
        "the",
        "man",
        "&apos;s",
        "t-shirt",
        "says",
        "&quot;",
        "hi",
        "&quot;",
        "&amp;",
        "waves",
        ".",
    ]
    assert sts_tokens("Two dogs' toys, a <ball>.") == [
        "two",
        "dogs",
        "&apos;",
        "toys",
        ",",
        "a",
        "&lt;",
        "ball",
        "&gt;",
        ".",
    ]


def test_calixto_table_notes_name_the_reading_that_ran():
    row = {"paper": "calixto2017", "table": 1, "system": "MLMME"}
    base = {"paper_rows": [row], "backbone": "vgg19", "init": "calixto_paper", "dropout": 0.5}
    paper = resolve_variant({"variants": {"p": base}}, "p")
    assert calixto_notes(paper) == [
        "VGG19 fc7 features (paper; the authors' code loads vgg19_bn)",
        "initialisation of Section 4 (paper: N(0, 0.01), orthogonal recurrent)",
        "dropout 0.5 on the text and image representations (paper Section 4; the authors' "
        "run_f30kC.sh trains without dropout)",
    ]
    code = {
        **base,
        "backbone": "vgg19_bn",
        "init": "calixto_code",
        "word_dropout": 0.5,
        "dropout_position": "after_norm",
        "embedding_dropout": "variational",
    }
    assert calixto_notes(resolve_variant({"variants": {"c": code}}, "c")) == [
        "VGG19-BN fc7 features (the authors' code; the paper names VGG19)",
        "initialisation of the released Theano code (utils.py: uniform 0.1, orthogonal "
        "recurrent, Xavier projections)",
        "dropout 0.5 as model_multilingual.py (the authors' code)",
    ]
    other = resolve_variant({"variants": {"k": {**base, "paper_rows": []}}}, "k")
    assert calixto_notes(other) == []  # only Calixto's rows carry these notes


def test_calixto_recurrent_dropout_gru_matches_the_formula_and_cudnn():
    """layers.gru_layer: r, u = sigmoid(x W + (h_ * m0) U), h~ = tanh(x Wx + r * ((h_ * m1) Ux)),
    h = u * h_ + (1 - u) * h~; one mask pair per sentence for every step."""
    torch.manual_seed(4)
    gru = torch.nn.GRU(3, 4, batch_first=True)
    emb, lengths = torch.randn(5, 6, 3), torch.tensor([6, 1, 3, 6, 2])
    ones = (torch.ones(5, 4), torch.ones(5, 4))
    packed = torch.nn.utils.rnn.pack_padded_sequence(emb, lengths, True, enforce_sorted=False)
    with torch.no_grad():
        _, last = gru(packed)
        torch.testing.assert_close(gru_last_state(gru, emb, lengths, ones), last[-1])
        # one unit, one input, two steps: by hand
        one = torch.nn.GRU(1, 1, batch_first=True)
        for name, value in {"weight_ih_l0": [[0.5], [-1.0], [2.0]], "weight_hh_l0": [[1.5], [0.5],
                            [-2.0]], "bias_ih_l0": [0.1, 0.2, 0.3], "bias_hh_l0": [0.0, 0.0, 0.4]
                            }.items():  # fmt: skip
            getattr(one, name).copy_(torch.tensor(value))
        x, masks = [1.0, -2.0], (torch.tensor([[2.0]]), torch.tensor([[0.0]]))
        h = 0.0
        for xt in x:
            r = torch.sigmoid(torch.tensor(0.5 * xt + 0.1 + 1.5 * h * 2.0))
            z = torch.sigmoid(torch.tensor(-1.0 * xt + 0.2 + 0.5 * h * 2.0))
            n = torch.tanh(2.0 * xt + 0.3 + r * (-2.0 * h * 0.0 + 0.4))
            h = float((1 - z) * n + z * h)
        got = gru_last_state(one, torch.tensor([[[1.0], [-2.0]]]), torch.tensor([2]), masks)
        assert abs(float(got) - h) < 1e-6


def test_calixto_recurrent_dropout_draws_one_mask_pair_per_batch(monkeypatch):
    from mlmm.retrieval import model as model_module

    drawn = []

    def counting(shape, p, like):
        drawn.append(shape)
        return torch.bernoulli(torch.full(shape, 1.0 - p))

    monkeypatch.setattr(model_module, "kept_mask", counting)
    encoder = JointEmbedding(4, {"en": 20}, 3, 5, 5, 0.0, "cosine", recurrent_dropout=0.5)
    encoder.train()
    encoder.embed_text("en", torch.randint(2, 20, (7, 9)), torch.full((7,), 9))
    assert drawn == [(7, 5), (7, 5)]  # gates and candidate, whatever the 9 steps
    drawn.clear()
    encoder.eval()
    encoder.embed_text("en", torch.randint(2, 20, (7, 9)), torch.full((7,), 9))
    assert drawn == []  # evaluation: cuDNN, no mask


# ------------------------------------------------------------------ AME: order use_abs, mappings
def test_order_use_abs_off_keeps_the_signed_normalised_embeddings():
    """AME-CMR ``--use_abs`` off: the order score sees l2norm(x), not |l2norm(x)|."""
    torch.manual_seed(0)
    signed = JointEmbedding(3, {"shared": 4}, 2, 3, 3, 0.0, "order", use_abs=False).eval()
    absolute = JointEmbedding(3, {"shared": 4}, 2, 3, 3, 0.0, "order").eval()
    absolute.load_state_dict(signed.state_dict())
    features = torch.tensor([[1.0, -2.0, 0.5], [-1.0, 0.0, 3.0]])
    with torch.no_grad():
        x = signed.image(features)
    by_hand = x / x.norm(dim=1, keepdim=True)
    assert (by_hand < 0).any()
    assert torch.allclose(signed.embed_images(features), by_hand, atol=1e-6)
    assert torch.allclose(absolute.embed_images(features), by_hand.abs(), atol=1e-6)
    cosine = JointEmbedding(3, {"shared": 4}, 2, 3, 3, 0.0, "cosine", use_abs=True)
    assert cosine.use_abs is False  # absolute values belong to the order score only


def _getknn(sc, x, y, k):
    """AME-CMR ``ContrastiveLoss.getknn`` (numpy)."""
    sidx = np.argsort(-sc, axis=1)[:, :k]
    f = sc[np.arange(sc.shape[0])[:, None], sidx].sum()
    df = y[sidx].sum(1).T @ x
    return f / k, df / k


def _ame_cmr_rcsls(x_src, y_tgt, z_src, z_tgt, r, knn):
    """AME-CMR ``ContrastiveLoss.rcsls``: the loss and its gradient df in R, on raw rows."""
    f = 2 * np.sum((x_src @ r.T) * y_tgt)
    df = 2 * y_tgt.T @ x_src
    fk0, dfk0 = _getknn(x_src @ r.T @ z_tgt.T, x_src, z_tgt, knn)
    fk1, dfk1 = _getknn((z_src @ r.T @ y_tgt.T).T, y_tgt, z_src, knn)
    return -(f - fk0 - fk1) / len(x_src), -(df - dfk0 - dfk1.T) / len(x_src)


def test_rcsls_raw_rows_gradient_is_ame_cmr_df_and_no_orthogonalisation():
    """normalise false, orthogonalise false: R <- R - lr df with AME-CMR's f and df."""
    run = toy_alignment(normalise=False, orthogonalise=False)
    weight = run.weight().double().numpy()
    d = run.directions[0]
    r = d.mapping.detach().double().numpy()
    x_all, y_all = weight[d.src.numpy()], weight[d.tgt.numpy()]
    pairs = d.train.numpy()
    f, df = _ame_cmr_rcsls(x_all[pairs[:, 0]], y_all[pairs[:, 1]], x_all, y_all, r, 2)
    assert float(run.loss().detach()) == pytest.approx(f, abs=1e-5)
    before, grads = rcsls_update(run)
    assert np.allclose(grads[0].numpy(), df, atol=1e-5)
    after = d.mapping.detach().double().numpy()
    assert np.allclose(after, r - 2.0 * df, atol=1e-5)
    assert not np.allclose(after @ after.T, np.eye(3), atol=1e-3)  # left as it is


def test_rcsls_orthogonalises_after_the_update_by_default():
    """The paper (Section 3.2): W constrained orthogonal: the SVD's U V^T after each step."""
    run = toy_alignment()
    before, grads = rcsls_update(run)
    moved = (before[0] - 2.0 * grads[0]).double()
    u, _, vt = torch.linalg.svd(moved)
    w = run.directions[0].mapping.detach().double()
    assert torch.allclose(w, u @ vt, atol=1e-5)
    assert torch.allclose(w @ w.t(), torch.eye(3, dtype=torch.float64), atol=1e-5)


def test_rcsls_lr_halves_when_the_loss_rises():
    """AME-CMR train_emb: ``if f > fold: lr_translator /= 2``; fold keeps the last loss that did
    not rise; the update that saw the rise is kept (its R_old is the same tensor)."""
    run = toy_alignment(lr_schedule="halve_on_rise", orthogonalise=False)
    d = run.directions[0]
    d.previous = -100.0  # below any loss: this one rises
    before, grads = rcsls_update(run)
    assert run.lr == 1.0 and d.previous == -100.0
    assert torch.allclose(d.mapping.detach(), before[0] - 2.0 * grads[0], atol=1e-6)
    d.previous = 100.0  # above: no rise, the loss becomes the reference, the rate stays
    loss_value = float(run.loss().detach())
    before, grads = rcsls_update(run)
    assert run.lr == 1.0 and d.previous == pytest.approx(loss_value, abs=1e-6)
    assert torch.allclose(d.mapping.detach(), before[0] - 1.0 * grads[0], atol=1e-6)
    constant = toy_alignment(orthogonalise=False)
    constant.directions[0].previous = -100.0
    rcsls_update(constant)
    assert constant.lr == 2.0


def test_two_mappings_both_move_with_one_rate_reverse_first():
    """AME-CMR: R_deen updated (and its rise checked) before R_ende, one lr_translator; the
    German rows enter the GRU mapped by R_deen, the English ones by R_ende."""
    run = toy_alignment(mappings="two", lr_schedule="halve_on_rise", orthogonalise=False)
    forward, reverse = run.directions
    reverse.previous = -100.0  # the de-en loss rises: the en-de update already gets lr / 2
    before, grads = rcsls_update(run)
    assert torch.allclose(reverse.mapping.detach(), before[1] - 2.0 * grads[1], atol=1e-6)
    assert torch.allclose(forward.mapping.detach(), before[0] - 1.0 * grads[0], atol=1e-6)
    assert run.lr == 1.0
    encoder = run.model.text["shared"]
    assert [m for _, m in encoder.translators] == [forward.mapping, reverse.mapping]
    tokens = torch.tensor([[1, 4]])
    with torch.no_grad():
        emb = encoder.embed(tokens)
        expected = torch.stack([emb[0, 0] @ forward.mapping.t(), emb[0, 1] @ reverse.mapping.t()])
        raw = encoder.embed.weight
        state = run.baked({"text.shared.embed.weight": raw.clone()}, run.snapshot())
    baked = state["text.shared.embed.weight"]
    assert torch.allclose(baked[1], expected[0], atol=1e-6)
    assert torch.allclose(baked[4], expected[1], atol=1e-6)
    assert torch.equal(baked[0], raw[0])


def test_fetch_muse_reverse_downloads_the_lang_en_dictionaries(tmp_path):
    source = tmp_path / "arrival"
    source.mkdir()
    for name in ("en-de.txt", "de-en.txt"):
        (source / name).write_text("dog hund\n", encoding="utf-8")
    word_vector_files.download_lexicons(
        source.as_uri(), ["de"], tmp_path / "muse", ("full",), reverse=True
    )
    shown = sorted(p.name for p in (tmp_path / "muse").iterdir() if not p.name.startswith("."))
    assert shown == ["de-en.txt", "en-de.txt"]
    assert word_vector_files.alignment_lexicons(
        tmp_path / "muse", "de", {"sections": {"train": ["full"], "test": "full"}}, reverse=True
    )[0] == [("dog", "hund")]


def test_ame_with_the_codes_mappings_trains_resumes_state_and_reloads(aligned_world, tmp_path):
    """alignment.mappings two + halve_on_rise + raw rows, unconstrained (AME-CMR's reading) on
    the toy world: both W move, the rate and the reference loss travel with the state, and the
    saved model (both W baked in) embeds as the live one."""
    import dataclasses
    import shutil

    muse = tmp_path / "muse"
    shutil.copytree(aligned_world.muse, muse)
    pairs = word_vector_files.read_lexicon(muse / "en-de.txt")
    (muse / "de-en.txt").write_text("".join(f"{t} {s}\n" for s, t in pairs), "utf-8")
    paths = dataclasses.replace(aligned_world, muse=muse)
    code = {
        "mappings": "two",
        "lr_schedule": "halve_on_rise",
        "orthogonalise": False,
        "normalise": False,
    }
    variant = {**AME, "alignment": {**AME["alignment"], **code}}
    run = Run(resolve_variant(section(v=variant), "v"), 1, paths, tmp_path / "run")
    start = [d.mapping.detach().clone() for d in run.alignment.directions]
    assert [d.pair for d in run.alignment.directions] == ["en-de", "de-en"]
    run.train(progress=False)
    for d, before in zip(run.alignment.directions, start, strict=True):
        assert not torch.allclose(d.mapping, before)
    state = run.alignment.state()
    assert state["lr"] == run.alignment.lr and len(state["mappings"]) == 2
    run.test()
    run.save_model()
    sentences = [["a", "red", "cat", "in", "the", "park"]]
    german = [
        run.vocabs.vocabs["shared"].words[i].split(":", 1)[1]
        for i in run.alignment.directions[1].src[:4].tolist()
    ]
    reloaded = load_trained(tmp_path / "run")
    assert torch.allclose(
        reloaded.embed_sentences("en", sentences), run.embed_text("en", sentences), atol=1e-5
    )
    assert torch.allclose(
        reloaded.embed_sentences("de", [german]), run.embed_text("de", [german]), atol=1e-5
    )


def test_alignment_ratio_with_two_mappings_maps_both_sides():
    """AME-CMR METRIC_SIMIL kind 1: nearest neighbours of X_en R_ende^T among X_de R_deen^T."""
    run = toy_alignment(mappings="two")
    forward, reverse = run.directions
    with torch.no_grad():
        forward.mapping.copy_(torch.eye(3))
        reverse.mapping.copy_(-torch.eye(3))  # flips every German row
    weight = run.weight()
    by_hand = rcsls.precision_at_1(weight[forward.src], -weight[forward.tgt], forward.gold, None)
    assert run.ratio() == by_hand
    one = toy_alignment()
    with torch.no_grad():
        one.directions[0].mapping.copy_(torch.eye(3))
    unmapped = rcsls.precision_at_1(weight[forward.src], weight[forward.tgt], forward.gold, None)
    assert one.ratio() == unmapped and unmapped != by_hand  # the toy tells the two apart
