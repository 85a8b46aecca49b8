"""Rajendran et al. 2016, docs/fidelity.md's two Rajendran sections (Tables 1, 3, 4: TED
CLDC; Table 5 with Tables 6 and 7: pivot retrieval): the sections' citations, and mechanisms
run on small hand examples with the values of the resolved paper configuration
(``helpers.paper_config``). The CorrNet trainings and the planned jobs of both stages are held by
tests/test_paper_protocol_behaviour.py; the CorrNet+MT row of Table 5 by its own
``test_table5_corrnet_mt_*`` tests.
"""

from __future__ import annotations

import numpy as np
import pandas as pd
from helpers.paper_config import REPO, paper_config  # tests/ on sys.path

from mlmm.pivot import nmt_records

FIDELITY = (REPO / "docs" / "fidelity.md").read_text(encoding="utf-8")
PAPER_TABLES = REPO / "resources" / "paper_tables"
CLDC_SECTION = FIDELITY.split("## Rajendran et al. 2016, Tables 1, 3, 4")[1].split("\n## ")[0]
PIVOT_SECTION = FIDELITY.split("## Rajendran et al. 2016, Table 5")[1].split("\n## ")[0]


def _ted() -> dict:
    return paper_config()["ted"]


def _rows(section: str) -> list[str]:
    return [line.split("|")[1].strip() for line in section.splitlines() if line.startswith("| ")]


def test_rajendran_sections_cite_the_papers_sections():
    """The paper has Sections 3 (model), 4.1-4.2 (data), 5/5.1/5.2 (TED), 6/6.1 (pivot): no 4.3."""
    assert "Section 4.3" not in CLDC_SECTION + PIVOT_SECTION
    assert "Section 5.1" in CLDC_SECTION and "Section 6.1" in PIVOT_SECTION
    assert {"vocabulary", "classifier", "Table 4"} <= set(_rows(CLDC_SECTION))
    assert {"image feature scaling", "Tables 6 and 7"} <= set(_rows(PIVOT_SECTION))


# --- Tables 1, 3, 4 (TED CLDC) -------------------------------------------------------------


def test_cldc_reader_skips_markup_lines(tmp_path):
    """Row '.ted lines starting with <': karlmoritz/bicvm load_doc.cc skips them."""
    from mlmm.ted.corpus import read_document

    talk = tmp_path / "1.ted"
    talk.write_text("<title> ignored </title>\nhaus_de baum_de\n", encoding="utf-8")
    assert read_document(talk, "de") == ["haus", "baum"]


def test_cldc_reader_strips_the_language_suffix(tmp_path):
    """Row 'language suffix of tokens': suffixed and plain transcripts read alike, lowercased."""
    from mlmm.ted.corpus import read_document

    suffixed, plain = tmp_path / "a.ted", tmp_path / "b.ted"
    suffixed.write_text("Haus_de _de\n", encoding="utf-8")
    plain.write_text("Haus _de\n", encoding="utf-8")
    assert read_document(suffixed, "de") == read_document(plain, "de") == ["haus", "_de"]


def test_cldc_vocabulary_keeps_words_seen_min_count_times_in_all_talks():
    """Row 'vocabulary': Section 5.1, words seen ``ted.min_count`` times over every talk are
    kept (counted across talks), one seen once fewer is not."""
    from mlmm.ted.bow import vocabulary

    threshold = _ted()["min_count"]
    talks = [["a"] * threshold + ["b"] * (threshold - 1), ["b"], ["c"] * (threshold - 1)]
    words, counts = vocabulary(talks, threshold)
    assert (words, counts) == (["a", "b"], [threshold, threshold])


def test_cldc_classifier_is_an_averaged_perceptron_of_the_configured_epochs():
    """Row 'classifier': Section 5 step 1, an averaged perceptron trained for
    ``ted.perceptron_epochs`` epochs."""
    from mlmm.ted.classify import perceptron

    epochs = _ted()["perceptron_epochs"]
    model = perceptron(epochs)
    assert (model.loss, model.average, model.max_iter, model.penalty) == (
        "perceptron",
        True,
        epochs,
        None,
    )


def test_cldc_doc_add_rows_are_copied_from_the_paper():
    """Row 'DOC/ADD rows': the paper's Table 2 (110 cells) is shipped, never regenerated."""
    table2 = pd.read_csv(PAPER_TABLES / "rajendran2016_table2.csv")
    assert len(table2) == 110 and set(table2["system"]) == {"DOC/ADD (Hermann & Blunsom, 2014b)"}


