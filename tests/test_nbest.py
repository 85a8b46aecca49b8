"""Moses n-best reader/writer: round trip, odd but valid lists, malformed lines."""

import numpy as np
import pytest

from mlmm.errors import InputError
from mlmm.nbest import (
    NBestList,
    read_nbest,
    read_references,
    read_weights,
    weight_vector,
    write_nbest,
    write_weights,
)


def _list() -> NBestList:
    return NBestList(
        [("NMT", 1), ("LM", 2)],
        [0, 1, 2],
        [["ein hund", "ein hund .", ""], ["zwei katzen"], ["x", "x"]],
        [np.array([[-1.5, 0.1, 2.0], [-2.25, 0.3, -1e-9], [-7.0, 0.0, 0.0]]),
         np.array([[-0.5, 1.0, 1.0]]),
         np.array([[-1.0, 2.0, 3.0], [-1.0, 2.0, 3.0]])],
        [np.array([-1.5, -2.25, -7.0]), np.array([-0.5]), np.array([-1.0, -1.0])],
    )


def test_round_trip_is_exact(tmp_path):
    original = _list()
    write_nbest(tmp_path / "a.nbest", original)
    back = read_nbest(tmp_path / "a.nbest")
    assert back.layout == original.layout and back.ids == original.ids
    assert back.texts == original.texts  # empty hypothesis and duplicates survive
    for a, b in zip(back.features + back.scores, original.features + original.scores, strict=True):
        np.testing.assert_array_equal(a, b)
    write_nbest(tmp_path / "b.nbest", back)
    assert (tmp_path / "a.nbest").read_text() == (tmp_path / "b.nbest").read_text()


def test_feature_order_and_grouping(tmp_path):
    path = tmp_path / "l.nbest"
    path.write_text(
        "0 ||| a b ||| A= 1 B= 2 3 ||| 0.5\n"
        "0 ||| c ||| B= 7 8 A= 9 ||| 2\n"
        "1 |||  ||| B= 4 5 A= 6 ||| -1\n"
    )
    nbest = read_nbest(path)
    assert nbest.ids == [0, 1] and nbest.texts == [["a b", "c"], [""]]
    assert nbest.columns == ["A", "B.0", "B.1"]
    np.testing.assert_array_equal(nbest.features[0], [[1, 2, 3], [9, 7, 8]])
    np.testing.assert_array_equal(nbest.select(["B"]).features[1], [[4, 5]])


@pytest.mark.parametrize(
    ("line", "message"),
    [
        ("0 ||| a ||| A= 1 ||| ", "numeric score"),
        ("0 ||| a ||| A= 1", "4 fields"),
        ("x ||| a ||| A= 1 ||| 1", "integer id"),
        ("0 ||| a ||| 1 A= 1 ||| 1", "'Name=' label before values"),
        ("0 ||| a ||| A= ||| 1", "'Name= v1 v2 ...'"),
        ("0 ||| a ||| A= one ||| 1", "a number"),
        ("0 ||| a ||| A= nan ||| 1", "a finite number"),  # the fast path of later lines
        ("0 ||| a ||| A= -inf ||| 1", "a finite number"),
        ("0 ||| a ||| A=1 ||| 1", "'Name=' label before values"),
        ("0 ||| a ||| A= 1 2 ||| 1", "features {'A': 1}"),
        ("0 ||| a ||| B= 1 ||| 1", "features {'A': 1}"),
        ("0 ||| a ||| A= 1 A= 2 ||| 1", "distinct"),
        ("", "an n-best line"),
        ("2 ||| a ||| A= 1 ||| 1", "sentence id 0 or 1 (ids 0, 1, 2, ... in contiguous"),
    ],
)
def test_malformed_line_names_its_number(tmp_path, line, message):
    path = tmp_path / "bad.nbest"
    path.write_text("0 ||| ok ||| A= 1 ||| 1\n" + line + "\n0 ||| ok ||| A= 1 ||| 1\n")
    with pytest.raises(InputError, match=r"line 2: expected .*") as info:
        read_nbest(path)
    assert message in str(info.value)


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("1 ||| b ||| A= 1 ||| 1\n0 ||| a ||| A= 1 ||| 1\n", "line 1: expected sentence id 0"),
        ("0 ||| a ||| A= 1 ||| 1\n2 ||| c ||| A= 1 ||| 1\n", "line 2: expected sentence id 0 or"),
        (
            "0 ||| a ||| A= 1 ||| 1\n1 ||| b ||| A= 1 ||| 1\n0 ||| a ||| A= 1 ||| 1\n",
            r"line 3: expected sentence id 1 or 2 \(ids .* blocks\), found id 0$",
        ),
    ],
)
def test_ids_out_of_order_gaps_and_split_blocks_are_refused(tmp_path, text, message):
    """Order of first appearance used to decide the 1-best order: TER 77.8 instead of 22.2."""
    path = tmp_path / "l.nbest"
    path.write_text(text)
    with pytest.raises(InputError, match=message):
        read_nbest(path)


def test_references_one_line_per_sentence_in_either_direction(tmp_path):
    ref1, ref2 = tmp_path / "r1", tmp_path / "r2"
    ref1.write_text("a\nb\nc\n")
    ref2.write_text("A\nB\nC\n")
    assert read_references([ref1, ref2], [0, 1, 2]) == [["a", "A"], ["b", "B"], ["c", "C"]]
    with pytest.raises(InputError, match="r1: expected 2 lines, one per sentence .*, found 3"):
        read_references([ref1], [0, 1])
    with pytest.raises(InputError, match="r1: expected 4 lines, one per sentence .*, found 3"):
        read_references([ref1], [0, 1, 2, 3])


def test_weights_round_trip_and_unknown_features(tmp_path):
    layout = [("NMT", 1), ("LM", 2)]
    write_weights(tmp_path / "w", layout, np.array([0.5, -1.0, 2.0]), {})
    weights = read_weights(tmp_path / "w")
    np.testing.assert_array_equal(weight_vector(layout, weights, "w"), [0.5, -1.0, 2.0])
    np.testing.assert_array_equal(
        weight_vector([("LM", 2), ("Other", 1)], weights, "w"), [-1.0, 2.0, 0.0]
    )
