"""Topic classifiers for TED CLDC: averaged perceptron per topic, multinomial Naive Bayes.

The perceptron is scikit-learn's SGDClassifier with the settings under which it is a Collins
averaged perceptron (learning rate 1, no regularisation, no shuffling, the weights averaged
over every step; tests/test_ted_classify.py checks this against a hand-written one), trained
for 10 epochs as in Hermann & Blunsom (2014) and Rajendran et al. (2016). The score is the F1
of the positive class, averaged over the topics (``macro_f1``); a topic never predicted positive
scores 0; a topic with no positive test talk has no F1 (0/0) and is left out of the average, by
name (on the paper's corpus every test set has every topic, so none is left out).
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

import numpy as np
from sklearn.linear_model import SGDClassifier
from sklearn.naive_bayes import MultinomialNB

from mlmm.errors import InputError


def perceptron(epochs: int = 10) -> SGDClassifier:
    return SGDClassifier(
        loss="perceptron",
        learning_rate="constant",
        eta0=1.0,
        penalty=None,
        alpha=0.0,
        average=True,
        shuffle=False,
        tol=None,
        max_iter=epochs,
    )


def fit_predict(model, x_train, y_train: np.ndarray, tests: list) -> list[np.ndarray]:
    """Fit on (x_train, y_train) and predict every matrix in `tests`; a training set with one
    class only predicts that class everywhere."""
    if len(np.unique(y_train)) < 2:
        value = bool(y_train[0]) if len(y_train) else False
        return [np.full(x.shape[0], value) for x in tests]
    model.fit(x_train, y_train)
    return [model.predict(x).astype(bool) for x in tests]


def topic_f1(y_true: np.ndarray, y_pred: np.ndarray) -> np.ndarray:
    """F1 of the positive class per topic (columns); 0 where nothing is predicted positive,
    NaN (undefined: recall is 0/0) where no test document is positive.

    Elsewhere equal to sklearn's f1_score(zero_division=0) per column (tested), without its
    per-call validation cost, which dominated 121 x 15 evaluations."""
    y_true, y_pred = y_true.astype(bool), y_pred.astype(bool)
    true_pos = (y_true & y_pred).sum(axis=0)
    positives = y_true.sum(axis=0)
    denominator = positives + y_pred.sum(axis=0)
    return np.where(positives > 0, 2 * true_pos / np.maximum(denominator, 1), np.nan)


def mean_over_sets(per_set: Sequence[np.ndarray]) -> np.ndarray:
    """Per-topic F1 averaged over several test sets (English: one per pair), each topic over
    the sets where it is defined; NaN where it is defined in none."""
    stacked = np.asarray(per_set, dtype=np.float64)
    defined = ~np.isnan(stacked)
    total = np.where(defined, stacked, 0.0).sum(axis=0)
    counts = defined.sum(axis=0)
    return np.where(counts > 0, total / np.maximum(counts, 1), np.nan)


def macro_f1(
    per_topic: np.ndarray, topics: Sequence[str], where: str | Path
) -> tuple[float, list[str]]:
    """The score every TED caller reports: the mean of the per-topic F1 over the topics where
    it is defined, and the topics left out (no positive test talk). Hermann & Blunsom (2014)
    and Rajendran et al. (2016, section 5.2) average F1 over the topics; scoring an undefined
    topic 0 would count a property of the test set against the system. A test set without a
    positive talk of any topic has no score and is refused."""
    per_topic = np.asarray(per_topic, dtype=np.float64)
    undefined = np.isnan(per_topic)
    if undefined.all():
        raise InputError(where, "a positive test talk of at least one topic (F1 is 0/0)", "none")
    left_out = [topics[i] if i < len(topics) else str(i) for i in np.flatnonzero(undefined)]
    return float(per_topic[~undefined].mean()), left_out


def predict(
    make_model, x_train, y_train: np.ndarray, tests: dict[str, tuple]
) -> dict[str, np.ndarray]:
    """One binary classifier per topic; returns {test name: (documents, topics) decisions}
    for tests = {name: (x_test, y_test)} (the per-document outcomes kept beside the F1)."""
    names = list(tests)
    predictions = {name: np.zeros(tests[name][1].shape, dtype=bool) for name in names}
    for t in range(y_train.shape[1]):
        outputs = fit_predict(make_model(), x_train, y_train[:, t], [tests[n][0] for n in names])
        for name, output in zip(names, outputs, strict=True):
            predictions[name][:, t] = output
    return predictions


def classify(
    make_model, x_train, y_train: np.ndarray, tests: dict[str, tuple]
) -> dict[str, np.ndarray]:
    """One binary classifier per topic; returns {test name: per-topic F1} for
    tests = {name: (x_test, y_test)}."""
    predictions = predict(make_model, x_train, y_train, tests)
    return {name: topic_f1(tests[name][1], predictions[name]) for name in tests}


def naive_bayes() -> MultinomialNB:
    return MultinomialNB()


def validation_split(n: int, fraction: float, seed: int) -> tuple[np.ndarray, np.ndarray]:
    """Train / validation row indices of a source language's training talks."""
    order = np.random.default_rng(seed).permutation(n)
    cut = n - max(1, round(n * fraction))
    return np.sort(order[:cut]), np.sort(order[cut:])
