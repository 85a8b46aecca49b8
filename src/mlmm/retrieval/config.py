"""The variant record: every key the trainer reads, its default, and how a variant is resolved.

A variant in config.yaml states only what differs from ``retrieval.defaults``, which in turn
states only what differs from ``variant_defaults()``: the defaults of the config schema's
``$defs/variant``, where each key is described. Nested records (``optimizer``, ``alignment``,
...) are merged key by key; lists (``train_data``, ``paper_rows``) replace.
"""

from __future__ import annotations

import copy
import functools
from pathlib import Path
from typing import Any

from mlmm.errors import InputError


@functools.lru_cache(maxsize=1)
def _schema_defaults() -> dict[str, Any]:
    from mlmm.schema import SCHEMA_PATH, subschema

    properties = subschema("$defs.variant")["properties"]
    missing = sorted(key for key, node in properties.items() if "default" not in node)
    if missing:
        raise InputError(SCHEMA_PATH, "a default for every key of $defs/variant", str(missing))
    # A nested record (optimizer, alignment, ...) has its default as one object: a default on
    # each of its keys would be filled by the config validator into every partial override.
    return {key: node["default"] for key, node in properties.items()}


def variant_defaults() -> dict[str, Any]:
    """The built-in variant record: every key the trainer reads with its default, as the config
    schema's ``$defs/variant`` states them (what each key means is its ``description`` there).
    A fresh copy per call: callers may change it."""
    return copy.deepcopy(_schema_defaults())


CHOICES = {
    "dataset": ("multi30k", "coco"),
    "encoder": ("shared", "per-language"),
    "word_embeddings": ("random", "fme", "ame", "pretrained"),
    "batching": ("switch", "joint", "pooled"),
    "loss": ("max", "sum"),
    "similarity": ("cosine", "order"),
    "sentence_projection": ("per-encoder", "shared"),
    "image_dropout": ("features", "projection"),
    "image_norm": ("always", "evaluation"),
    "select_by": ("rsum", "mean_rank"),
    "precision": ("fp32", "bf16"),
    "c2c_captions": ("shared", "redrawn"),
    "vocabulary": ("train", "train+val"),
    "init": ("vsepp", "calixto_paper", "calixto_code"),
    "dropout_position": ("before_norm", "after_norm"),
    "embedding_dropout": ("elementwise", "variational"),
    "tokens": ("whitespace", "nltk"),
    "count_words": ("per-language", "joint"),
    "unknown_word_init": ("uniform", "normal"),
}
SUBSET_CHOICES = {
    "assignment": ("overlap", "disjoint"),
    "draw": ("shared", "per-language"),
    "c2c": ("subset", "all"),
}
PORTIONS = ("translation", "comparable")
# The caption languages each data set holds (mlmm.data.multi30k.TRANSLATION_LANGUAGES; the
# COCO copy, mlmm.data.coco.SPLIT_LANGUAGES): plain data, as the rules files read this module.
DATASET_LANGUAGES = {"multi30k": ("en", "de", "fr", "cs"), "coco": ("en", "ja")}


def _merge(base: dict, override: dict, where: str) -> dict:
    out = copy.deepcopy(base)
    for key, value in override.items():
        if key not in base:
            raise InputError(where, f"one of the keys {sorted(base)}", repr(key), key=key)
        if isinstance(base[key], dict) and isinstance(value, dict):
            out[key] = _merge(base[key], value, where)
        else:
            out[key] = copy.deepcopy(value)
    return out


def resolve_variant(section: dict, name: str, where: str = "config.yaml") -> dict:
    """variant_defaults() <- section['defaults'] <- section['variants'][name], checked."""
    variants = section.get("variants") or {}
    if name not in variants:
        raise InputError(where, f"a variant named in retrieval.variants {sorted(variants)}", name)
    defaults = section.get("defaults") or {}
    record = _merge(variant_defaults(), defaults, f"{where} retrieval.defaults")
    record = _merge(record, variants[name] or {}, f"{where} retrieval.variants.{name}")
    check(record, f"{where} retrieval.variants.{name}")
    record["name"] = name
    return record


