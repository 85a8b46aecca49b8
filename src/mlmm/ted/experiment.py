"""The TED CLDC stages the workflow calls: train, tune lambda, classify, Naive Bayes.

Each writes one metrics file with provenance and timings; see mlmm.cli.ted for the commands.
Classification runs in both directions: X -> Y through the pivot (Rajendran et al. 2016) and
English <-> X (the CLDC setting of Klementiev et al. 2012 and Hermann & Blunsom 2014). English
is the English side of each pair: English -> X trains on pair X's English training talks and
tests on X's test talks; X -> English tests on pair X's English test talks; English -> English
is the mean over the pairs. With one pair the tables hold exactly that pair's cells.
"""

from __future__ import annotations

import os
from pathlib import Path

import numpy as np
from joblib import Parallel, delayed

from mlmm.errors import InputError
from mlmm.fingerprint import (
    RECORD_KEY,
    check_inside_record,
    files_digest,
    inside_record,
    npz_record,
    read_npz_record,
    value_digest,
)
from mlmm.io import atomic_path, read_json_object, read_npz, sha256_file, write_json, write_text
from mlmm.outcomes import write_result
from mlmm.provenance import Timer, provenance
from mlmm.ted import PIVOT
from mlmm.ted.bow import Bow
from mlmm.ted.classify import (
    classify,
    macro_f1,
    mean_over_sets,
    naive_bayes,
    perceptron,
    predict,
    topic_f1,
    validation_split,
)

# what every TED result is made from: the TED stage's corpus (config ted.source), nothing else
TED_DATA = ("ted",)


def lambda_name(lam: float) -> str:
    """The directory name of a lambda's run, as the workflow spells it (`lambda10`)."""
    return f"lambda{lam:g}"


def english(language: str) -> str:
    """The English side of pair `language` as Bow and codes.npz name it (`en@de`)."""
    return f"{PIVOT}@{language}"


def classification_languages(bow: Bow) -> list[str]:
    """Training and test languages of the tables: English, then the languages paired with it."""
    return [PIVOT, *bow.languages]


def bow_digest(bow_dir: str | Path) -> str:
    """Digest of a bag-of-words directory's files (its records left out): what codes and
    tunings were made from."""
    files = sorted(p for p in Path(bow_dir).iterdir() if p.is_file() and p.name[0] != ".")
    return files_digest(files)


def codes_run(settings: dict) -> dict:
    """The run a ``codes.npz`` is of, as its record names it and ``ted-tune`` asks for it: its
    lambda and the digest of all its settings (``metrics.json``'s ``provenance.config``)."""
    return {"lambda": settings["lambda"], "settings": value_digest(settings)}


def codes_file(run: str | Path, bow: str, asked: dict, why: str) -> Path:
    """A run's ``codes.npz``, refused unless the record inside it (entry ``made_from``) names
    the run ``asked`` for (its lambda, its settings; ``why`` says whence), the bag of words
    ``bow`` (a digest, ``bow_digest``) and the codes it was written with
    (``mlmm.fingerprint.check_inside_record``): the lambda=10 codes in the lambda=1 run are
    refused."""
    path = Path(run) / "codes.npz"
    if not path.is_file():
        raise InputError(path, "the codes of a ted-train run", "no such file")
    archive = read_npz(path, "the codes.npz of ted-train")
    check_inside_record(
        path, read_npz_record(archive, path),
        lambda: {k: v for k, v in archive.items() if k != RECORD_KEY},
        maker="ted-train for this lambda", run=asked, asked=why, inputs={"bag of words": bow},
    )  # fmt: skip
    return path


def chosen_model(tuning: str | Path, choice: dict, bow: str) -> tuple[Path, dict]:
    """The model of a tuning's chosen run (``chosen_run``) and what its record must name
    (``mlmm.ted.corrnet.load``'s ``expect``): the chosen lambda and the bag of words."""
    run = chosen_run(tuning, choice, bow).parent
    asked = f"the lambda {Path(tuning).name} chose"
    return run / "model.pt", {"run": {"lambda": choice["lambda"]}, "asked": asked,
                              "inputs": {"bag of words": bow}}  # fmt: skip


def chosen_run(tuning: str | Path, choice: dict, bow: str) -> Path:
    """The codes of a tuning's chosen run: its path resolved against the tuning file (not the
    working directory), its lambda the chosen one, its bytes those the tuning chose from."""
    run = Path(choice["run"])
    run = run if run.is_absolute() else Path(os.path.normpath(Path(tuning).parent / run))
    asked = {"lambda": choice["lambda"]}
    path = codes_file(run, bow, asked, f"the lambda {Path(tuning).name} chose")
    if "codes_sha256" not in choice:
        raise InputError(
            tuning, "the sha256 of the chosen run's codes", "none: a tuning of an earlier "
            "version; rerun ted-tune", key="codes_sha256",
        )  # fmt: skip
    if sha256_file(path) != choice["codes_sha256"]:
        raise InputError(
            path, f"the codes {Path(tuning).name} chose (lambda {choice['lambda']})",
            "other codes: the run was retrained since tuning",
        )  # fmt: skip
    return path


