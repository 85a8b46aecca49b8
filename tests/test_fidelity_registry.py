"""The fidelity registry (src/mlmm/fidelity/*.yaml) holds every protocol value of the resolved
paper configuration, docs/fidelity.md is generated from it, and a change to any registered value
fails the check (the mutation test below changes each one in memory)."""

from __future__ import annotations

import copy
import re

import pytest
import yaml
from helpers.paper_config import PAPER, REPO, SCHEMA

import mlmm.fidelity as fidelity
from mlmm.config import validate_config
from mlmm.retrieval.config import merge_config, protocol_notes, resolve_variant


def _leaves(paper: dict | None = None) -> dict:
    base = yaml.safe_load((REPO / "config.yaml").read_text(encoding="utf-8"))
    if paper is None:
        paper = yaml.safe_load(PAPER.read_text(encoding="utf-8"))
    config = validate_config(merge_config(base, paper), SCHEMA)
    return fidelity.protocol_leaves(config)


@pytest.fixture(scope="module")
def leaves() -> dict:
    return _leaves()


def test_every_protocol_leaf_of_the_paper_config_has_its_registry_value(leaves):
    problems = fidelity.check(leaves)
    assert not problems, "\n".join(problems[:20]) + f"\n({len(problems)} problems)"


def test_docs_fidelity_is_generated_from_the_registry(leaves):
    page = (REPO / "docs" / "fidelity.md").read_text(encoding="utf-8")
    assert page == fidelity.render(leaves) + "\n", (
        "docs/fidelity.md differs from the registry: run `python -m mlmm.fidelity`"
    )


def _mutated(value):
    """A value of the leaf's kind that differs from it."""
    if isinstance(value, bool):
        return not value
    if isinstance(value, int | float):
        return value * 2 + 1
    if isinstance(value, str):
        return value + "_changed"
    if value is None:
        return 0
    if isinstance(value, list):
        return value[:-1] if value else ["changed"]
    if isinstance(value, dict):
        return {**value, "changed": 1}
    raise AssertionError(f"a leaf of kind {type(value).__name__}")


def test_every_registered_leaf_changed_fails_the_check(leaves):
    """Each registered leaf changed on its own fails the per-leaf check that ``check`` applies
    to every leaf, and all of them changed at once are each named by ``check``."""
    registered = [k for k in leaves if fidelity.entry_for(k)[0] == "registered"]
    assert len(registered) > 3000  # every resolved variant's values, not a sample
    missed = [k for k in registered if fidelity.leaf_problem(k, _mutated(leaves[k])) is None]
    assert not missed, missed
    changed = {k: (_mutated(v) if k in registered else v) for k, v in leaves.items()}
    named = {line.split(" ", 1)[0] for line in fidelity.check(changed)}
    assert set(registered) <= named


def _set(paper: dict, dotted: str, value) -> None:
    node = paper
    *parents, last = dotted.split(".")
    for part in parents:
        node = node.setdefault(part, {})
    node[last] = value


# Values that a hand-kept list of pins missed (issue 28), changed in config/paper.yaml itself so
# that the change travels through the schema, retrieval.defaults and the variants' merges.
GAPS = {
    "retrieval.defaults.min_count": 5,
    "retrieval.defaults.seeds": 5,
    "features.weights": "DEFAULT",
    "nmt.embedding_features.VSEimg.variant": "calixto_vse_en",
    "retrieval.variants.kadar4_bi_translation.validation": {"portion": "comparable"},
    "retrieval.variants.kadar7_multi_comparable_fr.train_data": [
        {"portion": "translation", "languages": ["en", "de", "fr", "cs"]}
    ],
    "retrieval.variants.kadar_mono_en.test": {"portion": "translation"},
    "retrieval.variants.kadar_bi.test": {"portion": "translation"},
    "retrieval.variants.kadar4_mono_de.test": {"split": "val"},
    "retrieval.variants.kadar5_bi_disjoint.test": {"images": [0, 500]},
    "retrieval.variants.kadar7_multi_cs.test": {"portion": "comparable"},
}


@pytest.mark.parametrize("key", sorted(GAPS))
def test_known_gaps_changed_in_the_paper_yaml_fail_the_check(key):
    paper = yaml.safe_load(PAPER.read_text(encoding="utf-8"))
    _set(paper, key, copy.deepcopy(GAPS[key]))
    assert fidelity.check(_leaves(paper))


def test_a_new_protocol_value_without_an_entry_fails(leaves):
    assert fidelity.check({**leaves, "nmt.train.label_smoothing": 0.1})


def test_every_test_named_in_the_registry_exists():
    """The docs cannot say that a test holds a value when no such test exists: every test name
    under "held by" is a test function of tests/ (``test_x_*`` names a family by its prefix)."""
    defined = set()
    for path in (REPO / "tests").glob("test_*.py"):
        defined |= set(re.findall(r"^\s*def (test_\w+)", path.read_text(encoding="utf-8"), re.M))
    missing = []
    for _, _, row in fidelity.rows():
        for name in re.findall(r"\b(test_\w+)\b(?!\.py)", str(row.get("held_by") or "")):
            if name.endswith("_") and any(d.startswith(name) for d in defined):
                continue
            if name not in defined:
                missing.append((row["point"], name))
    assert not missing, missing


def test_non_protocol_leaves_are_a_short_list_each_matching_something(leaves):
    excluded = [k for k in leaves if fidelity.entry_for(k)[0] == "excluded"]
    for pattern in fidelity.excluded():
        assert any(pattern.matches(tuple(k.split("."))) for k in excluded), pattern.text
    assert len(fidelity.excluded()) <= 25


def test_table_notes_of_each_reading_come_from_the_registry():
    section = yaml.safe_load(PAPER.read_text(encoding="utf-8"))["retrieval"]
    base = yaml.safe_load((REPO / "config.yaml").read_text(encoding="utf-8"))["retrieval"]
    section["defaults"] = merge_config(base["defaults"], section["defaults"])
    record = resolve_variant(section, "kadar5_bi_overlap_c2c", str(PAPER))
    notes = protocol_notes(record)
    drawn = fidelity.reading("image_subset.draw", "shared")["note"]
    assert any(drawn in note for note in notes)
    record["image_subset"]["draw"] = "per-language"
    other = fidelity.reading("image_subset.draw", "per-language")["note"]
    assert any(other in note for note in protocol_notes(record))


@pytest.mark.parametrize(
    ("key", "value", "keys"),
    [
        ("tokens", "nltk", {}),
        (
            "count_words",
            "joint",
            {
                "train_data": [{"portion": "comparable", "languages": ["en", "de"]}],
                "select_language": ["en", "de"],
            },
        ),
        ("unknown_word_init", "normal", {"word_embeddings": "pretrained"}),
    ],
)
def test_code_reading_notes_are_the_registry_notes(key, value, keys):
    from mlmm.retrieval.config import DEFAULTS

    record = {**merge_config(DEFAULTS, {**keys, key: value}), "paper_rows": []}
    assert fidelity.reading(key, value)["note"] in protocol_notes(record)
    assert fidelity.reading(key, DEFAULTS[key])["note"] not in protocol_notes(
        {**record, key: DEFAULTS[key]}
    )
