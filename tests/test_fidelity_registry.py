"""The fidelity registry (src/mlmm/fidelity/*.yaml) has a row (source and reading, no value) for
every protocol leaf of the resolved paper configuration, and docs/fidelity.md is generated from
the registry and that configuration: a changed value changes the page, which must be regenerated."""

from __future__ import annotations

import copy
import re

import pytest
import yaml
from helpers.paper_config import PAPER, REPO, SCHEMA

import mlmm.fidelity as fidelity
from mlmm.config import validate_config
from mlmm.results.protocol_notes import protocol_notes
from mlmm.retrieval.config import merge_config, resolve_variant


def _leaves(paper: dict | None = None) -> dict:
    base = yaml.safe_load((REPO / "config.yaml").read_text(encoding="utf-8"))
    if paper is None:
        paper = yaml.safe_load(PAPER.read_text(encoding="utf-8"))
    config = validate_config(merge_config(base, paper), SCHEMA)
    return fidelity.protocol_leaves(config)


@pytest.fixture(scope="module")
def leaves() -> dict:
    return _leaves()


def test_every_protocol_leaf_of_the_paper_config_has_its_registry_row(leaves):
    problems = fidelity.check(leaves)
    assert not problems, "\n".join(problems[:20]) + f"\n({len(problems)} problems)"


def test_docs_fidelity_is_generated_from_the_registry(leaves):
    page = (REPO / "docs" / "fidelity.md").read_text(encoding="utf-8")
    assert page == fidelity.render(leaves) + "\n", (
        "docs/fidelity.md differs from the registry: run `python -m mlmm.fidelity`"
    )


def _set(paper: dict, dotted: str, value) -> None:
    node = paper
    *parents, last = dotted.split(".")
    for part in parents:
        node = node.setdefault(part, {})
    node[last] = value


# Values changed in config/paper.yaml itself, so that the change travels through the schema,
# retrieval.defaults and the variants' merges into the generated page (its diff shows the change
# beside the row's source), and needs no second copy anywhere.
CHANGES = {
    "retrieval.defaults.min_count": 5,
    "retrieval.defaults.seeds": 5,
    "features.weights": "DEFAULT",
    "nmt.embedding_features.VSEimg.variant": "calixto_vse_en",
    "retrieval.variants.kadar4_bi_translation.validation": {"portion": "comparable"},
    "retrieval.variants.kadar7_multi_comparable_fr.train_data": [
        {"portion": "translation", "languages": ["en", "de", "fr", "cs"]}
    ],
    "retrieval.variants.kadar_mono_en.test": {"portion": "translation"},
    "retrieval.variants.kadar5_bi_disjoint.test": {"images": [0, 500]},
}


@pytest.mark.parametrize("key", sorted(CHANGES))
def test_a_value_changed_in_the_paper_yaml_changes_the_page(leaves, key):
    paper = yaml.safe_load(PAPER.read_text(encoding="utf-8"))
    _set(paper, key, copy.deepcopy(CHANGES[key]))
    changed = _leaves(paper)
    assert changed != leaves
    assert not fidelity.check(changed)
    assert fidelity.render(changed) != fidelity.render(leaves)


def test_the_registry_holds_no_value():
    """A row names its keys and sources; the values live in the configuration alone."""
    allowed = {"point", "paper", "ours", "held_by", "untested", "keys", "readings"}
    for name, _, row in fidelity.rows():
        assert set(row) <= allowed, (name, row["point"], set(row) - allowed)
        assert all(isinstance(key, str) for key in row.get("keys") or []), row["point"]
        assert all(isinstance(key, str) for key in row.get("readings") or []), row["point"]


def test_rows_without_a_behaviour_test_say_why():
    """A row's held_by names a test (function or file), or its untested says why none can."""
    for name, _, row in fidelity.rows():
        if not fidelity.names_a_test(row):
            assert len(str(row.get("untested") or "").split()) >= 5, (name, row["point"])
    assert not fidelity.names_a_test({"held_by": "paper `defaults`"})
    assert fidelity.names_a_test({"held_by": "`test_x`"})


def test_retrieval_config_does_not_import_the_registry():
    """The registry resolves records with mlmm.retrieval.config; that module reads the
    readings file itself, so the two do not import each other."""
    source = (REPO / "src" / "mlmm" / "retrieval" / "config.py").read_text(encoding="utf-8")
    assert not re.search(r"^\s*(from|import) mlmm\.fidelity", source, re.M)


def test_two_rows_claiming_one_key_equally_conflict():
    entry = fidelity.entry_for("retrieval.run")[1]
    same_row = fidelity.Pattern(entry.text, entry.segments, entry.row, "the same row")
    rival = fidelity.Pattern(entry.text, entry.segments, ("x", "y", "z"), "a rival row")
    assert fidelity.decide("retrieval.run", [entry, same_row])[0] == "registered"
    assert fidelity.decide("retrieval.run", [entry, rival])[0] == "conflict"
    narrower = fidelity.Pattern(
        "retrieval.ru*", fidelity._segments("retrieval.ru*"), ("x",) * 3, ""
    )
    assert fidelity.decide("retrieval.run", [entry, narrower])[1] is entry


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
    from mlmm.retrieval.config import variant_defaults

    default = variant_defaults()[key]
    record = {**merge_config(variant_defaults(), {**keys, key: value}), "paper_rows": []}
    assert fidelity.reading(key, value)["note"] in protocol_notes(record)
    assert fidelity.reading(key, default)["note"] not in protocol_notes({**record, key: default})
