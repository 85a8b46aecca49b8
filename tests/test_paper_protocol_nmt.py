"""Calixto & Liu 2017 Table 3 (NMT 20-best reranking) protocol values, one test per row of
docs/fidelity.md's "Calixto & Liu 2017, Table 3" section.

Each test reads the resolved paper configuration (``helpers.paper_config``): a value changed in
config/paper.yaml, config.yaml or the schema without docs/fidelity.md fails here.
"""

from __future__ import annotations

from helpers.paper_config import REPO, paper_config  # tests/ on sys.path

from mlmm.nmt.selection import select

FIDELITY = (REPO / "docs" / "fidelity.md").read_text(encoding="utf-8")
SECTION = FIDELITY.split("## Calixto & Liu 2017, Table 3")[1].split("\n## ")[0]
SYSTEMS = {
    "nmt": [],
    "vse": ["NMT", "VSEimg"],
    "mlmme_beta1": ["NMT", "MLMMEb1img", "MLMMEb1src"],
    "mlmme_beta075": ["NMT", "MLMMEb075img", "MLMMEb075src"],
    "mlmme_beta05": ["NMT", "MLMMEb05img", "MLMMEb05src"],
    "mlmme_beta025": ["NMT", "MLMMEb025img", "MLMMEb025src"],
}


def _nmt() -> dict:
    return paper_config()["nmt"]


def test_docs_rows_and_the_sample_config_version():
    assert "e9dac75" in SECTION and "2017-06-30" in SECTION
    assert "Adam lr 1e-4 with dropout" not in (REPO / "docs" / "nmt.md").read_text("utf-8")


def test_reranking_features_are_log_p_plus_the_distances():
    """Row 'reranking features': Section 5; the word-penalty control is no paper row."""
    systems = _nmt()["systems"]
    for name, features in SYSTEMS.items():
        assert systems[name]["features"] == features, name
    paper_rows = {name for name, record in systems.items() if "not in the paper" not in
                  record["system"]}
    assert paper_rows == set(SYSTEMS)


def test_decoder_is_nematus_cgru_with_2x_attention():
    model = _nmt()["model"]
    assert model["decoder"] == "cgru"
    assert model["attention"] == 2 * model["hidden"]


def test_sizes_are_the_wmt16_sample_config():
    """Row 'sizes': dim_word 500, dim 1024, batch_size 80."""
    nmt = _nmt()
    assert (nmt["model"]["embedding"], nmt["model"]["hidden"]) == (500, 1024)
    assert nmt["train"]["batch_size"] == 80


def test_optimiser_is_the_sample_configs_adadelta():
    """Row 'optimiser': optimizer='adadelta' (lrate unused), clip_c 1 (TrainConfig.clip)."""
    from mlmm.nmt.train import TrainConfig

    assert _nmt()["train"]["optimizer"] == "adadelta"
    assert TrainConfig().clip == 1.0


def test_no_dropout_as_the_sample_config():
    """Row 'dropout': use_dropout=False."""
    assert _nmt()["model"]["dropout"] == 0.0


def test_training_pairs_shorter_than_50_tokens():
    """Row 'sentence length': maxlen=50."""
    assert _nmt()["train"]["max_length"] == 50


def test_vocabulary_is_word_level_without_bpe():
    """Row 'vocabulary': BPE not reproduced, every training word kept."""
    assert _nmt()["train"]["min_count"] == 1
    assert "BPE is not reproduced" in SECTION


def test_selection_is_greedy_bleu_per_epoch():
    """Row 'model selection': greedy validation BLEU each epoch, patience 5, 30 epochs."""
    train = _nmt()["train"]
    assert (train["max_epochs"], train["patience"]) == (30, 5)


def test_meteor_is_the_full_distribution_with_paraphrases():
    """Row 'METEOR': METEOR 1.5 with the German paraphrase table, required at planning."""
    nmt = _nmt()
    assert nmt["meteor_jar"] == "meteor-1.5/meteor-1.5.jar"
    assert nmt["meteor_paraphrase"] == "required"
    assert nmt["tgt"] == "de"


def test_device_auto():
    assert _nmt()["device"] == "auto"


def test_every_table3_row_has_its_retrieval_variants():
    """Row 'fewer retrieval variants': the paper config trains every variant its rows need."""
    config = paper_config()
    features, systems, warnings = select(config["nmt"], set(config["retrieval"]["run"]))
    assert warnings == [] and set(SYSTEMS) <= set(systems)
    assert set(features) == set(config["nmt"]["embedding_features"])