def test_table4_queries_are_the_papers_words_and_neighbour_count():
    """Row 'Table 4': Section 5.2, the configured query words and neighbour count are the
    paper table's (its shipped copy), in every language of ``ted.languages`` it lists."""
    from mlmm.results.ted_tables import paper_neighbours

    paper = paper_neighbours(PAPER_TABLES)
    ted = _ted()
    assert {word for word, _ in paper} == set(ted["table4_words"])
    assert {lang for _, lang in paper} <= set(ted["languages"])
    assert {len(words) for words in paper.values()} == {ted["table4_k"]}


# --- Table 5, Tables 6 and 7 (pivot image-caption retrieval) -----------------------------


def test_pivot_test_scores_are_negative_euclidean_distances():
    """Row 'test protocol': Section 6, Euclidean distance between the codes."""
    from mlmm.pivot.models import distance_scores

    scores = distance_scores(np.array([[0.0, 0.0]]), np.array([[3.0, 4.0], [1.0, 0.0]]))
    np.testing.assert_allclose(scores, [[-5.0, -1.0]])


def test_pivot_mic_tokens_follow_the_training_text():
    """Row 'tokenisation': fr/de like ted-cldc (elisions whole), en like Karpathy's tokens."""
    from mlmm.data.coco import tokenise_mic

    assert tokenise_mic("L'huile, chaude.", "fr") == ["l'huile", ",", "chaude", "."]
    assert tokenise_mic("A dog, running.", "en") == ["a", "dog", "running"]


def _fidelity_row(section: str, point: str) -> str:
    body = FIDELITY.split(f"## {section}")[1].split("\n## ")[0]
    rows = [line for line in body.splitlines() if line.startswith(f"| {point} |")]
    assert len(rows) == 1, f"one row {point!r} in {section}"
    return rows[0]


def test_table5_corrnet_mt_is_an_x_to_en_nmt_on_z2_with_the_one_recipe():
    """Row 'CorrNet + MT rows': Section 6 and footnote 4 (Moses on Z2); ours: the project's NMT,
    X->en on the Z2 talks for each pivot language, the recipe of `nmt` unchanged, the beam and
    length cut of `pivot.mt`."""
    config = paper_config()
    records = nmt_records(config)
    assert set(records) == set(config["pivot"]["languages"])
    for x, record in records.items():
        assert (record["src"], record["tgt"], record["data"]) == (x, "en", "z2")
        assert record["model"] == config["nmt"]["model"], "the Z2 NMT follows nmt.model"
        recipe = {k: v for k, v in record["train"].items() if k != "max_length"}
        assert recipe == {k: v for k, v in config["nmt"]["train"].items() if k != "max_length"}
        assert record["beam"] == config["pivot"]["mt"]["beam"]
        # one cut, data and trainer: Moses's "sentences longer than 100 words"
        assert record["max_length"] == record["train"]["max_length"]
        assert record["max_length"] == config["pivot"]["mt"]["max_length"]
    row = _fidelity_row("Rajendran et al. 2016, Table 5", "CorrNet + MT rows")
    for fact in ("footnote 4", "Moses", "`-k 12 -n -p 1`", "`pivot.mt.max_length`",
                 "fr->en and de->en", "NMT; the paper used Moses"):  # fmt: skip
        assert fact in row, fact
    assert "names no MT system" not in row and "not regenerated" not in row


def test_table5_corrnet_mt_z2_nmt_validates_on_the_pivot_held_out_talks():
    """Row 'CorrNet + MT rows': NMT validation = the Z2 talks the pivot stage holds out for
    lambda (same fraction, cap and seed: pivot_mt_data's record holds the pivot keys that
    pivot_train's does)."""
    from mlmm.records import record_of

    pivot = paper_config()["pivot"]
    rules = (REPO / "workflow/rules/pivot.smk").read_text(encoding="utf-8")
    rule = rules.split("rule pivot_mt_data:")[1].split("\nrule ")[0]
    assert 'record_of("pivot-mt-data", PIVOT)' in rule
    data, train = record_of("pivot-mt-data", pivot), record_of("pivot-train", pivot)
    for key in ("validation_fraction", "validation_max", "seed"):
        assert data[key] == train[key] == pivot[key], key
