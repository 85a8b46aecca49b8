"""Calixto & Liu 2017 Tables 1-2 protocol values, one test per row of docs/fidelity.md's section
"Calixto & Liu 2017, Tables 1-2 (ranking, STS)".

Each test reads the resolved paper configuration (``helpers.paper_config``): a value changed in
config/paper.yaml, its defaults or the schema without docs/fidelity.md fails here. The authors'
code is iacercalixto/multilingual-multimodal-embedding (do_train.py, run_f30kC.sh); the VSE
baseline is Kiros's released VSE (ryankiros/visual-semantic-embedding train.py).
"""

from __future__ import annotations

from helpers.paper_config import (  # tests/ on sys.path
    REPO,
    paper_config,
    paper_variant,
    paper_variants,
)

from mlmm.features import BACKBONES
from mlmm.results.protocol_notes import protocol_notes
from mlmm.retrieval.config import languages, select_languages

FIDELITY = (REPO / "docs" / "fidelity.md").read_text(encoding="utf-8")
SECTION = FIDELITY.split("## Calixto & Liu 2017, Tables 1-2 (ranking, STS)")[1].split("\n## ")[0]
VSE = ("calixto_vse_en", "calixto_vse_de")
BETAS = {
    "calixto_mlmme_beta1": 1.0,
    "calixto_mlmme_beta075": 0.75,
    "calixto_mlmme_beta05": 0.5,
    "calixto_mlmme_beta025": 0.25,
}


def _mlmme() -> dict[str, dict]:
    return {name: paper_variant(name) for name in BETAS}


def test_the_paper_config_runs_every_calixto_record():
    assert set(paper_variants("calixto_")) == set(VSE) | set(BETAS)


def test_data_is_the_comparable_set_with_val_split_in_two():
    """Row 'data': Section 3, M30k comparable; val images 0-499 select, 500-1013 evaluate."""
    for name, record in paper_variants("calixto_").items():
        assert [s["portion"] for s in record["train_data"]] == ["comparable"], name
        assert all(s.get("captions_per_image") is None for s in record["train_data"]), name
        assert record["validation"]["split"] == "val" and record["validation"]["images"] == [0, 500]
        assert record["test"]["split"] == "val" and record["test"]["images"] == [500, None]
        assert record["dataset"] == "multi30k", name
    assert languages(paper_variant("calixto_vse_en")) == ["en"]
    assert languages(paper_variant("calixto_vse_de")) == ["de"]
    assert all(languages(r) == ["en", "de"] for r in _mlmme().values())


def test_vocabulary_counts_every_word_of_train_and_val():
    """Row 'vocabulary': 'the entire vocabulary'; build_dictionary(train + dev), no threshold."""
    for name, record in paper_variants("calixto_").items():
        assert (record["vocabulary"], record["min_count"]) == ("train+val", 1), name
        assert record["encoder"] == "per-language", name


def test_features_are_vgg19_fc7_with_vgg19_bn_a_backbone_to_choose():
    """Row 'features': the paper's VGG19 fc7; the code's vgg19_bn offered, and the table note
    names the one that ran."""
    for name, record in paper_variants("calixto_").items():
        assert record["backbone"] == "vgg19", name
        assert "VGG19 fc7 features (paper; the authors' code loads vgg19_bn)" in protocol_notes(
            record
        )
    assert BACKBONES["vgg19"].dim == BACKBONES["vgg19_bn"].dim == 4096
    assert BACKBONES["vgg19_bn"].torchvision_arch == "vgg19_bn"


def test_dropout_is_the_papers():
    """Row 'dropout': Section 4, 0.5 on the text and image representations (the paper); the
    code's after-normalisation, variational, recurrent and word dropout are keys left off."""
    for name, record in _mlmme().items():
        assert record["dropout"] == 0.5, name
        got = (record["dropout_position"], record["embedding_dropout"], record["word_dropout"])
        assert got == ("before_norm", "elementwise", 0.0), name
        assert record["recurrent_dropout"] == 0.0, name
        assert any(
            n.startswith("dropout 0.5 on the text and image representations (paper")
            for n in protocol_notes(record)
        ), name


