"""Per-query outcomes of a retrieval run, kept beside its ``metrics.json`` as ``queries.npz``.

Every test number of a run is a summary of per-query outcomes; keeping them lets the tables put
a bootstrap interval on every cell and the claims compare two systems on the same queries
(``mlmm.uncertainty``, ``mlmm.claims``). Arrays, one name each:

- ``folds``: the number of equal consecutive folds the test queries are cut into (5 for COCO 1K)
- ``test/<lang>/i2t``, ``test/<lang>/t2i``: 0-based rank of the first correct item of every
  query (image, caption), fold after fold (``evaluation.fold_ranks``)
- ``c2c/<a>-<b>``: 0-based rank of every caption-to-caption query (``evaluation.c2c_ranks``)
- ``image/test/<lang>/<direction>``, ``image/c2c/<a>-<b>``: the test image of every query of
  the ranks array of that name (an image query: itself; a caption: its image), so that the
  bootstrap draws an image with all its captions (``uncertainty.query_draws``)
- ``sts/<year>/predicted``, ``sts/<year>/gold``: per-pair ``5 * cosine`` and gold (NaN: not
  scored)
- ``provenance``: the run's provenance (the same as in its metrics.json) as JSON text

``run_metrics`` recomputes the run's test, c2c and STS numbers from them exactly. Rajendran et
al.'s Table 5 runs keep the same ``queries.npz`` (one fold, their MIC test ranks); its TED
classifiers keep per-document decisions instead (``write_decisions``, ``decision_metrics``).
"""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np

from mlmm.errors import InputError
from mlmm.io import parse_json, read_npz, write_npz


def _text(provenance: dict) -> np.ndarray:
    """JSON as UTF-8 bytes (numpy's str arrays take four bytes a character)."""
    return np.asarray(json.dumps(provenance, sort_keys=True, default=str).encode("utf-8"))


def _from_text(array: np.ndarray | None) -> dict:
    if array is None:
        return {}
    value = array.item()
    return parse_json(value.decode("utf-8") if isinstance(value, bytes) else str(value),
                      "per-query outcomes", "the provenance of a run as JSON")  # fmt: skip


def image_ids(count: int, images: int) -> np.ndarray:
    """The image of each of ``count`` queries laid out image after image, the same number per
    image (``evaluation``'s layout: image i's captions are rows i*k .. i*k+k-1, fold after
    fold)."""
    if images < 1 or count % images:
        raise ValueError(f"{count} queries are not the same number for each of {images} images")
    return np.arange(count, dtype=np.int64) // (count // images)


def write_outcomes(path: str | Path, outcomes: dict, provenance: dict) -> None:
    """``outcomes``: ``{"folds": int, "images": int, "test": {lang: {direction: ranks}},
    "c2c": {pair: ranks}, "sts": {year: (predicted, gold)}}`` as one uncompressed .npz (ranks
    as int32), with every ranks array's image ids (``images``: the number of test images, the
    queries laid out image after image, ``image_ids``)."""
    images = int(outcomes["images"])
    arrays: dict[str, np.ndarray] = {
        "folds": np.asarray(outcomes["folds"], dtype=np.int64),
        "provenance": _text(provenance),
    }
    ranked = [
        (f"test/{lang}/{direction}", ranks)
        for lang, directions in outcomes["test"].items()
        for direction, ranks in directions.items()
    ] + [(f"c2c/{pair}", ranks) for pair, ranks in outcomes.get("c2c", {}).items()]
    for name, ranks in ranked:
        arrays[name] = np.asarray(ranks, dtype=np.int32)
        arrays[f"image/{name}"] = image_ids(len(arrays[name]), images).astype(np.int32)
    for year, (predicted, gold) in outcomes.get("sts", {}).items():
        arrays[f"sts/{year}/predicted"] = np.asarray(predicted, dtype=np.float64)
        arrays[f"sts/{year}/gold"] = np.asarray(gold, dtype=np.float64)
    write_npz(path, arrays)


def read_outcomes(path: str | Path) -> dict:
    """The arrays of a ``queries.npz``, nested as ``write_outcomes`` takes them, plus the
    provenance dict and ``image``: the image ids, nested as the ranks (``{"test": {lang:
    {direction: ids}}, "c2c": {pair: ids}}``); InputError naming the file when it is missing,
    not such a file, or written without image ids (before they were kept: rerun the run)."""
    path = Path(path)
    arrays = read_npz(path, "the per-query outcomes of a run (queries.npz)")
    if "folds" not in arrays:
        raise InputError(path, "an array 'folds'", "none", key="folds")
    out: dict = {
        "folds": int(arrays["folds"]),
        "provenance": _from_text(arrays.get("provenance")),
        "test": {},
        "c2c": {},
        "sts": {},
        "image": {"test": {}, "c2c": {}},
    }
    for name, array in arrays.items():
        parts = name.split("/")
        if parts[0] in ("test", "c2c") and len(parts) == (3 if parts[0] == "test" else 2):
            ids = arrays.get(f"image/{name}")
            if ids is None or len(ids) != len(array):
                raise InputError(
                    path, f"the image id of every query beside {name!r} (image/{name})",
                    "none: written before image ids were kept; rerun the run",
                    key=f"image/{name}",
                )  # fmt: skip
            target = out[parts[0]], out["image"][parts[0]]
            if parts[0] == "test":
                target = target[0].setdefault(parts[1], {}), target[1].setdefault(parts[1], {})
            target[0][parts[-1]] = array.astype(np.int64)
            target[1][parts[-1]] = ids.astype(np.int64)
        elif parts[0] == "sts" and len(parts) == 3:
            out["sts"].setdefault(parts[1], {})[parts[2]] = array
    return out


