"""Kádár et al. 2018: what docs/fidelity.md's Kádár section cites.

The section's values are held by behaviour tests that run each record
(tests/test_paper_protocol_behaviour.py, tests/test_kadar_sampling.py); the page shows each value
beside its source and is regenerated from the configuration (tests/test_fidelity_registry.py).
"""

from __future__ import annotations

from helpers.paper_config import REPO  # tests/ on sys.path

FIDELITY = (REPO / "docs" / "fidelity.md").read_text(encoding="utf-8")


def test_docs_cite_mulisera_master_at_the_papers_version():
    section = FIDELITY.split("## Kádár et al. 2018")[1].split("\n## ")[0]
    assert "d346426" in section and "2018-09-14" in section
    for dev_commit in ("1e4366a", "889a5a0", "all_scipts.txt"):
        assert dev_commit not in section, f"{dev_commit} is a post-paper dev commit"
