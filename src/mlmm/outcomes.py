"""Per-query outcomes of a retrieval run, kept beside its ``metrics.json`` as ``queries.npz``.

Every test number of a run is a summary of per-query outcomes; keeping them lets the tables put
a bootstrap interval on every cell and the claims compare two systems on the same queries
(``mlmm.uncertainty``, ``mlmm.results.claims``). Arrays, one name each:

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
An MT system keeps per-sentence statistics (``sentences.npz``, ``write_sentence_statistics``).

Contract, checked on every read (``verified_outcomes``, the one path by which intervals and
claims read outcomes): a stage writes its metrics JSON and its outcomes file together
(``write_result``), the JSON naming the file and the digest of its arrays (``"outcomes":
{"file": "queries.npz", "sha256": ...}``, ``arrays_digest``) and the file carrying the JSON's
``provenance``. The reader refuses, in one line naming the file
(``InputError``):

- a file the metrics name that is missing (an error, not "no interval"), or a file where
  the metrics name another;
- outcomes whose provenance is not the metrics' own (another run's file copied in: another
  variant, seed, system, language, configuration, code or time of writing);
- ranks that are not whole numbers in [0, candidates) (candidates: the captions of a fold for
  an image query, the images of a fold for a caption query, the other language's captions for
  a caption-to-caption query);
- metrics that do not recompute from the outcomes (``run_metrics``, the pivot's
  ``recalls_of_ranks``, ``nmt.metrics.corpus_score``, ``decision_metrics``; within 1e-6
  relative), whichever of the two was edited;
- arrays other than those the metrics record (``arrays_digest``: ranks reordered among the
  queries give the same metrics but pair other queries in a claim's comparison);
- a truncated or unreadable file.

A metrics JSON that names no outcomes file and has none beside it is read without outcomes
(its cells get no interval).
"""

from __future__ import annotations

import hashlib
import json
import math
from pathlib import Path

import numpy as np

from mlmm import rank_metrics
from mlmm.errors import InputError
from mlmm.io import _json_default, parse_json, read_json_object, read_npz, write_json, write_npz


def _text(provenance: dict) -> np.ndarray:
    """JSON as UTF-8 bytes (numpy's str arrays take four bytes a character)."""
    return np.asarray(json.dumps(provenance, sort_keys=True, default=_json_default).encode("utf-8"))


def _from_text(array: np.ndarray | None, where: str | Path = "per-query outcomes") -> dict:
    if array is None:
        return {}
    value = array.item() if array.size == 1 else b""
    return parse_json(value.decode("utf-8") if isinstance(value, bytes) else str(value),
                      where, "the provenance of a run as JSON")  # fmt: skip


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
    return _outcomes_of(path, read_npz(path, "the per-query outcomes of a run (queries.npz)"))


