"""Degenerate inputs are refused, not scored (``mlmm.degenerate``).

Each category is one parametrised test over every subcommand it applies to; the checks live in
the metric and reader functions (``mlmm.nmt.metrics.mt_metrics``, ``mlmm.nmt.train``,
``mlmm.rerank.mira``, ``mlmm.evaluation.sts_pearson``, ``mlmm.data.prepare.jaccard``,
``mlmm.data.multi30k.image_list``, ``mlmm.io.read_lines``), so a new command that computes the
metric refuses the same input.
"""

from __future__ import annotations

import json
import unicodedata
from collections.abc import Callable
from pathlib import Path

import numpy as np
import pytest
from helpers.nbest import GOOD_NBEST
from helpers.nmt import nmt_data, nmt_record
from helpers.one_line import Case, check

from mlmm.cli import main
from mlmm.data import multi30k
from mlmm.data.prepare import jaccard
from mlmm.errors import InputError
from mlmm.evaluation import sts_pearson
from mlmm.nmt.metrics import mt_metrics
from mlmm.rerank import mira, nbest_stats

REF = ["ein hund läuft", "zwei katzen", "ein mann"]


def _write(path: Path, lines: list[str]) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("".join(line + "\n" for line in lines), encoding="utf-8")
    return path


def _train_nmt(tmp_path: Path, **train) -> tuple[list[str], list[Path]]:
    outs = [tmp_path / "m.pt", tmp_path / "h.csv", tmp_path / "m.json"]
    record = nmt_record(tmp_path / "record.json", **train)
    argv = ["train-nmt", "--config", str(record), "--data", str(tmp_path / "data"), "--out",
            str(outs[0]), "--history", str(outs[1]), "--metrics", str(outs[2]), "--device",
            "cpu"]  # fmt: skip
    return argv, outs


def _mt_score(tmp_path: Path) -> tuple[list[str], list[Path]]:
    out = tmp_path / "s.json"
    argv = ["mt-score", "--hyp", str(tmp_path / "hyp"), "--ref", str(tmp_path / "ref"),
            "--meteor-jar", "none", "--system", "NMT", "--out", str(out)]  # fmt: skip
    return argv, [out]


def _mira(tmp_path: Path, nbest: list[str] = GOOD_NBEST) -> tuple[list[str], list[Path]]:
    _write(tmp_path / "dev.nbest", nbest)
    out = tmp_path / "w"
    argv = ["mira", "--nbest", str(tmp_path / "dev.nbest"), "--ref", str(tmp_path / "ref"),
            "--iters", "2", "--out", str(out)]  # fmt: skip
    return argv, [out]


# ------------------------------------------------------------------------------------------
# parallel texts of different lengths: every command that pairs lines of two files


def _short_hypotheses(tmp_path):
    _write(tmp_path / "ref", REF)
    _write(tmp_path / "hyp", REF[:2])
    argv, outs = _mt_score(tmp_path)
    return argv, outs, [str(tmp_path / "hyp"), "expected 3 lines", "found 2"]


def _short_train_side(tmp_path):
    data = nmt_data(tmp_path)
    _write(data / "train.lc.norm.tok.de", [f"ein hund {i}" for i in range(5)])
    argv, outs = _train_nmt(tmp_path)
    return argv, outs, ["train.lc.norm.tok.de: expected 6 lines", "found 5"]


def _short_val_side(tmp_path):
    data = nmt_data(tmp_path)
    _write(data / "val.lc.norm.tok.de", ["ein hund", "zwei katzen"])
    argv, outs = _train_nmt(tmp_path)
    return argv, outs, ["val.lc.norm.tok.de: expected 3 lines", "found 2"]


def _short_references(tmp_path):
    _write(tmp_path / "ref", REF[:2])
    argv, outs = _mira(tmp_path)
    return argv, outs, [str(tmp_path / "ref"), "expected 3 lines", "found 2"]


LENGTHS: dict[str, Callable] = {
    "mt-score hypotheses": _short_hypotheses,
    "train-nmt train sides": _short_train_side,
    "train-nmt val sides": _short_val_side,
    "mira references": _short_references,
}


@pytest.mark.parametrize("case", list(LENGTHS))
def test_parallel_texts_of_different_lengths_are_refused(case, tmp_path, capsys):
    argv, outs, says = LENGTHS[case](tmp_path)
    check(Case(argv, says, outs), capsys)


# ------------------------------------------------------------------------------------------
# NUL bytes: every command reading text (mlmm.io.read_lines)


def _nul(path: Path, line: int = 2) -> None:
    lines = path.read_text(encoding="utf-8").splitlines()
    lines[line - 1] = "\x00\x00\x00"
    _write(path, lines)


def _nul_mt_score(tmp_path):
    _write(tmp_path / "ref", REF)
    _nul(_write(tmp_path / "hyp", REF))
    return (*_mt_score(tmp_path), tmp_path / "hyp")


def _nul_train_nmt(tmp_path):
    data = nmt_data(tmp_path)
    _nul(data / "train.lc.norm.tok.en")
    return (*_train_nmt(tmp_path), data / "train.lc.norm.tok.en")


def _nul_mira(tmp_path):
    _nul(_write(tmp_path / "ref", REF))
    return (*_mira(tmp_path), tmp_path / "ref")


