"""The perceptron settings against a hand-written Collins averaged perceptron; F1 convention."""

import numpy as np
import pytest
from sklearn.metrics import f1_score

from mlmm.errors import InputError
from mlmm.ted.classify import (
    classify,
    fit_predict,
    macro_f1,
    mean_over_sets,
    perceptron,
    topic_f1,
)


def collins_averaged_perceptron(x, y, epochs):
    """Mistake-driven updates w += y x, b += y; weights averaged over every step."""
    signs = np.where(y, 1.0, -1.0)
    w, b = np.zeros(x.shape[1]), 0.0
    w_sum, b_sum, steps = np.zeros_like(w), 0.0, 0
    for _ in range(epochs):
        for xi, yi in zip(x, signs, strict=True):
            if yi * (xi @ w + b) <= 0:
                w += yi * xi
                b += yi
            w_sum += w
            b_sum += b
            steps += 1
    return w_sum / steps, b_sum / steps


def test_sklearn_settings_equal_collins_averaged_perceptron():
    rng = np.random.default_rng(0)
    x = rng.normal(size=(40, 5))
    y = (x @ np.array([1.0, -2.0, 0.5, 0.0, 1.0]) + 0.3 * rng.normal(size=40)) > 0
    model = perceptron(epochs=10).fit(x, y)
    w, b = collins_averaged_perceptron(x, y, epochs=10)
    np.testing.assert_allclose(model.coef_.ravel(), w, rtol=1e-10, atol=1e-10)
    np.testing.assert_allclose(model.intercept_[0], b, rtol=1e-10, atol=1e-10)
    np.testing.assert_array_equal(model.predict(x), (x @ w + b) > 0)


def test_f1_is_zero_for_a_topic_never_predicted():
    y_true = np.array([[1, 1], [0, 1], [1, 0], [0, 0]], dtype=bool)
    y_pred = np.array([[1, 0], [0, 0], [1, 0], [1, 0]], dtype=bool)
    f1 = topic_f1(y_true, y_pred)
    np.testing.assert_allclose(f1, [2 * 1.0 * (2 / 3) / (1.0 + 2 / 3), 0.0])
    assert f1.mean() == f1[0] / 2


def test_f1_equals_sklearn_with_zero_division_0():
    rng = np.random.default_rng(2)
    y_true, y_pred = rng.random((30, 6)) < 0.3, rng.random((30, 6)) < 0.2
    y_pred[:, 0] = False  # never predicted
    y_true[:, 1] = False  # never true: undefined, NaN
    expected = [f1_score(y_true[:, t], y_pred[:, t], zero_division=0) for t in range(6)]
    expected[1] = np.nan
    np.testing.assert_allclose(topic_f1(y_true, y_pred), expected)


@pytest.mark.parametrize("predicted", [False, True], ids=["never_predicted", "predicted"])
def test_a_topic_without_positive_test_talk_is_left_out_by_name(predicted):
    """Such a topic was averaged in as F1 0; its F1 is 0/0 (no recall)."""
    y_true = np.array([[1, 0, 1], [0, 0, 1], [1, 0, 0]], dtype=bool)
    y_pred = np.array([[1, predicted, 1], [0, 0, 0], [1, 0, 0]], dtype=bool)
    per_topic = topic_f1(y_true, y_pred)
    assert np.isnan(per_topic[1])
    value, left_out = macro_f1(per_topic, ["art", "arts", "science"], "fr.test")
    assert left_out == ["arts"]
    assert value == pytest.approx((1.0 + 2 / 3) / 2)


def test_macro_f1_refuses_a_test_set_without_any_positive():
    per_topic = topic_f1(np.zeros((4, 2), bool), np.ones((4, 2), bool))
    with pytest.raises(InputError, match="fr.test: expected a positive test talk"):
        macro_f1(per_topic, ["art", "arts"], "fr.test")


def test_english_averages_each_topic_over_the_pairs_where_it_is_defined():
    per_pair = [np.array([0.5, np.nan, np.nan]), np.array([1.0, 0.25, np.nan])]
    np.testing.assert_allclose(mean_over_sets(per_pair), [0.75, 0.25, np.nan])


def test_single_class_training_predicts_that_class():
    x = np.ones((3, 2))
    assert fit_predict(perceptron(), x, np.zeros(3, bool), [x])[0].tolist() == [False] * 3


def test_classify_scores_every_test_set_per_topic():
    rng = np.random.default_rng(1)
    x = rng.normal(size=(60, 4))
    y = np.stack([x[:, 0] > 0, x[:, 1] > 0.5], axis=1)
    scores = classify(perceptron, x[:40], y[:40], {"a": (x[40:], y[40:]), "b": (x[:20], y[:20])})
    assert set(scores) == {"a", "b"}
    assert scores["a"].shape == (2,)
    assert scores["b"].min() > 0.5  # separable topics are learned