def train_sets(bow: Bow, source: str) -> list[str]:
    """The codes of `source`'s training talks: one per pair for English, else its own."""
    return [english(x) for x in bow.languages] if source == PIVOT else [source]


def train_stage(bow_dir: Path, out_dir: Path, settings: dict, threads: int = 1) -> dict:
    """Train Bridge CorrNet with one lambda; write model.pt, codes.npz, history.csv, metrics."""
    import torch

    from mlmm.ted import corrnet

    torch.set_num_threads(threads)
    timer = Timer()
    bow = Bow.load(bow_dir)
    out_dir = Path(out_dir)
    with timer("load"):
        pairs = {
            x: (bow.matrix(x, "train"), bow.matrix(f"{PIVOT}@{x}", "train")) for x in bow.languages
        }
    with timer("train"):
        model, history = corrnet.train(
            pairs,
            bow.meta["vocabulary"][PIVOT],
            pivot=PIVOT,
            hidden=settings["hidden"],
            epochs=settings["epochs"],
            batch_size=settings["batch_size"],
            learning_rate=settings["learning_rate"],
            lam=settings["lambda"],
            seed=settings["seed"],
            binary=settings["input"] == "binary",
            reconstruction=settings.get("reconstruction", "cross_entropy"),
            device=settings.get("device", "cpu"),
        )
    with timer("encode"):
        codes = {
            f"{name}.{split}": corrnet.encode(model, view, bow.matrix(name, split))
            for x in bow.languages
            for view, name in ((x, x), (PIVOT, english(x)))
            for split in ("train", "test")
        }
    # the records inside the model and the archive, written with them: the run (lambda,
    # settings), the bag of words
    run, inputs = codes_run(settings), {"bag of words": bow_digest(bow_dir)}
    corrnet.save(model, out_dir / "model.pt", run, inputs)
    record = inside_record(codes, run, inputs)
    with atomic_path(out_dir / "codes.npz") as tmp, open(tmp, "wb") as handle:
        np.savez(handle, **codes, **{RECORD_KEY: npz_record(record)})
    columns = list(history[0])
    rows = [",".join(str(h[c]) for c in columns) for h in history]
    write_text(out_dir / "history.csv", "\n".join([",".join(columns), *rows]) + "\n")
    metrics = {
        "provenance": provenance(settings, settings["seed"], data=TED_DATA),
        "timings": timer.seconds,
        "seconds_per_epoch": float(np.mean([h["seconds"] for h in history])),
        "history": history,
    }
    write_json(out_dir / "metrics.json", metrics)
    return metrics


def _validation_f1(codes_path: Path, bow: Bow, language: str, settings: dict) -> float:
    """Monolingual validation F1 of `language` (English: mean over its pairs)."""
    archive = read_npz(codes_path, "the codes.npz of ted-train")
    f1 = []
    for name in train_sets(bow, language):
        codes, labels = archive[f"{name}.train"], bow.labels(name, "train")
        fit, held = validation_split(
            len(codes), settings["validation_fraction"], settings["seed"]
        )
        scores = classify(
            lambda: perceptron(settings["perceptron_epochs"]),
            codes[fit],
            labels[fit],
            {"validation": (codes[held], labels[held])},
        )
        where = f"{name}.train validation split (fraction {settings['validation_fraction']})"
        f1.append(macro_f1(scores["validation"], bow.topics, where)[0])
    return float(np.mean(f1))


def tune_stage(
    bow_dir: Path, runs: dict[float, tuple[Path, dict]], out: Path, settings: dict, jobs: int = 1
) -> dict:
    """Pick lambda per source language by a monolingual perceptron's validation F1; ``runs``:
    lambda -> (the run's directory, the settings its metrics.json records)."""
    bow = Bow.load(bow_dir)
    digest = bow_digest(bow_dir)
    why = "the run of metrics.json beside it"
    codes = {lam: codes_file(run, digest, codes_run(made), why)
             for lam, (run, made) in runs.items()}  # fmt: skip
    runs = {lam: run for lam, (run, _) in runs.items()}
    languages = classification_languages(bow)
    lambdas = sorted(runs)
    tasks = [(lang, lam) for lang in languages for lam in lambdas]
    scores = Parallel(n_jobs=jobs)(
        delayed(_validation_f1)(codes[lam], bow, lang, settings) for lang, lam in tasks
    )
    table = {lang: {} for lang in languages}
    for (lang, lam), score in zip(tasks, scores, strict=True):
        table[lang][lambda_name(lam)] = score
    chosen = {}
    for lang in languages:
        best = max(lambdas, key=lambda lam, lang=lang: table[lang][lambda_name(lam)])
        chosen[lang] = _choice(best, runs[best], codes[best], out)
    mean = {lam: np.mean([table[x][lambda_name(lam)] for x in languages]) for lam in lambdas}
    overall = max(lambdas, key=lambda lam: mean[lam])
    result = {
        "provenance": provenance(settings, settings["seed"], data=TED_DATA),
        "validation_f1": table,
        "chosen": chosen,
        "overall": _choice(overall, runs[overall], codes[overall], out),
    }
    write_json(out, result)
    return result