def test_initialisation_is_the_papers():
    """Row 'initialisation': Section 4 N(0, 0.01), orthogonal recurrent, zero biases; the VSE
    baseline takes Kiros's utils.py scheme (the same as Calixto's code)."""
    for name, record in _mlmme().items():
        assert record["init"] == "calixto_paper", name
    for name in VSE:
        assert paper_variant(name)["init"] == "calixto_code", name


def test_loss_is_the_weighted_sum_of_hinges():
    """Row 'loss': Eqs. 1-3, sum of hinges, margin 0.2, beta * S_I + (1 - beta) * S_S."""
    for name, record in paper_variants("calixto_").items():
        assert (record["loss"], record["margin"], record["similarity"]) == ("sum", 0.2, "cosine"), (
            name
        )
        assert record["c2c"] is False, name
    for name, beta in BETAS.items():
        assert paper_variant(name)["beta"] == beta, name


def test_optimiser_adam_2e4_batch_128_clip_1():
    """Row 'optimiser': Adam 2e-4, batch 128; do_train.py grad_clip = 1. (Kiros's VSE: 2.)."""
    for name, record in paper_variants("calixto_").items():
        opt = record["optimizer"]
        assert (opt["lr"], opt["decay_epochs"], record["batch_size"]) == (2e-4, None, 128), name
        assert record["grad_clip"] == (2.0 if name in VSE else 1.0), name


def test_batching_is_joint_tuples():
    """Row 'batching': an image with one caption per language (length bucketing not kept)."""
    for name, record in paper_variants("calixto_").items():
        assert record["batching"] == "joint", name


def test_epochs_and_validation_interval_of_run_f30kC():
    """Rows 'epochs', 'selection': run_f30kC.sh --max-epochs 200, --valid-freq 145000/128;
    lowest sum of mean ranks over en and de."""
    assert 145000 // 128 == 1132
    for name, record in _mlmme().items():
        assert record["epochs"] == 200, name
        assert record["early_stopping"]["every"] == 1132, name
        assert record["early_stopping"]["epoch_end"] is False, name
        assert record["select_by"] == "mean_rank", name
        assert select_languages(record) == ["en", "de"], name


def test_no_early_stopping():
    """Row 'stopping': every epoch runs, the best validation point is kept."""
    for name, record in paper_variants("calixto_").items():
        assert record["early_stopping"]["patience"] is None, name


def test_one_seed():
    """Row 'seeds': one run per row."""
    for name, record in paper_variants("calixto_").items():
        assert record["seeds"] == 1, name


def test_vse_baseline_is_kiros_released_vse():
    """Row 'VSE baseline': Section 5 'we retrain Kiros et al. (2014) monolingual models';
    ryankiros/visual-semantic-embedding train.py defaults."""
    for name in VSE:
        record = paper_variant(name)
        sizes = (record["embed_dim"], record["hidden"], record["joint"], record["dropout"])
        assert sizes == (300, 1024, 1024, 0.0), name
        assert (record["epochs"], record["select_by"]) == (15, "rsum"), name
        assert record["early_stopping"]["every"] == 100, name
        assert select_languages(record) == languages(record), name
        assert record["beta"] == 1.0, name


def test_sts_tokens_are_moses_escaped():
    """Row 'STS tokens': Multi30K lc.norm.tok, Moses-escaped, hyphenated words whole."""
    from mlmm.retrieval.sts import sts_tokens

    assert sts_tokens("The man's T-shirt.") == ["the", "man", "&apos;s", "t-shirt", "."]


def test_sts_metric_on_the_english_encoder():
    """Row 'STS metric': Pearson r of the English encoder's cosine (Table 2)."""
    for name, record in paper_variants("calixto_").items():
        assert record["sts"] is True, name  # the trainer scores STS when English is trained
        rows = [r for r in record["paper_rows"] if r.get("table") == 2]
        assert all(r["languages"] == ["en"] for r in rows), name
        assert bool(rows) == ("en" in languages(record)), name


def test_sts_data_is_the_semeval_image_sets():
    """Row 'STS data': the SemEval 2014 and 2015 image sets, a local directory."""
    assert paper_config()["retrieval"]["sts"] == "semeval-sts"
