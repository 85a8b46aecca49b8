"""Rajendran et al. 2016 protocol values, one test per row of docs/fidelity.md's Rajendran
sections.

Each test reads the resolved paper configuration (``tests/paper_config.py``): a value changed in
config/paper.yaml, config.yaml or the schema without docs/fidelity.md fails here.
"""

from __future__ import annotations

from paper_config import REPO, paper_config  # tests/ on sys.path

from mlmm.pivot import nmt_records

FIDELITY = (REPO / "docs" / "fidelity.md").read_text(encoding="utf-8")


def _fidelity_row(section: str, point: str) -> str:
    body = FIDELITY.split(f"## {section}")[1].split("\n## ")[0]
    rows = [line for line in body.splitlines() if line.startswith(f"| {point} |")]
    assert len(rows) == 1, f"one row {point!r} in {section}"
    return rows[0]


def test_table5_corrnet_mt_is_an_x_to_en_nmt_on_z2_with_the_one_recipe():
    """Row 'CorrNet + MT rows': Section 6 and footnote 4 (Moses on Z2); ours: the project's NMT,
    fr->en and de->en on the Z2 talks, the recipe of `nmt` unchanged, beam 12, cut at 100."""
    config = paper_config()
    records = nmt_records(config)
    assert set(records) == {"fr", "de"}
    for x, record in records.items():
        assert (record["src"], record["tgt"], record["data"]) == (x, "en", "z2")
        assert record["model"] == config["nmt"]["model"], "the Z2 NMT follows nmt.model"
        assert record["train"] == config["nmt"]["train"], "the Z2 NMT follows nmt.train"
        assert record["beam"] == 12  # wmt16-scripts sample/translate.sh: -k 12
        assert record["max_length"] == 100  # Moses: sentences over 100 words eliminated
    assert config["pivot"]["ted"] == "ted"  # Z2 = the TED stage's ted-cldc corpus
    row = _fidelity_row("Rajendran et al. 2016, Table 5", "CorrNet + MT rows")
    for fact in ("footnote 4", "Moses", "`pivot.mt.beam: 12`", "`pivot.mt.max_length: 100`",
                 "fr->en and de->en", "NMT; the paper used Moses"):  # fmt: skip
        assert fact in row, fact
    assert "names no MT system" not in row and "not regenerated" not in row


def test_table5_corrnet_mt_z2_nmt_validates_on_the_pivot_held_out_talks():
    """Row 'CorrNet + MT rows': NMT validation = the Z2 talks the pivot stage holds out for
    lambda (same fraction, cap and seed: pivot_mt_data passes the pivot keys)."""
    pivot = paper_config()["pivot"]
    assert (pivot["validation_fraction"], pivot["validation_max"], pivot["seed"]) == (0.1, 1000, 1)
    rules = (REPO / "workflow/rules/pivot.smk").read_text(encoding="utf-8")
    rule = rules.split("rule pivot_mt_data:")[1].split("\nrule ")[0]
    for key in ("validation_fraction", "validation_max", "seed"):
        assert f"PIVOT['{key}']" in rule, key
