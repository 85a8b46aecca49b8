"""Kádár et al. 2018 protocol values, one test per row of docs/fidelity.md's Kádár section.

Each test reads the resolved paper configuration (``helpers.paper_config``): a value changed in
config/paper.yaml, its defaults or the schema without docs/fidelity.md fails here.
"""

from __future__ import annotations

from helpers.paper_config import REPO, paper_variant, paper_variants  # tests/ on sys.path

from mlmm.retrieval.config import languages, select_languages

FIDELITY = (REPO / "docs" / "fidelity.md").read_text(encoding="utf-8")


def _multilingual(record: dict) -> bool:
    return len(languages(record)) > 1


def test_docs_cite_mulisera_master_at_the_papers_version():
    section = FIDELITY.split("## Kádár et al. 2018")[1].split("\n## ")[0]
    assert "d346426" in section and "2018-09-14" in section
    for dev_commit in ("1e4366a", "889a5a0", "all_scipts.txt"):
        assert dev_commit not in section, f"{dev_commit} is a post-paper dev commit"


def test_table5_halves_are_one_shared_draw_with_c2c_on_the_half():
    """Row 'Table 5 halves': Section 5.3 one random half; mulisera master per-language draws."""
    half = paper_variants("kadar5_")
    assert set(half) == {
        "kadar5_half_en",
        "kadar5_half_de",
        "kadar5_bi_overlap",
        "kadar5_bi_overlap_c2c",
        "kadar5_bi_disjoint",
    }
    for name, record in half.items():
        subset = record["image_subset"]
        assert subset["fraction"] == 0.5, name
        assert (subset["draw"], subset["c2c"]) == ("shared", "subset"), name
        want = "disjoint" if name == "kadar5_bi_disjoint" else "overlap"
        assert subset["assignment"] == want, name
    assert paper_variant("kadar5_bi_overlap_c2c")["c2c"] is True


def test_one_caption_per_image_c2c_reuses_the_c2i_sample():
    """Row '+c2c with one caption per image': T4 Bi-comparable, T6 Multi-comparable, Figure 3."""
    sampled = {
        name: record
        for name, record in paper_variants("kadar").items()
        if record["c2c"] and any(s.get("captions_per_image") for s in record["train_data"])
    }
    assert set(sampled) == {
        "kadar4_bi_comparable_c2c",
        "kadar6_multi_comparable_c2c",
        "kadar_figure3_bilingual",
        "kadar_figure3_multilingual",
    }
    assert all(record["c2c_captions"] == "shared" for record in sampled.values())
    for record in sampled.values():
        comparable = [s for s in record["train_data"] if s["portion"] == "comparable"]
        assert [s["captions_per_image"] for s in comparable] == [1]


def test_table6_multi_comparable_validates_on_the_comparable_portion():
    """Row 'T6 Multi-comparable validation': mulisera master README `--lang en-de-fr-cs
    --undersample` validates en/de on task 2 val (fr/cs: translations)."""
    for name in ("kadar6_multi_comparable", "kadar6_multi_comparable_c2c"):
        record = paper_variant(name)
        assert record["validation"]["portion"] == "comparable", name
        assert record["test"]["portion"] == "translation", name  # Table 6 scores translations
    assert paper_variant("kadar6_multi_translation")["validation"]["portion"] == "translation"


def test_figure3_selects_on_every_training_language_and_monolingual_runs_decay():
    """Row 'Figure 3': no --primary (sum over every language); epoch loop for one language."""
    figure = paper_variants("kadar_figure3_")
    assert len(figure) == 4
    for name, record in figure.items():
        if _multilingual(record):
            assert select_languages(record) == languages(record), name
            assert record["optimizer"]["decay_epochs"] is None, name
            assert record["early_stopping"]["every"] == 500, name
        else:
            assert select_languages(record) == languages(record), name
            assert record["optimizer"]["decay_epochs"] == 15, name
            assert record["early_stopping"]["every"] is None, name


def test_lr_schedule_decays_monolingual_runs_only():
    """Row 'lr schedule': master train.py calls adjust_learning_rate (lr_update 15) each epoch
    of the monolingual loop; joint_train (multilingual) never does."""
    for name, record in paper_variants("kadar").items():
        opt = record["optimizer"]
        assert opt["lr"] == 2e-4 and opt["decay_factor"] == 0.1, name
        want = None if _multilingual(record) else 15
        assert opt["decay_epochs"] == want, name


def test_selection_sums_every_training_language_except_table7():
    """Row 'selection': validate() summed over every loader unless --primary (Table 7)."""
    for name, record in paper_variants("kadar").items():
        if name.startswith("kadar7_"):
            assert select_languages(record) == [name.rsplit("_", 1)[1]], name
        else:
            assert select_languages(record) == languages(record), name
        assert record["select_by"] == "rsum", name


def test_stopping_patience_and_validation_interval():
    """Row 'stopping': patience 10; every 500 iterations (--val_step 500) when multilingual,
    every epoch when monolingual; --num_epochs 1000 a cap."""
    for name, record in paper_variants("kadar").items():
        stop = record["early_stopping"]
        assert stop["patience"] == 10 and record["epochs"] == 1000, name
        assert stop["every"] == (500 if _multilingual(record) else None), name


def test_model_loss_and_optimiser_sizes():
    """Rows 'loss', 'optimiser', 'batching' (the sizes: the behaviour test that builds each
    record's model, tests/test_paper_protocol_behaviour.py)."""
    for name, record in paper_variants("kadar").items():
        assert record["loss"] == "max", name
        assert (record["margin"], record["grad_clip"]) == (0.2, 2.0), name
        assert (record["batching"], record["c2c_probability"]) == ("switch", 0.5), name
        assert record["encoder"] == "shared" and record["backbone"] == "resnet50", name
