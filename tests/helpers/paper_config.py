"""The paper configuration as a run sees it, for the tests that pin its protocol values.

``config.yaml`` with ``config/paper.yaml`` merged on top (as Snakemake merges ``--configfile``),
validated against the schema (defaults filled), and each retrieval variant resolved
(``variant_defaults() <- retrieval.defaults <- the variant``). A protocol test reads these,
never the raw YAML, so that a value changed anywhere along that chain (schema default,
defaults section, variant) is what it sees.
"""

from __future__ import annotations

import functools
from pathlib import Path

import yaml

from mlmm.config import validate_config
from mlmm.retrieval.config import merge_config, resolve_variant

REPO = Path(__file__).resolve().parents[2]
PAPER = REPO / "config" / "paper.yaml"
SCHEMA = REPO / "workflow" / "schemas" / "config.schema.yaml"


@functools.lru_cache(maxsize=1)
def _paper_config() -> dict:
    base = yaml.safe_load((REPO / "config.yaml").read_text(encoding="utf-8"))
    merged = merge_config(base, yaml.safe_load(PAPER.read_text(encoding="utf-8")))
    return validate_config(merged, SCHEMA, [REPO / "config.yaml", PAPER])


def paper_config() -> dict:
    """The merged, validated paper configuration (a fresh copy: tests may not share edits)."""
    import copy

    return copy.deepcopy(_paper_config())


def paper_variant(name: str) -> dict:
    """Retrieval variant ``name`` of the paper configuration, fully resolved."""
    section = _paper_config()["retrieval"]
    assert name in section["run"], f"{name} is not run by config/paper.yaml"
    return resolve_variant(section, name, str(PAPER))


def paper_variants(prefix: str = "") -> dict[str, dict]:
    """Every retrieval variant the paper configuration runs whose name starts with ``prefix``."""
    section = _paper_config()["retrieval"]
    return {
        name: resolve_variant(section, name, str(PAPER))
        for name in section["run"]
        if name.startswith(prefix)
    }