def _nul_nbest_features(tmp_path):
    _write(tmp_path / "dev.nbest", GOOD_NBEST)
    _nul(_write(tmp_path / "src.en", ["a dog", "two cats", "a man"]))
    out = tmp_path / "f.nbest"
    argv = ["nbest-features", "--nbest", str(tmp_path / "dev.nbest"), "--source",
            str(tmp_path / "src.en"), "--out", str(out)]  # fmt: skip
    return argv, [out], tmp_path / "src.en"


def _nul_features(tmp_path):
    (tmp_path / "images").mkdir()
    _nul(_write(tmp_path / "split.txt", ["a.jpg", "b.jpg", "c.jpg"]))
    out = tmp_path / "f" / "val.npy"
    argv = ["features", "--images", str(tmp_path / "images"), "--split",
            str(tmp_path / "split.txt"), "--out", str(out), "--device", "cpu",
            "--backbone", "resnet50"]  # fmt: skip
    return argv, [out], tmp_path / "split.txt"


NUL: dict[str, Callable] = {
    "mt-score": _nul_mt_score,
    "train-nmt": _nul_train_nmt,
    "mira": _nul_mira,
    "nbest-features": _nul_nbest_features,
    "features": _nul_features,
}


@pytest.mark.parametrize("command", list(NUL))
def test_a_line_of_nul_bytes_is_refused(command, tmp_path, capsys):
    argv, outs, damaged = NUL[command](tmp_path)
    says = [f"{damaged}, line 2: expected text without NUL bytes", "found a NUL byte"]
    check(Case(argv, says, outs), capsys)


# ------------------------------------------------------------------------------------------
# Unicode forms: text is compared in NFC (BLEU of the same words is the same)


def test_nfd_references_score_as_their_nfc_text(tmp_path, capsys):
    text = [f"ein mädchen läuft über die straße {i}" for i in range(3)]
    nfd = [unicodedata.normalize("NFD", line) for line in text]
    assert nfd != text
    assert mt_metrics(text, nfd, "de")["BLEU"] == pytest.approx(100.0)
    _write(tmp_path / "hyp", text)
    _write(tmp_path / "ref", nfd)
    argv, (out,) = _mt_score(tmp_path)
    assert main(argv) == 0
    assert json.loads(out.read_text())["scores"]["BLEU"] == pytest.approx(100.0)
    stats_nfc = nbest_stats([[text[0]]], [[text[0]]])
    assert np.array_equal(nbest_stats([[text[0]]], [[nfd[0]]])[0], stats_nfc[0])


# ------------------------------------------------------------------------------------------
# nothing to score or train on, constants, empty sets, repeated ids


def test_no_training_pair_left_after_max_length_is_refused(tmp_path, capsys):
    nmt_data(tmp_path)
    argv, outs = _train_nmt(tmp_path, max_length=2)
    says = ["train.lc.norm.tok.en: expected at least one training pair shorter than "
            "train.max_length (2)", "found none of 6"]  # fmt: skip
    check(Case(argv, says, outs), capsys)


def test_mira_on_features_constant_within_every_list_is_refused(tmp_path, capsys):
    flat = [line.replace("-2.0 WordPenalty= -3", "-1.0 WordPenalty= -2") for line in GOOD_NBEST]
    _write(tmp_path / "ref", REF)
    argv, outs = _mira(tmp_path, flat)
    says = ["dev.nbest: expected features that differ", "found one feature vector per list"]
    check(Case(argv, says, outs), capsys)
    with pytest.raises(InputError, match="lists: expected at least one n-best list"):
        mira([], [], iters=1, where="lists")


def test_constant_sts_gold_or_similarities_are_refused():
    rng = np.random.default_rng(0)
    a, b = rng.normal(size=(4, 3)), rng.normal(size=(4, 3))
    with pytest.raises(InputError, match="gs.txt: expected gold scores that vary.*all 4 equal"):
        sts_pearson(a, b, [2.0] * 4, "gs.txt")
    with pytest.raises(InputError, match="gs.txt: expected similarities .* that vary"):
        sts_pearson(a, a, [1.0, 2.0, 3.0, 4.0], "gs.txt")
    assert -1 <= sts_pearson(a, b, [1.0, 2.0, 3.0, 4.0], "gs.txt") <= 1


def test_two_empty_vocabularies_have_no_jaccard_overlap():
    with pytest.raises(InputError, match="m30k: expected at least one word in either"):
        jaccard(set(), set(), "m30k")
    assert jaccard(set(), {"a"}) == 0.0


def test_an_image_named_twice_in_a_split_list_is_refused(tmp_path, capsys):
    split = _write(tmp_path / "data/task1/image_splits/val.txt", ["a.jpg", "b.jpg", "a.jpg"])
    with pytest.raises(InputError, match=r"val.txt, line 3: expected each image name once, "
                                         r"found 'a.jpg' again \(first on line 1\)"):
        multi30k.image_list(tmp_path, "val")
    (tmp_path / "images").mkdir()
    out = tmp_path / "f" / "val.npy"
    argv = ["features", "--images", str(tmp_path / "images"), "--split", str(split),
            "--out", str(out), "--device", "cpu", "--backbone", "resnet50"]  # fmt: skip
    check(Case(argv, [f"{split}, line 3: expected each image name once"], [out]), capsys)
