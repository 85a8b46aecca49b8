"""k-best batch MIRA and reranking: BLEU statistics, a list with a known optimum, CLI."""

import importlib.util
from pathlib import Path

import numpy as np
import pytest
import sacrebleu

import mlmm.rerank as rerank_module
from mlmm.cli import main
from mlmm.errors import InputError
from mlmm.nbest import NBestList, read_weights, write_nbest
from mlmm.rerank import background_bleu, bleu_stats, corpus_bleu, mira, nbest_stats, rerank

HYPS = ["a man rides a red bike on the road", "two dogs run", "a woman is in the park",
        "the cat", "children play football on a green field today"]
REFS = [["a man rides a red bicycle on the road", "a man is riding a bike"],
        ["two dogs run in the snow", "dogs running"], ["a woman sits in the park", "a woman"],
        ["the cat sleeps on the sofa", "a cat"],
        ["children play football on a field", "kids play soccer on green grass today"]]


def test_corpus_bleu_from_stats_equals_sacrebleu():
    stats = np.array([bleu_stats(h, r) for h, r in zip(HYPS, REFS, strict=True)])
    ours = corpus_bleu(stats)
    theirs = sacrebleu.corpus_bleu(
        HYPS, [list(r) for r in zip(*REFS, strict=True)], tokenize="none", smooth_method="none"
    ).score
    assert ours == pytest.approx(theirs, abs=1e-9)
    assert ours > 0


def test_background_bleu_is_moses_formula():
    stats = bleu_stats("a b c d", ["a b c e f"])
    background = np.arange(1, 10, dtype=float)
    total = stats + background
    logp = np.mean(np.log(total[:4]) - np.log(total[4:8]))
    expected = np.exp(logp + min(0, 1 - total[8] / total[4])) * total[8]
    assert background_bleu(stats[None], background)[0] == pytest.approx(expected)


def _known_optimum():
    """Per sentence: the reference itself (feature 'good' = 1) and two wrong hypotheses that the
    initial weights (NMT feature) prefer; the optimum picks the reference everywhere."""
    refs = [["a dog runs on the grass"], ["two men sit on a bench"], ["a girl jumps into water"],
            ["a red car drives by"]]
    texts, feats = [], []
    for (ref,) in refs:
        words = ref.split()
        texts.append([" ".join(words[:2]), ref, " ".join(reversed(words)), ref])
        feats.append(np.array([[-1.0, 0.0], [-3.0, 1.0], [-2.0, 0.0], [-3.0, 1.0]]))
    return NBestList([("NMT", 1), ("Good", 1)], list(range(4)), texts, feats,
                     [f[:, 0] for f in feats]), refs


def test_mira_finds_known_optimum_and_reranked_bleu_matches_sacrebleu():
    nbest, refs = _known_optimum()
    stats = nbest_stats(nbest.texts, refs)
    result = mira(nbest.features, stats, iters=30, seed=3, initial=np.array([0.1, 0.0]))
    assert result.initial_bleu < 100
    assert result.best_bleu == pytest.approx(100.0)
    assert result.weights[1] > 2 * result.weights[0]
    best = rerank(nbest.features, result.weights)
    assert list(best) == [1, 1, 1, 1]
    output = [t[b] for t, b in zip(nbest.texts, best, strict=True)]
    check = sacrebleu.corpus_bleu(output, [[r[0] for r in refs]], tokenize="none").score
    assert check == pytest.approx(result.best_bleu)


def test_mira_is_seeded_and_handles_single_and_duplicate_hypotheses():
    nbest, refs = _known_optimum()
    features = [*nbest.features, np.array([[0.5, 0.5]])]
    stats = [*nbest_stats(nbest.texts, refs), bleu_stats("x", ["y"])[None]]
    a = mira(features, stats, iters=5, seed=7)
    b = mira(features, stats, iters=5, seed=7)
    np.testing.assert_array_equal(a.weights, b.weights)
    assert [h["bleu"] for h in a.history] == [h["bleu"] for h in b.history]


def _bench_mira():
    spec = importlib.util.spec_from_file_location(
        "bench_mira", Path(__file__).resolve().parents[1] / "benchmarks" / "mira.py"
    )
    bench = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(bench)
    return bench