def run_metrics(outcomes: dict) -> dict:
    """The ``test``, ``c2c`` and ``sts`` sections of a run's metrics.json, recomputed from its
    per-query outcomes with the functions the run used."""
    from mlmm import evaluation  # torch: only where retrieval metrics are recomputed

    folds = outcomes["folds"]
    return {
        "test": {
            lang: {d: evaluation.metrics_of_folds(r, folds) for d, r in directions.items()}
            for lang, directions in outcomes["test"].items()
        },
        "c2c": {pair: evaluation.summarise_ranks(r) for pair, r in outcomes["c2c"].items()},
        "sts": {
            year: evaluation.pearson_of(pair["predicted"], pair["gold"])
            for year, pair in outcomes["sts"].items()
        },
    }


def queries_path(metrics_path: str | Path) -> Path:
    """Where a run's per-query outcomes lie: beside its metrics.json."""
    return Path(metrics_path).with_name("queries.npz")


def write_sentence_statistics(path: str | Path, statistics: dict, provenance: dict) -> None:
    """Per-sentence sufficient statistics of an MT system's corpus metrics
    (``nmt.metrics.sentence_statistics``: ``mt/<metric>``, one row a sentence) and the
    provenance, as one .npz beside its metrics.json."""
    arrays = {f"mt/{name}": np.asarray(stats) for name, stats in statistics.items()}
    arrays["provenance"] = _text(provenance)
    write_npz(path, arrays)


def read_sentence_statistics(path: str | Path) -> dict[str, np.ndarray]:
    """``{metric: (sentences, k) statistics}`` of a ``write_sentence_statistics`` file."""
    arrays = read_npz(path, "an .npz file of per-sentence MT statistics (sentences.npz)")
    return {name[3:]: array for name, array in arrays.items() if name.startswith("mt/")}


def sentences_path(metrics_path: str | Path) -> Path:
    """Where an MT system's per-sentence statistics lie: beside its metrics.json."""
    return Path(metrics_path).with_name("sentences.npz")


# ----------------------------------------------------------------------------------------
# TED CLDC (Rajendran et al. 2016 Tables 1 and 3): per-document decisions


def write_decisions(path: str | Path, decisions: dict, provenance: dict) -> None:
    """Per-document topic decisions of one TED classifier result (``mlmm ted-classify``,
    ``ted-nb``) as one .npz beside its JSON: ``decisions``: ``{test: {set: (predicted, gold)}}``,
    each a ``(documents, topics)`` boolean matrix; ``test`` is a table cell's test language and
    ``set`` one test set of it (English: one per pair, its F1 the mean over them)."""
    arrays: dict[str, np.ndarray] = {"provenance": _text(provenance)}
    for test, sets in decisions.items():
        for name, (predicted, gold) in sets.items():
            arrays[f"ted/{test}/{name}/predicted"] = np.asarray(predicted, dtype=bool)
            arrays[f"ted/{test}/{name}/gold"] = np.asarray(gold, dtype=bool)
    write_npz(path, arrays)


def read_decisions(path: str | Path) -> dict[str, dict[str, dict[str, np.ndarray]]]:
    """``{test: {set: {"predicted": ..., "gold": ...}}}`` of a ``write_decisions`` file."""
    arrays = read_npz(path, "an .npz file of per-document TED decisions (*.documents.npz)")
    out: dict = {}
    for name, array in arrays.items():
        parts = name.split("/")
        if parts[0] == "ted" and len(parts) == 4:
            out.setdefault(parts[1], {}).setdefault(parts[2], {})[parts[3]] = array
    return out


def decision_metrics(decisions: dict) -> dict[str, float]:
    """``{test: F1}`` as the result JSON's ``f1`` holds it: per-topic F1 of each set
    (``ted.classify.topic_f1``), averaged over the sets where the topic is defined, then over
    the topics that are (``ted.classify.macro_f1``: a topic without a positive test talk is
    left out)."""
    from mlmm.ted.classify import macro_f1, mean_over_sets, topic_f1

    return {
        test: macro_f1(
            mean_over_sets([topic_f1(s["gold"], s["predicted"]) for s in sets.values()]),
            [], f"the kept decisions of test set {test}",
        )[0]
        for test, sets in decisions.items()
    }  # fmt: skip


def decisions_path(result_path: str | Path) -> Path:
    """Where a TED result's per-document decisions lie: ``cldc/de.json`` ->
    ``cldc/de.documents.npz`` (several results share a directory)."""
    path = Path(result_path)
    return path.with_name(f"{path.stem}.documents.npz")
