"""Mohammadshahi et al. 2019 (AME): what docs/fidelity.md's AME section cites, and the MeCab
dictionary the Japanese captions are tokenised with (installed, chosen by no config key).

The section's configured values are held by behaviour tests that run each record
(tests/test_paper_protocol_behaviour.py and the tests docs/fidelity.md names per row).
"""

from __future__ import annotations

from helpers.paper_config import REPO  # tests/ on sys.path

FIDELITY = (REPO / "docs" / "fidelity.md").read_text(encoding="utf-8")
SECTION = FIDELITY.split("## Mohammadshahi et al. 2019 (AME)")[1].split("\n## ")[0]


def test_docs_cite_ame_cmr_at_the_papers_version():
    assert "2463a85" in SECTION and "2019-09-23" in SECTION
    assert "8263f53" in SECTION and "a2d195d" in SECTION  # vocab.py, adjust_lexicons.py: later


def test_installed_mecab_dictionary_is_unidic_lite():
    """Row 'MeCab dictionary': the dictionary fugashi finds installed (no config key chooses
    it), unidic-lite, and the docs say so."""
    import fugashi

    from mlmm.data.coco import tokenise_japanese

    info = fugashi.Tagger().dictionary_info[0]
    assert "unidic_lite" in info["filename"]
    assert tokenise_japanese("犬が 走る") == ["犬", "が", "走る"]
    assert "unidic-lite" in SECTION
