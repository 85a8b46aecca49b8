"""Calixto & Liu 2017 Tables 1-2: the STS sentences are tokenised as Multi30K's.

The section's configured values are held by behaviour tests that run each record
(tests/test_paper_protocol_behaviour.py and the tests docs/fidelity.md names per row).
"""

from __future__ import annotations


def test_sts_tokens_are_moses_escaped():
    """Row 'STS tokens': Multi30K lc.norm.tok, Moses-escaped, hyphenated words whole."""
    from mlmm.retrieval.sts import sts_tokens

    assert sts_tokens("The man's T-shirt.") == ["the", "man", "&apos;s", "t-shirt", "."]
