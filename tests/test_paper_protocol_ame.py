"""Mohammadshahi et al. 2019 (AME) protocol values, one test per row of docs/fidelity.md's AME
section.

Each test reads the resolved paper configuration (``helpers.paper_config``): a value changed in
config/paper.yaml, its defaults or the schema without docs/fidelity.md fails here.
"""

from __future__ import annotations

from helpers.paper_config import (  # tests/ on sys.path
    REPO,
    paper_config,
    paper_variant,
    paper_variants,
)

from mlmm.results.protocol_notes import protocol_notes
from mlmm.retrieval.config import languages, select_languages

FIDELITY = (REPO / "docs" / "fidelity.md").read_text(encoding="utf-8")
SECTION = FIDELITY.split("## Mohammadshahi et al. 2019 (AME)")[1].split("\n## ")[0]

MULTI30K = {
    "ame_mono_en_sym", "ame_mono_de_sym", "ame_fme_sym", "ame_ame_sym",
    "ame_mono_en_asym", "ame_mono_de_asym", "ame_fme_asym", "ame_ame_asym",
}
COCO = {name.replace("ame_", "ame_coco_", 1).replace("_de_", "_ja_") for name in MULTI30K}
TABLE_RUNS = MULTI30K | COCO


def _ame() -> dict[str, dict]:
    return paper_variants("ame_")


def _coco(name: str) -> bool:
    return name.startswith("ame_coco_")


def test_docs_cite_ame_cmr_at_the_papers_version():
    assert "2463a85" in SECTION and "2019-09-23" in SECTION
    assert "8263f53" in SECTION and "a2d195d" in SECTION  # vocab.py, adjust_lexicons.py: later


def test_every_table_and_figure_record_is_run():
    assert set(_ame()) == TABLE_RUNS | {"ame_figure2"}


def test_data_multi30k_task2_and_coco_en_ja():
    """Row 'data': Multi30K comparable (task 2) en/de; MS-COCO with STAIR Japanese."""
    for name, record in _ame().items():
        assert [s["portion"] for s in record["train_data"]] == ["comparable"], name
        assert record["dataset"] == ("coco" if _coco(name) else "multi30k"), name
        assert set(languages(record)) <= ({"en", "ja"} if _coco(name) else {"en", "de"}), name


def test_features_resnet152():
    assert {record["backbone"] for record in _ame().values()} == {"resnet152"}


def test_the_vectors_fill_the_records_word_embeddings():
    """Row 'sizes': the fastText vectors (``retrieval.vectors.dim``) are the word embeddings of
    every AME record that reads them (load_vectors refuses vectors of another size)."""
    dim = paper_config()["retrieval"]["vectors"]["dim"]
    for name, record in _ame().items():
        if record["word_embeddings"] != "random":
            assert record["embed_dim"] == dim, name


def test_mono_starts_from_the_fasttext_vectors_fme_freezes_ame_aligns():
    for name, record in _ame().items():
        want = "pretrained" if "_mono_" in name else "fme" if "_fme_" in name else "ame"
        assert record["word_embeddings"] == want, name


def test_loss_sums_the_hinges():
    assert {record["loss"] for record in _ame().values()} == {"sum"}


def test_similarity_cosine_02_and_order_005():
    for name, record in _ame().items():
        asymmetric = name.endswith("_asym") or name == "ame_figure2"
        assert record["similarity"] == ("order" if asymmetric else "cosine"), name
        assert record["margin"] == (0.05 if asymmetric else 0.2), name


def test_order_runs_without_absolute_values():
    """Row 'order without absolute values': AME-CMR --use_abs is off (run names _noabs)."""
    for name, record in _ame().items():
        if record["similarity"] == "order":
            assert record["use_abs"] is False, name
    assert "`use_abs: false`" in SECTION


def test_optimiser_adam_lr_decay_epochs_batch():
    for name, record in _ame().items():
        lr, decay, epochs = (6e-5, 10, 20) if _coco(name) else (1.1e-4, 15, 30)
        assert record["optimizer"] == {"lr": lr, "decay_epochs": decay, "decay_factor": 0.1}
        assert (record["epochs"], record["batch_size"]) == (epochs, 128), name