def test_mira_in_list_order_is_kbmira_no_shuffle():
    """shuffle=False visits the sentences in list order every epoch (kbmira --no-shuffle, what
    benchmarks/mira.py --agreement compares step by step): the seed no longer matters, the
    list's order does."""
    bench = _bench_mira()
    feats, stats = bench.synthetic_lists(12, 15, 4, seed=2)
    one = mira(feats, stats, 4, seed=1, shuffle=False)
    two = mira(feats, stats, 4, seed=2, shuffle=False)
    np.testing.assert_array_equal(one.weights, two.weights)
    assert one.history == two.history
    backwards = mira(feats[::-1], stats[::-1], 4, shuffle=False)
    assert backwards.history != one.history


def test_kbmira_epoch_lines_are_read():
    bench = _bench_mira()
    line = "100/100 updates, avg loss = 9.57111, BLEU = 0.284503"
    match = bench.KBMIRA_EPOCH.match(line)
    assert (int(match[1]), float(match[2]), float(match[3])) == (100, 9.57111, 0.284503)
    assert bench.KBMIRA_EPOCH.match("Initial BLEU = 0.253642") is None


@pytest.mark.skipif(rerank_module._mira_epoch is None, reason="built without a C compiler")
@pytest.mark.parametrize("shuffle", [True, False])
def test_the_compiled_and_numpy_epoch_loops_take_the_same_steps(monkeypatch, shuffle):
    """mlmm/_mira_epoch.c is _numpy_epoch step for step: the same updates every epoch, the same
    best epoch, weights equal to rounding (C takes one log of the precisions' product), on
    lists with a duplicate hypothesis and a one-hypothesis sentence."""
    bench = _bench_mira()
    feats, stats = bench.synthetic_lists(40, 30, 5, seed=3)
    feats[0][3] = feats[0][1]
    feats, stats = [*feats, feats[1][:1]], [*stats, stats[1][:1]]
    compiled = mira(feats, stats, 25, seed=4, shuffle=shuffle)
    monkeypatch.setattr(rerank_module, "_mira_epoch", None)
    numpy = mira(feats, stats, 25, seed=4, shuffle=shuffle)
    assert (compiled.epoch_loop, numpy.epoch_loop) == ("compiled", "numpy")
    assert [h["updates"] for h in compiled.history] == [h["updates"] for h in numpy.history]
    assert compiled.best_epoch == numpy.best_epoch
    np.testing.assert_allclose(compiled.weights, numpy.weights, rtol=1e-9, atol=1e-12)
    np.testing.assert_allclose([h["avg_loss"] for h in compiled.history],
                               [h["avg_loss"] for h in numpy.history], rtol=1e-9)  # fmt: skip


def test_the_compiled_epoch_refuses_arrays_of_the_wrong_size():
    if rerank_module._mira_epoch is None:
        pytest.skip("built without a C compiler")
    w, totals = np.zeros(3), np.zeros(3)
    with pytest.raises(ValueError, match="background"):
        rerank_module._mira_epoch.epoch(np.zeros((2, 4, 3)), np.ones((2, 4, 9)),
                                        np.array([4, 4]), np.array([0, 1]), w, totals,
                                        np.ones(8), 0.01, 0.999)  # fmt: skip
    with pytest.raises(IndexError, match="sentence 2 of 2"):
        rerank_module._mira_epoch.epoch(np.zeros((2, 4, 3)), np.ones((2, 4, 9)),
                                        np.array([4, 4]), np.array([2]), w, totals,
                                        np.ones(9), 0.01, 0.999)  # fmt: skip


def test_a_build_from_another_source_is_refused(tmp_path):
    """An editable install keeps its build after the .c changes (a git pull): mira then runs
    the numpy loop, with a warning saying how to rebuild, rather than an older compiled loop."""
    import hashlib
    import types

    source = tmp_path / "_mira_epoch.c"
    source.write_text("/* one version */\n", encoding="utf-8")
    built = types.ModuleType("built")
    built.SOURCE_SHA256 = hashlib.sha256(source.read_bytes()).hexdigest()
    assert rerank_module.current_build(built, source) is built
    assert rerank_module.current_build(built, tmp_path / "absent.c") is built  # a wheel
    source.write_text("/* another version */\n", encoding="utf-8")
    older = types.ModuleType("older")
    older.SOURCE_SHA256 = built.SOURCE_SHA256
    with pytest.warns(UserWarning, match="older _mira_epoch.c.*make setup"):
        assert rerank_module.current_build(older, source) is None
    with pytest.warns(UserWarning, match="numpy epoch loop"):
        assert rerank_module.current_build(types.ModuleType("unstamped"), source) is None
    assert rerank_module.current_build(None, source) is None


