"""Semantic checks after the schema and runs of another configuration.

Each check lives in one place (the schema, ``mlmm.config.validate_config``,
``mlmm.results.retrieval_tables``'s run loader, the NMT table builder); these tests enumerate
the members it covers: every numeric option of every subcommand, every seed of the schema.
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path

import pytest
import yaml
from helpers.one_line import message_lines

from mlmm.cli import build_parser, main
from mlmm.config import validate_config
from mlmm.errors import InputError
from mlmm.results import retrieval_tables as report
from mlmm.schema import CHECKS, SCHEMA_PATH, _resolve, check_options, schema

SEED_MAX = 2**32 - 1  # numpy.random.seed and default_rng(legacy) take 0..2**32-1


def _subparsers() -> dict[str, argparse.ArgumentParser]:
    parser = build_parser()
    action = next(a for a in parser._actions if isinstance(a, argparse._SubParsersAction))
    return dict(action.choices)


def _numeric_options() -> list[tuple[str, argparse.Action, dict]]:
    out = []
    for name, sub in _subparsers().items():
        checks = sub.get_default(CHECKS) or {}
        out += [(name, a, checks) for a in sub._actions if a.type in (int, float)]
    return out


def test_every_numeric_option_of_every_subcommand_is_bound_to_a_schema_range():
    """A number a subcommand takes without a range (pivot-translate --beam 0) would run and
    fail late or score nothing: each is a ``checked_option`` naming its schema key."""
    options = _numeric_options()
    unbound = [(name, a.option_strings) for name, a, checks in options if a.dest not in checks]
    assert unbound == []
    assert len(options) >= 50  # 56 when written; a fall means the walk lost subcommands


def _seed_options() -> list[tuple[str, str, str]]:
    return [
        (name, *checks[a.dest])
        for name, a, checks in _numeric_options()
        if a.dest in checks and checks[a.dest][1].rsplit(".", 1)[-1] in ("seed", "run_seed")
    ]


@pytest.mark.parametrize("command, option, pointer", _seed_options())
def test_a_seed_beyond_what_numpy_takes_is_refused_before_the_command_runs(
    command, option, pointer
):
    args = argparse.Namespace(seed=SEED_MAX + 1, **{CHECKS: {"seed": (option, pointer)}})
    with pytest.raises(InputError, match=f"{option}: expected a number <= {SEED_MAX}"):
        check_options(args)
    check_options(argparse.Namespace(seed=SEED_MAX, **{CHECKS: {"seed": (option, pointer)}}))


def _seed_nodes(node, path=()):
    """(dotted path, schema node) of every property named seed/seeds/run_seed."""
    if isinstance(node, dict):
        for key, value in (node.get("properties") or {}).items():
            if key in ("seed", "seeds", "run_seed"):
                yield ".".join((*path, key)), value
            yield from _seed_nodes(value, (*path, key))
        for key in ("$defs", "items"):
            if isinstance(node.get(key), dict):
                inner = node[key] if key == "items" else {"properties": node[key]}
                yield from _seed_nodes(inner, (*path, key))


def test_every_seed_of_the_schema_stops_at_two_to_the_32():
    nodes = list(_seed_nodes(schema()))
    assert len(nodes) >= 12
    assert [p for p, node in nodes if _resolve(node).get("maximum") != SEED_MAX] == []


def test_a_seed_too_large_for_numpy_is_refused_at_planning_time(tmp_path):
    source = tmp_path / "config.yaml"
    source.write_text("demo_world: {seed: 4294967296}\n")
    config = yaml.safe_load(source.read_text())
    with pytest.raises(InputError, match="key 'demo_world.seed': expected a number <= 4294967295"):
        validate_config(config, SCHEMA_PATH, [source])


@pytest.mark.parametrize("pair, key", [({"src": "fr"}, "nmt.src"), ({"tgt": "cs"}, "nmt.tgt"),
                                       ({"src": "de", "tgt": "en"}, "nmt.src")])
def test_an_nmt_pair_other_than_the_tables_is_refused_at_planning_time(pair, key, tmp_path):
    """Calixto & Liu Table 3 is English-German; nmt.src: fr would be labelled en-de."""
    source = tmp_path / "config.yaml"
    source.write_text(yaml.safe_dump({"nmt": pair}))
    with pytest.raises(InputError, match=f"key '{key}': expected the pair en-de"):
        validate_config(yaml.safe_load(source.read_text()), SCHEMA_PATH, [source])


# ------------------------------------------------------------------------------------------
# table builders: one run per (variant, seed), runs of the configuration they are read under

SECTION = {"variants": {"v": {"epochs": 3, "paper_rows": []}}}


def _run(root: Path, name: str, seed: int, record: dict | None = None) -> Path:
    path = root / name / "metrics.json"
    path.parent.mkdir(parents=True)
    provenance = {"config": {"retrieval": record}} if record is not None else {}
    path.write_text(json.dumps({"variant": "v", "seed": seed, "test": {},
                                "provenance": provenance}))
    return path


def test_the_same_run_twice_is_not_two_seeds(tmp_path):
    first = _run(tmp_path, "a", 1)
    copy = _run(tmp_path, "b", 1)
    with pytest.raises(InputError, match=f"variant 'v' seed 1 already read from {first}"):
        report.load_runs([first, copy], SECTION)
    assert len(report.load_runs([first, _run(tmp_path, "c", 2)], SECTION)) == 2


def test_a_run_of_another_configuration_is_refused(tmp_path):
    from mlmm.retrieval.config import resolve_variant

    record = json.loads(json.dumps(resolve_variant(SECTION, "v")))
    same = _run(tmp_path, "same", 1, record)
    assert len(report.load_runs([same], SECTION)) == 1
    other = _run(tmp_path, "other", 2, {**record, "epochs": 7, "device": "cuda"})
    with pytest.raises(InputError, match=r"key 'provenance.config.retrieval.epochs': expected "
                                         r"a run of retrieval.variants.v .*found epochs = 7"):
        report.load_runs([other], SECTION)


def _mt_metrics(path: Path, language: str = "de", seed: int = 1) -> Path:
    path.write_text(json.dumps({
        "system": "NMT", "variant_note": "", "scores": {"BLEU": 30.0},
        "provenance": {"config": {"language": language}, "seed": seed},
    }))  # fmt: skip
    return path


@pytest.mark.parametrize("damage", ["duplicate", "language"])
def test_nmt_table_refuses_a_copied_run_and_another_pair(damage, tmp_path, capsys):
    one = _mt_metrics(tmp_path / "one.json")
    two = _mt_metrics(tmp_path / "two.json", language="fr" if damage == "language" else "de")
    assert main(["nmt-table", "--metrics", str(one), str(two), "--out", str(tmp_path / "t")]) == 2
    (line,) = message_lines(capsys.readouterr().err)
    assert line.startswith(f"mlmm nmt-table: error: {two}")
    assert not (tmp_path / "t.csv").exists()


# ------------------------------------------------------------------------------------------
# vector coverage and the lexicon's direction (mlmm.retrieval.word_embeddings, align)


def _vec(path: Path, words: list[str], dim: int = 2) -> Path:
    path.write_text(f"{len(words)} {dim}\n" + "".join(f"{w} 1 0\n" for w in words))
    return path


@pytest.mark.parametrize("covered, refused", [(["hund", "katze"], False), (["dog"], True)])
def test_vectors_covering_too_little_of_the_vocabulary_are_refused(covered, refused, tmp_path):
    """wiki.en vectors saved as wiki.de.align.vec cover almost no German word."""
    from types import SimpleNamespace

    import torch

    from mlmm.retrieval.word_embeddings import load_vectors

    words = ["de:hund", "de:katze", "de:mann"]
    vocab = SimpleNamespace(words=words, index={w: i for i, w in enumerate(words)})
    model = SimpleNamespace(text={"shared": SimpleNamespace(embed=torch.nn.Embedding(3, 2))})
    _vec(tmp_path / "wiki.de.align.vec", [*covered, "dog", "cat"])
    record = {"embed_dim": 2, "word_embeddings": "fme", "unknown_word_init": "uniform"}
    vocabs = SimpleNamespace(vocabs={"shared": vocab})
    if refused:
        with pytest.raises(InputError, match=r"wiki.de.align.vec: expected vectors for at least "
                                             r"50% of the 3 de training words, found 0 \(0%\)"):
            load_vectors(model, vocabs, ["de"], record, tmp_path)
    else:
        load_vectors(model, vocabs, ["de"], record, tmp_path)


def test_a_reversed_lexicon_is_refused():
    from mlmm.retrieval.rcsls import lexicon_indices

    english = {w: i for i, w in enumerate(f"en{i}" for i in range(20))}
    german = {w: i for i, w in enumerate(f"de{i}" for i in range(20))}
    right = [(f"en{i}", f"de{i}") for i in range(20)]
    assert len(lexicon_indices(right, english, german, "en-de.txt")[0]) == 20
    reversed_pairs = [(t, s) for s, t in right]
    with pytest.raises(InputError, match="en-de.txt: expected source-language words first.*"
                                         "found 0 pair.*20 read the other way"):
        lexicon_indices(reversed_pairs, english, german, "en-de.txt")


def test_the_languages_of_each_data_set_are_the_data_modules():
    from mlmm.data.coco import SPLIT_LANGUAGES
    from mlmm.data.multi30k import TRANSLATION_LANGUAGES
    from mlmm.retrieval.config import DATASET_LANGUAGES

    assert {"multi30k": TRANSLATION_LANGUAGES,
                                 "coco": SPLIT_LANGUAGES["train"]} == DATASET_LANGUAGES  # fmt: skip


@pytest.mark.parametrize("dataset, language", [("coco", "de"), ("multi30k", "ja"),
                                               ("multi30k", "EN")])
def test_a_variant_in_a_language_its_data_set_lacks_is_refused(dataset, language):
    from mlmm.retrieval.config import resolve_variant

    section = {"variants": {"v": {"dataset": dataset, "train_data": [
        {"portion": "comparable", "languages": ["en", language]}]}}}  # fmt: skip
    with pytest.raises(InputError, match=f"key 'train_data.languages': expected languages that "
                                         f"{dataset} holds .*found '{language}'"):
        resolve_variant(section, "v")


def test_ted_tables_refuse_one_source_read_twice(tmp_path):
    from mlmm.results.ted_tables import table1

    result = {"source": "de", "f1": {"de": 0.6, "en": 0.5}, "provenance": {}}
    first, copy = tmp_path / "de.json", tmp_path / "de_copy.json"
    for path in (first, copy):
        path.write_text(json.dumps(result))
    with pytest.raises(InputError, match="de_copy.json: expected one ted-classify result per "
                                         "source language, found source 'de' again"):
        table1([first, copy], None, tmp_path / "out")
    assert not (tmp_path / "out").exists()