def check(record: dict, where: str) -> None:
    for key, options in CHOICES.items():
        if record[key] not in options:
            raise InputError(where, f"{key} in {options}", repr(record[key]), key=key)
    for source in record["train_data"]:
        if source.get("portion") not in PORTIONS or not source.get("languages"):
            raise InputError(where, "train_data entries {portion, languages}", repr(source))
        held = DATASET_LANGUAGES[record["dataset"]]
        for lang in source["languages"]:
            if lang not in held:
                raise InputError(
                    where, f"languages that {record['dataset']} holds {list(held)}", repr(lang),
                    key="train_data.languages",
                )  # fmt: skip
    for key, options in SUBSET_CHOICES.items():
        if record["image_subset"][key] not in options:
            raise InputError(
                where, f"image_subset.{key} in {options}", repr(record["image_subset"][key])
            )
    for key in ("word_dropout", "recurrent_dropout"):
        if not 0.0 <= record[key] < 1.0:
            raise InputError(where, f"0 <= {key} < 1", str(record[key]), key=key)
    if not 0.0 <= record["beta"] <= 1.0:
        raise InputError(where, "0 <= beta <= 1", str(record["beta"]), key="beta")
    if not set(select_languages(record)) <= set(languages(record)):
        raise InputError(
            where, f"select_language in {languages(record)}", repr(record["select_language"])
        )
    if record["word_embeddings"] != "random" and record["encoder"] != "shared":
        raise InputError(
            where, "encoder shared with pre-aligned word embeddings", record["encoder"]
        )


def merge_config(base: dict, override: dict) -> dict:
    """Recursive dict update, as Snakemake merges --configfile files: dicts merge, rest replaces."""
    out = copy.deepcopy(base)
    for key, value in override.items():
        if isinstance(out.get(key), dict) and isinstance(value, dict):
            out[key] = merge_config(out[key], value)
        else:
            out[key] = copy.deepcopy(value)
    return out


def languages(record: dict) -> list[str]:
    """The variant's languages in first-mention order over its training sources."""
    out: list[str] = []
    for source in record["train_data"]:
        out += [lang for lang in source["languages"] if lang not in out]
    return out


# A data file of the fidelity registry's directory, read without importing that package (the
# registry reads this module to resolve the records it checks).
READINGS = Path(__file__).resolve().parents[1] / "fidelity" / "readings.yaml"


@functools.lru_cache(maxsize=1)
def readings() -> dict[str, dict]:
    """Per key, per value: whose reading it is (``by``: paper or the authors' code) and the
    ``note`` the tables print when a run used it (src/mlmm/fidelity/readings.yaml)."""
    from mlmm.io import read_yaml

    return read_yaml(READINGS, "the readings of paper and code (readings.yaml)")


def reading(key: str, value: Any) -> dict:
    """``{"by": "paper" | <the code>, "note": ...}`` of ``value`` of record key ``key``."""
    values = readings().get(key)
    if values is None:
        raise KeyError(f"{key}: no reading in {READINGS.name}")
    for candidate, record in values.items():
        if _same(candidate, value):
            return record
    raise KeyError(f"{key} = {value!r}: no reading in {READINGS.name}")


def _same(a: Any, b: Any) -> bool:
    """Equal values of equal kinds (``True`` is not ``1``)."""
    if isinstance(a, bool) or isinstance(b, bool):
        return type(a) is type(b) and a == b
    return a == b


def rotation_options(rotation: dict) -> str:
    """``mlmm retrieval-vectors --onto`` options of ``retrieval.vectors.rotation``."""
    options = [f"--rotation {rotation['method']}"]
    if rotation["method"] == "rcsls":
        options.append(
            f"--rcsls-knn {rotation['knn']} --rcsls-lr {rotation['lr']}"
            f" --rcsls-iterations {rotation['iterations']}"
        )
    if rotation["sections"]:
        options.append(f"--rotation-sections {' '.join(rotation['sections'])}")
    if rotation["method"] == "rcsls" and rotation.get("output", "loaded") != "loaded":
        options.append(f"--rotation-output {rotation['output']}")
    return " ".join(options)


def select_languages(record: dict) -> list[str]:
    """The languages whose validation scores are summed to select the model."""
    chosen = record["select_language"]
    return [chosen] if isinstance(chosen, str) else list(chosen)


def run_names(section: dict) -> list[str]:
    """The variants to train: ``run``, a list, so that a ``--configfile`` on top (the paper
    config) replaces the demo selection instead of merging with it as dicts merge."""
    return list(section.get("run") or [])


def seeds(record: dict) -> list[int]:
    return list(range(1, int(record["seeds"]) + 1))