@pytest.mark.skipif(rerank_module._mira_epoch is None, reason="built without a C compiler")
def test_the_installed_build_is_of_the_source_beside_it():
    """setup.py stamps the build with its source's sha256: this checkout's build is current
    (a stale one fails here, and mira would run the numpy loop)."""
    assert rerank_module.current_build(rerank_module._mira_epoch, rerank_module.MIRA_SOURCE)


def _counted_stats(hypothesis: str, references: list[str]) -> list[int]:
    """BLEU statistics counted the plain way, a Counter of n-grams per sentence (the code
    sentence_stats replaced): matches clipped by the most any one reference holds."""
    from collections import Counter

    def grams(tokens, n):
        return Counter(tuple(tokens[i : i + n]) for i in range(len(tokens) - n + 1))

    hyp, refs = hypothesis.split(), [r.split() for r in references]
    row = []
    for n in range(1, 5):
        most = Counter()
        for ref in refs:
            most |= grams(ref, n)
        row.append(sum(min(c, most[g]) for g, c in grams(hyp, n).items()))
    row += [max(len(hyp) - n + 1, 0) for n in range(1, 5)]
    return [*row, min((abs(len(r) - len(hyp)), len(r)) for r in refs)[1]]


def test_sentence_statistics_equal_counting_each_hypothesis():
    """Vectorised over the whole list (token ids, n-gram ids by rank) = a Counter per
    hypothesis, on small vocabularies (many repeated and clipped n-grams), with empty
    hypotheses and references and 1-3 references per sentence."""
    from mlmm.rerank import sentence_stats

    rng = np.random.default_rng(11)
    words = ["a", "b", "c", "d", "e"]
    hyps, refs = [], []
    for _ in range(60):
        sentence = lambda: " ".join(rng.choice(words, size=rng.integers(0, 12)))  # noqa: E731
        hyps.append([sentence() for _ in range(rng.integers(1, 8))])
        refs.append([sentence() for _ in range(rng.integers(1, 4))])
    got = sentence_stats(hyps, refs)
    for h, r, stats in zip(hyps, refs, got, strict=True):
        assert stats.tolist() == [_counted_stats(x, r) for x in h]


def test_vectorised_mira_equals_per_hypothesis_loop():
    bench = _bench_mira()
    feats, stats = bench.synthetic_lists(12, 15, 4, seed=2)
    feats[0][3] = feats[0][1]  # a duplicate feature vector
    for epochs in (1, 4):
        assert mira(feats, stats, epochs).best_bleu == pytest.approx(
            bench.loop_mira(feats, stats, epochs), abs=1e-9
        )


def test_cli_mira_and_rerank(tmp_path, capsys):
    nbest, refs = _known_optimum()
    write_nbest(tmp_path / "dev.nbest", nbest)
    (tmp_path / "ref").write_text("".join(r[0] + "\n" for r in refs))
    code = main(["mira", "--nbest", str(tmp_path / "dev.nbest"), "--ref", str(tmp_path / "ref"),
                 "--iters", "10", "--out", str(tmp_path / "w"), "--history", str(tmp_path / "h")])
    assert code == 0 and "best tuning BLEU 100.00" in capsys.readouterr().out
    assert set(read_weights(tmp_path / "w")) == {"NMT", "Good"}
    assert main(["rerank", "--nbest", str(tmp_path / "dev.nbest"), "--weights",
                 str(tmp_path / "w"), "--out", str(tmp_path / "1best")]) == 0
    assert (tmp_path / "1best").read_text() == (tmp_path / "ref").read_text()
    (tmp_path / "short").write_text("only one line\n")
    assert main(["mira", "--nbest", str(tmp_path / "dev.nbest"), "--ref",
                 str(tmp_path / "short"), "--out", str(tmp_path / "w2")]) == 2
    assert "short: expected 4 lines, one per sentence of the n-best list, found 1" in (
        capsys.readouterr().err
    )
    (tmp_path / "long").write_text((tmp_path / "ref").read_text() + "one more\n")
    assert main(["mira", "--nbest", str(tmp_path / "dev.nbest"), "--ref",
                 str(tmp_path / "long"), "--out", str(tmp_path / "w2")]) == 2
    assert "long: expected 4 lines, one per sentence of the n-best list, found 5" in (
        capsys.readouterr().err
    )
    assert not (tmp_path / "w2").exists()
    # an output over an input is refused, the input intact
    before = (tmp_path / "dev.nbest").read_bytes()
    assert main(["rerank", "--nbest", str(tmp_path / "dev.nbest"), "--weights",
                 str(tmp_path / "w"), "--out", str(tmp_path / "dev.nbest")]) == 2
    assert "expected an output path other than the input" in capsys.readouterr().err
    assert (tmp_path / "dev.nbest").read_bytes() == before