def _outcomes_of(path: Path, arrays: dict[str, np.ndarray]) -> dict:
    if "folds" not in arrays:
        raise InputError(path, "an array 'folds'", "none", key="folds")
    out: dict = {
        "folds": int(arrays["folds"]),
        "provenance": _from_text(arrays.get("provenance"), path),
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
            if not np.issubdtype(array.dtype, np.integer):
                raise InputError(path, "whole-number ranks", f"{array.dtype} values", key=name)
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
    folds = outcomes["folds"]
    return {
        "test": {
            lang: {d: rank_metrics.metrics_of_folds(r, folds) for d, r in directions.items()}
            for lang, directions in outcomes["test"].items()
        },
        "c2c": {pair: rank_metrics.summarise_ranks(r) for pair, r in outcomes["c2c"].items()},
        "sts": {
            year: rank_metrics.pearson_of(pair["predicted"], pair["gold"])
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
    return _sentences_of(Path(path), arrays)


def _sentences_of(path: Path, arrays: dict[str, np.ndarray]) -> dict[str, np.ndarray]:
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
    return _decisions_of(Path(path), arrays)


def _decisions_of(path: Path, arrays: dict[str, np.ndarray]) -> dict:
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


# ----------------------------------------------------------------------------------------
# the contract: a result's metrics and outcomes written together, verified on every read

KINDS = ("queries", "sentences", "documents")
_PATHS = {"queries": queries_path, "sentences": sentences_path, "documents": decisions_path}
_WRITERS = {
    "queries": write_outcomes,
    "sentences": write_sentence_statistics,
    "documents": write_decisions,
}
_READS = {
    "queries": ("the per-query outcomes of a run (queries.npz)", _outcomes_of),
    "sentences": ("an .npz file of per-sentence MT statistics (sentences.npz)", _sentences_of),
    "documents": ("an .npz file of per-document TED decisions (*.documents.npz)", _decisions_of),
}
TOLERANCE = 1e-6  # relative: what the metrics JSON's numbers may differ from a recomputation


def outcomes_path(metrics_path: str | Path, kind: str) -> Path:
    """Where the outcomes of ``kind`` (``KINDS``) of a metrics JSON lie: beside it."""
    return _PATHS[kind](metrics_path)


def write_result(metrics_path: str | Path, metrics: dict, kind: str, outcomes) -> None:
    """A run's metrics JSON and its outcomes of ``kind`` beside it, tied together: the
    outcomes file carries ``metrics["provenance"]``, the JSON names the file and the digest of
    its arrays (added to ``metrics`` as ``"outcomes"``); the outcomes are written first, so
    that metrics never name a file that is not there yet."""
    path = outcomes_path(metrics_path, kind)
    _WRITERS[kind](path, outcomes, metrics["provenance"])
    metrics["outcomes"] = {"file": path.name, "sha256": arrays_digest(read_npz(path))}
    write_json(metrics_path, metrics)


def arrays_digest(arrays: dict[str, np.ndarray]) -> str:
    """sha256 over the name, type, shape and bytes of every array but the provenance: the
    same for two runs with the same outcomes (the provenance holds the time of writing)."""
    digest = hashlib.sha256()
    for name in sorted(arrays):
        if name != "provenance":
            array = np.ascontiguousarray(arrays[name])
            head = f"{name}\0{array.dtype.str}\0{array.shape}\0"
            digest.update(head.encode() + array.tobytes())
    return digest.hexdigest()


def verified_outcomes(metrics_path: str | Path, kind: str):
    """The outcomes of ``kind`` beside a metrics JSON (as ``read_outcomes``,
    ``read_sentence_statistics`` or ``read_decisions`` give them) once they are shown to be
    that run's and to give its numbers (the module's contract); None where the JSON names no
    outcomes and none lie beside it. Anything else: one InputError naming the file."""
    metrics_path = Path(metrics_path)
    path = outcomes_path(metrics_path, kind)
    metrics = read_json_object(metrics_path, (), "a metrics JSON of a run")
    named = metrics.get("outcomes")
    if named is None and not path.is_file():
        return None
    if named is not None and (not isinstance(named, dict) or named.get("file") != path.name):
        raise InputError(metrics_path, f"the outcomes file beside it, {{'file': {path.name!r}, "
                         "'sha256': ...}", repr(named)[:80], key="outcomes")  # fmt: skip
    if not path.is_file():
        raise InputError(path, f"the outcomes {metrics_path} was computed from", "no such file")
    what, parse = _READS[kind]
    arrays = read_npz(path, what)
    recorded = metrics.get("provenance")
    if not isinstance(recorded, dict) or not recorded:
        raise InputError(metrics_path, f"the run's provenance, which {path.name} must carry",
                         "none", key="provenance")  # fmt: skip
    differs = _difference(recorded, _from_text(arrays.get("provenance"), path))
    if differs:
        raise InputError(path, f"the provenance of {metrics_path} (outcomes of that run)",
                         f"another run's ({differs})", key="provenance")  # fmt: skip
    outcomes = parse(path, arrays)
    if kind == "queries":
        _check_ranks(path, outcomes)
    try:
        stored, again = _recomputed(kind, metrics, outcomes)
    except (ValueError, IndexError, TypeError, KeyError, ZeroDivisionError) as exc:
        reason = " ".join(str(exc).split())
        raise InputError(path, f"outcomes that give the numbers of {metrics_path}",
                         f"arrays they cannot be computed from ({reason})") from None  # fmt: skip
    differs = _difference(stored, again)
    if differs:
        raise InputError(path, f"outcomes that give the numbers of {metrics_path}",
                         f"other numbers ({differs})")  # fmt: skip
    if named is not None and named.get("sha256") != arrays_digest(arrays):
        recorded = str(named.get("sha256"))[:12]
        raise InputError(path, f"the arrays {metrics_path} records (sha256 {recorded}...)",
                         "other arrays (edited or reordered after the run)")  # fmt: skip
    return outcomes


def _recomputed(kind: str, metrics: dict, outcomes) -> tuple[dict, dict]:
    """(the metrics JSON's numbers, the same numbers recomputed from the outcomes)."""
    if kind == "documents":
        return {"f1": metrics.get("f1")}, {"f1": decision_metrics(outcomes)}
    if kind == "sentences":
        from mlmm.nmt.metrics import SENTENCE_METRICS, corpus_score

        scores = metrics.get("scores") or {}
        names = sorted(set(outcomes) | (set(scores) & set(SENTENCE_METRICS)))
        stored = {n: scores.get(n) if n in SENTENCE_METRICS else "not kept" for n in names}
        again = {n: corpus_score(n, s) for n, s in outcomes.items() if n in SENTENCE_METRICS}
        return {"scores": stored}, {"scores": again}
    if "model" in metrics and "lambda" in metrics:  # a Rajendran Table 5 run (mlmm.pivot)
        return _pivot_recomputed(metrics.get("test"), outcomes["test"])
    again = run_metrics(outcomes)
    return {key: metrics.get(key) or {} for key in again}, again


def _pivot_recomputed(stored, tests: dict) -> tuple[dict, dict]:
    """A Table 5 run's ``test``: one caption language's ranks, its recalls as fractions of 1
    (the paper's scale) at the R@k its metrics hold (``pivot.evaluate.recalls_of_ranks``)."""
    if len(tests) != 1 or not isinstance(stored, dict):
        return {"test": stored}, {"test": f"ranks of {len(tests)} caption languages"}
    (ranks,) = tests.values()
    again = {}
    for direction, found in ranks.items():
        held = stored.get(direction) if isinstance(stored.get(direction), dict) else {}
        ks = tuple(sorted(int(m[2:]) for m in held if m.startswith("R@") and m[2:].isdigit()))
        summary = rank_metrics.summarise_ranks(found, ks=ks or (1,))
        again[direction] = {m: v / 100.0 if m.startswith("R@") else v for m, v in summary.items()}
    return {"test": stored}, {"test": again}


def _check_ranks(path: Path, outcomes: dict) -> None:
    """Every rank a whole number in [0, candidates) where the candidates are known: a fold's
    captions for an image query, a fold's images for a caption query, the other language's
    captions for a caption-to-caption query."""
    folds = max(outcomes["folds"], 1)
    named = [(f"c2c/{pair}", ranks, len(ranks)) for pair, ranks in outcomes["c2c"].items()]
    for lang, directions in outcomes["test"].items():
        captions = directions.get("t2i")
        images = outcomes["image"]["test"][lang].get("t2i")
        for direction, ranks in directions.items():
            if direction == "t2i" and len(images):
                bound = (int(images.max()) + 1) // folds
            elif direction == "i2t" and captions is not None:
                bound = len(captions) // folds
            else:
                bound = None
            named.append((f"test/{lang}/{direction}", ranks, bound))
    for name, ranks, bound in named:
        if len(ranks) and (ranks.min() < 0 or (bound is not None and ranks.max() >= bound)):
            limit = "" if bound is None else f" below {bound} (the candidates)"
            raise InputError(path, f"0-based ranks, 0 or more{limit}",
                             f"ranks from {ranks.min()} to {ranks.max()}", key=name)  # fmt: skip


def _difference(expected, found, key: str = "") -> str | None:
    """Where two JSON-like values differ (numbers within ``TOLERANCE`` relative, NaN equal
    to NaN), as 'key: X in the metrics, Y in the outcomes'; None where they agree."""
    if isinstance(expected, dict) and isinstance(found, dict):
        for name in sorted(set(expected) | set(found), key=str):
            inner = f"{key}/{name}" if key else str(name)
            if name not in expected or name not in found:
                have = "present" if name in expected else "none"
                other = "present" if name in found else "none"
                return f"{inner}: {have} in the metrics, {other} in the outcomes"
            differs = _difference(expected[name], found[name], inner)
            if differs:
                return differs
        return None
    if _number(expected) and _number(found):
        a, b = float(expected), float(found)
        if (math.isnan(a) and math.isnan(b)) or math.isclose(a, b, rel_tol=TOLERANCE,
                                                             abs_tol=1e-12):  # fmt: skip
            return None
    elif expected == found:
        return None
    shown = [repr(v) if len(repr(v)) <= 60 else repr(v)[:57] + "..." for v in (expected, found)]
    return f"{key or 'value'}: {shown[0]} in the metrics, {shown[1]} in the outcomes"


def _number(value) -> bool:
    return isinstance(value, (int, float, np.integer, np.floating)) and not isinstance(
        value, (bool, np.bool_)
    )
