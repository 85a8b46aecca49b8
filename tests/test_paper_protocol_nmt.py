"""Calixto & Liu 2017 Table 3 (NMT 20-best reranking): what docs/fidelity.md's section cites,
and the systems the paper configuration's retrieval variants make possible.

The section's configured values are held by behaviour tests that run the NMT model, its training
and the planned workflow (tests/test_paper_protocol_behaviour.py).
"""

from __future__ import annotations

from helpers.paper_config import REPO, paper_config  # tests/ on sys.path

from mlmm.nmt.selection import select

FIDELITY = (REPO / "docs" / "fidelity.md").read_text(encoding="utf-8")
SECTION = FIDELITY.split("## Calixto & Liu 2017, Table 3")[1].split("\n## ")[0]


def test_docs_rows_and_the_sample_config_version():
    assert "e9dac75" in SECTION and "2017-06-30" in SECTION
    assert "Adam lr 1e-4 with dropout" not in (REPO / "docs" / "nmt.md").read_text("utf-8")


def test_every_table3_row_has_its_retrieval_variants():
    """Row 'fewer retrieval variants': the paper config trains every variant its rows need."""
    config = paper_config()
    features, systems, warnings = select(config["nmt"], set(config["retrieval"]["run"]))
    assert warnings == [] and set(config["nmt"]["systems"]) <= set(systems)
    assert set(features) == set(config["nmt"]["embedding_features"])
