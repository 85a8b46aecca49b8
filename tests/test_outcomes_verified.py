"""Outcomes are verified on every read (mlmm.outcomes.verified_outcomes): every kind of outcome
file (a retrieval or pivot run's queries.npz, an MT system's sentences.npz, a TED result's
documents.npz), written by the real writers, reads back; swapped, edited, truncated, missing
or foreign ones are refused in one line naming the file."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

from mlmm.cli import main
from mlmm.errors import InputError
from mlmm.io import read_npz, write_json
from mlmm.outcomes import (
    decision_metrics,
    outcomes_path,
    run_metrics,
    verified_outcomes,
    write_result,
)
from mlmm.provenance import provenance
from mlmm.results.intervals import Run, run_samples

IMAGES, PER_IMAGE = 20, 5


def _retrieval(out: Path, variant: str, seed: int, shift: int = 0) -> Path:
    """A retrieval run as train_variant writes it: metrics.json and queries.npz."""
    rng = np.random.default_rng(seed + shift)
    captions = IMAGES * PER_IMAGE
    outcomes = {
        "folds": 1,
        "images": IMAGES,
        "test": {"en": {"i2t": rng.integers(0, captions - PER_IMAGE, IMAGES),
                        "t2i": rng.integers(0, IMAGES, captions)}},
        "c2c": {"en-de": rng.integers(0, captions, captions)},
        "sts": {"2014": (rng.random(30) * 5, rng.random(30) * 5)},
    }  # fmt: skip
    metrics = {
        "variant": variant,
        "seed": seed,
        "provenance": provenance({"retrieval": {"name": variant}}, seed, data=("multi30k",)),
        **run_metrics(_read_back(outcomes)),
    }
    write_result(out / "metrics.json", metrics, "queries", outcomes)
    return out / "metrics.json"


def _read_back(outcomes: dict) -> dict:
    """``run_metrics``' input as ``read_outcomes`` gives it."""
    sts = {y: {"predicted": p, "gold": g} for y, (p, g) in outcomes["sts"].items()}
    return {**outcomes, "sts": sts}


def _pivot(out: Path, variant: str, seed: int, shift: int = 0) -> Path:
    """A Rajendran Table 5 run as ``pivot-run`` writes it (pivot.experiment.write_test_ranks)."""
    from mlmm.pivot.evaluate import recalls_of_ranks
    from mlmm.pivot.experiment import write_test_ranks

    rng = np.random.default_rng(seed + shift)
    ranks = {"i2t": rng.integers(0, IMAGES * PER_IMAGE, IMAGES),
             "t2i": rng.integers(0, IMAGES, IMAGES * PER_IMAGE)}  # fmt: skip
    language = "de" if variant.endswith("de") else "fr"
    result = {"model": "bridge", "language": language, "lambda": 1.0,
              "test": recalls_of_ranks(ranks),
              "provenance": provenance({"language": language, "run": variant}, seed,
                                        data=("coco",))}  # fmt: skip
    write_test_ranks(out / "metrics.json", language, ranks, result)
    return out / "metrics.json"


def _mt(out: Path, variant: str, seed: int, shift: int = 0, note: str = "") -> Path:
    """An MT system's scores as `mlmm mt-score` writes them."""
    rng = np.random.default_rng(seed + shift)
    refs = [" ".join(rng.choice(list("abcdefghij"), size=10)) for _ in range(40)]
    keep = 0.6 if "baseline" in variant else 0.8
    hyps = [" ".join(w if rng.random() < keep else "z" for w in r.split()) for r in refs]
    (out / "hyp").write_text("\n".join(hyps) + "\n")
    (out / "ref").write_text("\n".join(refs) + "\n")
    argv = ["mt-score", "--hyp", out / "hyp", "--ref", out / "ref", "--system", variant,
            "--seed", seed, "--variant-note", note, "--out", out / "metrics.json"]  # fmt: skip
    assert main([str(a) for a in argv]) == 0
    return out / "metrics.json"


def _ted(out: Path, variant: str, seed: int, shift: int = 0) -> Path:
    """A ted-classify result as ted.experiment writes it: <source>.json, its documents."""
    rng = np.random.default_rng(seed + shift)
    gold = rng.random((60, 6)) < 0.3
    decisions = {
        target: {target: (np.where(rng.random(gold.shape) < 0.8, gold, ~gold), gold)}
        for target in ("de", "fr")
    }
    sets = {t: {n: {"predicted": p, "gold": g} for n, (p, g) in s.items()}
            for t, s in decisions.items()}  # fmt: skip
    result = {"provenance": provenance({"source": variant, "hidden": 8}, seed, data=("ted",)),
              "source": variant, "f1": decision_metrics(sets)}  # fmt: skip
    write_result(out / f"{variant}.json", result, "documents", decisions)
    return out / f"{variant}.json"