def _choice(lam: float, run: Path, codes: Path, tuning: Path) -> dict:
    """A chosen run as the tuning file records it: its path relative to the tuning file (the
    same file read from another directory finds the same run) and the sha256 of its codes."""
    relative = os.path.relpath(Path(run).resolve(), Path(tuning).resolve().parent)
    return {"lambda": lam, "run": relative, "codes_sha256": sha256_file(codes)}


def classify_stage(bow_dir: Path, tuning: Path, source: str, out: Path, settings: dict) -> dict:
    """Train on `source`'s training talks in the shared space, test on every language.

    English trains one perceptron per pair X (on X's English side), tested on X and on that
    English side; X tests on every Y and on its own pair's English side.
    """
    timer = Timer()
    bow = Bow.load(bow_dir)
    chosen = read_json_object(tuning, ("chosen",), "the tuning JSON of ted-tune")["chosen"]
    if not isinstance(chosen, dict) or not isinstance(chosen.get(source), dict):
        raise InputError(tuning, f"a chosen run for {source}", "none", key=f"chosen.{source}")
    choice = chosen[source]
    codes = read_npz(chosen_run(tuning, choice, bow_digest(bow_dir)), "the codes.npz of ted-train")

    def test(name: str) -> tuple[np.ndarray, np.ndarray]:
        return codes[f"{name}.test"], bow.labels(name, "test")

    with timer("classify"):
        # {test language: {test set: (decisions, gold)}}; English: one set per pair
        decisions: dict[str, dict[str, tuple]] = {}
        if source == PIVOT:
            for x in bow.languages:
                tests = {x: test(x), english(x): test(english(x))}
                predicted = predict(
                    lambda: perceptron(settings["perceptron_epochs"]),
                    codes[f"{english(x)}.train"],
                    bow.labels(x, "train"),
                    tests,
                )
                for name, target in ((english(x), PIVOT), (x, x)):
                    decisions.setdefault(target, {})[name] = (predicted[name], tests[name][1])
        else:
            tests = {PIVOT: test(english(source))} | {x: test(x) for x in bow.languages}
            predicted = predict(
                lambda: perceptron(settings["perceptron_epochs"]),
                codes[f"{source}.train"],
                bow.labels(source, "train"),
                tests,
            )
            decisions = {name: {name: (predicted[name], tests[name][1])} for name in tests}
        scores = _topic_scores(decisions)
    result = {
        "provenance": provenance(settings, settings.get("seed"), data=TED_DATA),
        "timings": timer.seconds,
        "source": source,
        "lambda": choice["lambda"],
        "topics": bow.topics,
        **_scores(scores, bow, bow_dir),
    }
    write_result(out, result, "documents", decisions)
    return result


def _scores(scores: dict[str, np.ndarray], bow: Bow, bow_dir: Path) -> dict:
    """A result's F1 fields: per test language the macro F1, the per-topic F1 (null where
    undefined) and the topics left out of the macro F1 (no positive test talk); the same
    numbers as ``outcomes.decision_metrics`` of the kept decisions (tested)."""
    macro = {x: macro_f1(s, bow.topics, Path(bow_dir) / f"{x}.test") for x, s in scores.items()}
    return {
        "f1": {x: value for x, (value, _) in macro.items()},
        "topic_f1": {x: [None if np.isnan(v) else float(v) for v in s] for x, s in scores.items()},
        "left_out_topics": {x: left_out for x, (_, left_out) in macro.items()},
    }


def _topic_scores(decisions: dict) -> dict[str, np.ndarray]:
    """Per-topic F1 of every test language: the mean over its test sets (English: pairs),
    each topic over the sets where it is defined (``classify.mean_over_sets``)."""
    return {
        test: mean_over_sets([topic_f1(gold, predicted) for predicted, gold in sets.values()])
        for test, sets in decisions.items()
    }


def _nb_decisions(bow: Bow, language: str) -> dict[str, tuple]:
    """{test set: (decisions, gold)} of `language` (English: its pairs' English sides)."""
    out = {}
    for name in train_sets(bow, language):
        gold = bow.labels(name, "test")
        predicted = predict(
            naive_bayes,
            bow.matrix(name, "train"),
            bow.labels(name, "train"),
            {"test": (bow.matrix(name, "test"), gold)},
        )["test"]
        out[name] = (predicted, gold)
    return out


def nb_stage(bow_dir: Path, out: Path, jobs: int = 1) -> dict:
    """Monolingual multinomial Naive Bayes on raw counts, per language (Table 3 baseline)."""
    timer = Timer()
    bow = Bow.load(bow_dir)
    languages = classification_languages(bow)
    with timer("classify"):
        found = Parallel(n_jobs=jobs)(delayed(_nb_decisions)(bow, x) for x in languages)
    decisions = dict(zip(languages, found, strict=True))
    scores = _topic_scores(decisions)
    result = {
        "provenance": provenance({}, None, data=TED_DATA),
        "timings": timer.seconds,
        "topics": bow.topics,
        **_scores(scores, bow, bow_dir),
    }
    write_result(out, result, "documents", decisions)
    return result
