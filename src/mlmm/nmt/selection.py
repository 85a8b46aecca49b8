"""Which embedding features and Table 3 systems a configuration runs, and which local METEOR
files it lacks (both read while the workflow is planned: no third-party imports here).

An override that trains fewer retrieval variants (say `retrieval.run: [monolingual]`) should
run fewer NMT rows, not fail: features whose variant is not trained are left out, so are the
systems that use them, and each omission is reported as a warning naming the config keys.
"""

from __future__ import annotations

from collections.abc import Container

BASE_FEATURES = ("NMT", "WordPenalty")


def select(nmt: dict, trained: Container[str]) -> tuple[dict, dict, list[str]]:
    """(embedding features, systems, warnings) of config section `nmt` given the trained
    retrieval variants. A system naming a feature that is not configured at all is a config
    error (ValueError naming the key), not an omission."""
    features, systems, warnings = {}, {}, []
    for name, spec in nmt["embedding_features"].items():
        if spec["variant"] in trained:
            features[name] = spec
        else:
            warnings.append(
                f"nmt.embedding_features.{name} left out: its variant {spec['variant']!r} is not "
                "in retrieval.run"
            )
    for key, record in nmt["systems"].items():
        wanted = set(record["features"])
        unknown = wanted - set(BASE_FEATURES) - set(nmt["embedding_features"])
        if unknown:
            raise ValueError(
                f"config nmt.systems.{key}.features: {sorted(unknown)} are neither "
                f"{list(BASE_FEATURES)} nor names in nmt.embedding_features"
            )
        missing = sorted(wanted - set(BASE_FEATURES) - set(features))
        if missing:
            warnings.append(f"nmt.systems.{key} left out: it uses {missing}, left out above")
        else:
            systems[key] = record
    return features, systems, warnings