def test_select_unknown_feature_is_input_error():
    nbest, _ = _known_optimum()
    with pytest.raises(InputError, match="Missing"):
        nbest.select(["Missing"])


def test_table3_rows_line_up_with_the_paper(tmp_path):
    paper_tables = Path(__file__).resolve().parents[1] / "resources" / "paper_tables"
    import json

    import pandas as pd

    from mlmm.results.nmt_table import table3

    for name, system, note, bleu in [
        ("a", "NMT baseline (attention NMT, Bahdanau et al., 2015)", "no re-ranking (1-best)",
         20.0),
        ("b", "NMT + MLMME re-ranking", "beta=0.5", 25.0),
    ]:
        (tmp_path / f"{name}.json").write_text(json.dumps(
            {"system": system, "variant_note": note, "scores": {"BLEU": bleu, "TER": 50.0},
             "provenance": {}}
        ))
    notes = table3([tmp_path / "a.json", tmp_path / "b.json"], str(paper_tables), tmp_path / "t")
    table = pd.read_csv(tmp_path / "t.csv")
    bleu = table[table.metric == "BLEU"]
    assert list(bleu.system)[0].startswith("NMT baseline")
    row = bleu[bleu.variant_note == "beta=0.5"].iloc[0]
    assert (row.paper, row.ours, row["diff"]) == (35.0, 25.0, -10.0)
    assert len(table[table.metric == "METEOR"]) == 6  # paper's cells kept, ours absent
    assert not any("METEOR 1.5" in n for n in notes)


def _fixed_lists():
    """30 sentences x 25 hypotheses of random words against two references, 6 features (one
    duplicate row per sentence): the list the MIRA pin below was recorded on."""
    rng = np.random.default_rng(7)
    words = [f"w{i}" for i in range(40)]
    texts, refs, feats = [], [], []
    for _ in range(30):
        r = [" ".join(rng.choice(words, size=rng.integers(5, 15))) for _ in range(2)]
        base = r[0].split()
        hyps = [" ".join(w if rng.random() < 0.6 else str(rng.choice(words))
                         for w in base[: len(base) + int(rng.integers(-3, 3))])
                for _ in range(25)]  # fmt: skip
        f = rng.normal(size=(25, 6))
        f[3] = f[2]
        texts.append(hyps)
        refs.append(r)
        feats.append(f)
    return texts, refs, feats


def test_mira_weights_are_those_before_the_speed_work():
    """Weights, best epoch and statistics recorded with the implementation before the
    speed work (per-hypothesis reference counts, row-layout BLEU with numpy.mean): the
    faster code must tune to the same numbers (relative 1e-12 leaves room only for another
    CPU's last-bit log/exp, not for any change of the algorithm)."""
    texts, refs, feats = _fixed_lists()
    stats = nbest_stats(texts, refs)
    assert float(np.concatenate(stats).sum()) == 35917.0
    result = mira(feats, stats, iters=40)
    before = [float.fromhex(h) for h in (
        "-0x1.9cf9ff32b9936p-5", "0x1.b33e387c46bccp-4", "-0x1.c01b485e02636p-6",
        "-0x1.cf77121a4f969p-5", "0x1.99a9cd56f5b83p-5", "-0x1.d2e47a6398aa4p-6")]
    np.testing.assert_allclose(result.weights, before, rtol=1e-12)
    assert result.best_epoch == 21
    assert result.best_bleu == pytest.approx(float.fromhex("0x1.e7c4f4bcd3a0cp+4"), rel=1e-12)


def test_background_bleu_is_bitwise_the_row_formula():
    """The column-layout kernel MIRA's loop uses gives the bits of the straightforward row
    formula (np.mean over orders), on integer statistics full of ties."""
    rng = np.random.default_rng(0)
    for k in (1, 7, 100):
        stats = rng.integers(0, 30, size=(k, 9)).astype(float)
        background = rng.random(9) * 500 + 1
        total = stats + background
        log_precision = np.mean(np.log(total[:, :4]) - np.log(total[:, 4:8]), axis=1)
        brevity = np.minimum(0.0, 1.0 - total[:, 8] / total[:, 4])
        expected = np.exp(log_precision + brevity) * total[:, 8]
        assert np.array_equal(background_bleu(stats, background), expected)