# kind: (writer, the two runs' names, the kind of outcome file, a number of the metrics)
KINDS = {
    "queries": (_retrieval, ("monolingual", "bilingual"), ("test", "en", "i2t", "R@1")),
    "pivot": (_pivot, ("bridge_fr", "bridge_de"), ("test", "i2t", "R@10")),
    "sentences": (_mt, ("NMT baseline", "NMT + VSE"), ("scores", "BLEU")),
    "documents": (_ted, ("de", "fr"), ("f1", "de")),
}
FILE_KIND = {"queries": "queries", "pivot": "queries", "sentences": "sentences",
             "documents": "documents"}  # fmt: skip


def _two_runs(tmp_path: Path, kind: str, same_numbers: bool = False) -> tuple[Path, Path]:
    write, names, _ = KINDS[kind]
    paths = []
    for number, name in enumerate(names):
        out = tmp_path / name.replace(" ", "_").replace("+", "p")
        out.mkdir()
        if same_numbers and number:  # another run (seed 2) with the same outcomes as seed 1
            paths.append(write(out, names[0], 2, shift=-1))
        else:
            paths.append(write(out, name, 1))
    return paths[0], paths[1]


def _edit_array(path: Path, edit) -> None:
    arrays = read_npz(path)
    name = next(n for n in sorted(arrays) if n not in ("provenance", "folds")
                and not n.startswith("image/"))  # fmt: skip
    arrays[name] = edit(arrays[name].copy())
    with open(path, "wb") as handle:
        np.savez(handle, **arrays)


def _swapped(target: Path, other: Path, kind: str) -> Path:
    file_kind = FILE_KIND[kind]
    # TED: fr.documents.npz copied over de.documents.npz; the others: the same name
    theirs, ours = outcomes_path(other, file_kind), outcomes_path(target, file_kind)
    ours.write_bytes(theirs.read_bytes())
    return ours


def _edited_metrics(target: Path, kind: str) -> Path:
    keys = KINDS[kind][2]
    metrics = json.loads(target.read_text())
    inner = metrics
    for key in keys[:-1]:
        inner = inner[key]
    inner[keys[-1]] = inner[keys[-1]] + 0.5
    target.write_text(json.dumps(metrics))
    return outcomes_path(target, FILE_KIND[kind])