def test_batching_pools_every_caption():
    assert {record["batching"] for record in _ame().values()} == {"pooled"}


def test_two_translators_in_the_forward_pass():
    """Row 'mappings in the forward pass': Section 4.4 translators; AME-CMR R_ende, R_deen."""
    for name, record in _ame().items():
        assert record["alignment"]["mappings"] == "two", name


def test_rcsls_schedule_every_500_lr_knn():
    for name, record in _ame().items():
        lr, knn = (5.0, 4) if _coco(name) else (2.0, 5)
        assert (record["alignment"]["every"], record["alignment"]["lr"]) == (500, lr), name
        assert record["alignment"]["knn"] == knn, name


def test_rcsls_rate_halves_on_a_rising_loss():
    """Row 'RCSLS rate': the paper is silent; AME-CMR train_emb halves lr_translator."""
    assert {r["alignment"]["lr_schedule"] for r in _ame().values()} == {"halve_on_rise"}


def test_w_orthogonal_on_normalised_rows_as_the_paper():
    """Row 'W orthogonal, rows normalised': Section 3.2 (AME-CMR does neither: keys)."""
    for name, record in _ame().items():
        assert record["alignment"]["orthogonalise"] is True, name
        assert record["alignment"]["normalise"] is True, name
        if record["word_embeddings"] == "ame":
            assert "RCSLS: orthogonal W on l2-normalised rows (paper)" in protocol_notes(record)


def test_alignment_data_muse_sections():
    for name, record in _ame().items():
        assert record["alignment"]["sections"] == {
            "train": ["full", "5000-6500"], "test": "0-5000",
        }, name
        assert record["alignment"]["max_pairs"] is None, name
    assert paper_config()["retrieval"]["muse"].startswith("https://")


def test_selection_every_500_and_epoch_end_on_every_language():
    for name, record in _ame().items():
        assert record["early_stopping"]["every"] == 500, name
        assert record["early_stopping"]["epoch_end"] is True, name
        assert select_languages(record) == languages(record), name


def test_stopping_runs_every_epoch():
    """Row 'stopping' (Figure 2 included: its curve spans the whole training)."""
    assert {r["early_stopping"]["patience"] for r in _ame().values()} == {None}


def test_metric_coco_five_folds_of_1k():
    for name, record in _ame().items():
        assert record["test"]["folds"] == (5 if _coco(name) else 1), name
        if _coco(name):
            assert record["test"]["split"] == "test" and record["validation"]["split"] == "val"


def test_seeds_one_run_per_row():
    assert {record["seeds"] for record in _ame().values()} == {1}


def test_japanese_vectors_rcsls_with_the_coco_hyper_parameters():
    """Row 'Japanese vectors': Section 4.1, aligned with RCSLS as the MS-COCO setting."""
    vectors = paper_config()["retrieval"]["vectors"]
    assert vectors["rotated"] == {
        "ja": "https://dl.fbaipublicfiles.com/fasttext/vectors-crawl/cc.ja.300.vec.gz"
    }
    coco = paper_variant("ame_coco_ame_sym")["alignment"]
    assert vectors["rotation"] == {
        "method": "rcsls",
        "knn": coco["knn"],
        "lr": coco["lr"],
        "iterations": 10,
        "sections": coco["sections"]["train"],
        "limit": 200000,
        "output": "all",  # align.py --output: every word of the file mapped
    }


def test_installed_mecab_dictionary_is_unidic_lite():
    """Row 'MeCab dictionary': the dictionary fugashi finds installed (no config key chooses
    it), unidic-lite, and the docs say so."""
    import fugashi

    from mlmm.data.coco import tokenise_japanese

    info = fugashi.Tagger().dictionary_info[0]
    assert "unidic_lite" in info["filename"]
    assert tokenise_japanese("犬が 走る") == ["犬", "が", "走る"]
    assert "unidic-lite" in SECTION