def _edited_array(target: Path, kind: str) -> Path:
    path = outcomes_path(target, FILE_KIND[kind])

    def edit(array):
        if array.dtype == bool:
            array[: len(array) // 2] = ~array[: len(array) // 2]
        elif kind == "sentences":
            array[:, -1] += 3
        else:
            array[:] = array[::-1] // 2 if array.ndim == 1 else array
        return array

    _edit_array(path, edit)
    return path


def _reordered(target: Path, kind: str) -> Path:
    """The first array's rows reversed: the same ranks (statistics) in another query order,
    which leaves every metric as it was but pairs other queries in a claim's comparison."""
    path = outcomes_path(target, FILE_KIND[kind])
    _edit_array(path, lambda array: array[::-1].copy())
    return path


def _truncated(target: Path, kind: str) -> Path:
    path = outcomes_path(target, FILE_KIND[kind])
    path.write_bytes(path.read_bytes()[: path.stat().st_size // 2])
    return path


def _missing(target: Path, kind: str) -> Path:
    path = outcomes_path(target, FILE_KIND[kind])
    path.unlink()
    return path


ATTACKS = ["swapped", "edited metrics", "edited outcomes", "reordered outcomes", "truncated",
           "missing", "provenance of another run"]  # fmt: skip


@pytest.mark.parametrize("attack", ATTACKS)
@pytest.mark.parametrize("kind", list(KINDS))
def test_a_foreign_or_altered_outcome_file_is_refused_naming_it(tmp_path, kind, attack):
    target, other = _two_runs(tmp_path, kind, same_numbers=attack == "provenance of another run")
    file_kind = FILE_KIND[kind]
    assert verified_outcomes(target, file_kind) is not None  # both read fine as written
    assert verified_outcomes(other, file_kind) is not None
    if attack in ("swapped", "provenance of another run"):
        named = _swapped(target, other, kind)
    else:
        named = {"edited metrics": _edited_metrics, "edited outcomes": _edited_array,
                 "reordered outcomes": _reordered, "truncated": _truncated,
                 "missing": _missing}[attack](target, kind)  # fmt: skip
    with pytest.raises(InputError) as caught:
        verified_outcomes(target, file_kind)
    message = str(caught.value)
    assert "\n" not in message
    assert message.startswith(str(named)), message
    if attack in ("swapped", "provenance of another run"):
        assert "provenance" in message
    if attack == "edited metrics":
        assert str(target) in message and "other numbers" in message


@pytest.mark.parametrize("kind", list(KINDS))
def test_outcomes_written_by_the_stages_read_back(tmp_path, kind):
    target, _ = _two_runs(tmp_path, kind)
    metrics = json.loads(target.read_text())
    file_kind = FILE_KIND[kind]
    assert metrics["outcomes"]["file"] == outcomes_path(target, file_kind).name
    found = verified_outcomes(target, file_kind)
    assert found
    if file_kind == "queries":
        assert found["provenance"] == metrics["provenance"]


@pytest.mark.parametrize("ranks", ["zero", "negative", "beyond the candidates"])
def test_impossible_ranks_are_refused(tmp_path, ranks):
    """Every rank 0 (metrics left as they were), a negative rank, a rank past the fold's
    candidates: refused, naming queries.npz."""
    (tmp_path / "run").mkdir()
    metrics = _retrieval(tmp_path / "run", "bilingual", 1)
    edit = {"zero": lambda a: a * 0, "negative": lambda a: a - 1000,
            "beyond the candidates": lambda a: a + 10_000}[ranks]  # fmt: skip
    _edit_array(metrics.with_name("queries.npz"), edit)
    with pytest.raises(InputError, match=r"queries\.npz") as caught:
        verified_outcomes(metrics, "queries")
    if ranks != "zero":
        assert "0-based ranks" in str(caught.value)


def test_a_metrics_file_without_outcomes_reads_as_none(tmp_path):
    """Metrics that name no outcomes file and have none beside them (a hand-made record):
    no outcomes, no interval; metrics that name one which is missing: an error."""
    path = tmp_path / "metrics.json"
    write_json(path, {"variant": "v", "seed": 1, "test": {}})
    assert verified_outcomes(path, "queries") is None
    named = {"file": "queries.npz", "sha256": "0" * 64}
    write_json(path, {"variant": "v", "seed": 1, "test": {}, "outcomes": named})
    with pytest.raises(InputError, match="queries.npz: expected the outcomes"):
        verified_outcomes(path, "queries")


def test_mt_score_keeps_its_statistics_beside_the_metrics(tmp_path):
    """Rerunning mt-score over a system's metrics rewrites its sentences.npz too (no stale
    statistics beside new scores)."""
    (tmp_path / "vse").mkdir()
    metrics = _mt(tmp_path / "vse", "NMT + VSE", 1)
    before = verified_outcomes(metrics, "sentences")["BLEU"]
    _mt(tmp_path / "vse", "NMT baseline", 1)  # other hypotheses into the same --out
    after = verified_outcomes(metrics, "sentences")["BLEU"]
    assert not np.array_equal(before, after)


def test_the_intervals_read_only_verified_outcomes(tmp_path):
    """A table cell's samples come through the verification: another run's queries.npz in
    the run's directory (copied after a first, clean read) stops the table with the one-line
    error."""
    (tmp_path / "mono").mkdir()
    (tmp_path / "bi").mkdir()
    mono = _retrieval(tmp_path / "mono", "monolingual", 1)
    bi = _retrieval(tmp_path / "bi", "bilingual", 1, shift=5)
    run = Run("bilingual", 1, json.loads(bi.read_text()), [], [], bi)
    assert run_samples(run, "en", "i2t", "R@1") is not None
    bi.with_name("queries.npz").write_bytes(mono.with_name("queries.npz").read_bytes())
    with pytest.raises(InputError, match="bi/queries.npz, key 'provenance'"):
        run_samples(run, "en", "i2t", "R@1")


def test_a_table_command_stops_on_another_systems_statistics(tmp_path, capsys):
    """`mlmm nmt-table` over a system whose sentences.npz is the baseline's: exit non-zero,
    one line naming the file (in the same process as a first, clean build: nothing stale is
    reused)."""
    paper_tables = Path(__file__).resolve().parents[1] / "resources" / "paper_tables"
    systems = {"NMT baseline (attention NMT, Bahdanau et al., 2015)": "no re-ranking (1-best)",
               "NMT + MLMME re-ranking": "beta=0.25"}  # fmt: skip
    paths = []
    for number, (system, note) in enumerate(systems.items()):
        out = tmp_path / f"s{number}"
        out.mkdir()
        paths.append(_mt(out, system, 1, note=note))
    argv = ["nmt-table", "--metrics", *map(str, paths), "--paper-tables", str(paper_tables),
            "--out", str(tmp_path / "tables" / "calixto2017_table3")]  # fmt: skip
    assert main(argv) == 0
    capsys.readouterr()
    vse = paths[1].with_name("sentences.npz")
    vse.write_bytes(paths[0].with_name("sentences.npz").read_bytes())
    assert main([*argv, "--force"]) != 0
    err = [line for line in capsys.readouterr().err.splitlines() if "sentences.npz" in line]
    assert err and f"{vse}, key 'provenance'" in err[-1], err
