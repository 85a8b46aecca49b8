"""Attention NMT smoke test: tiny training, beam search ordering/shape/scores, feature plug-ins."""

import json

import numpy as np
import pytest
import torch
from helpers.nmt import beam_record, nmt_data, nmt_record, toy_parallel_corpus
from helpers.one_line import Case, check

from mlmm.cli import main
from mlmm.nbest import read_nbest, write_nbest
from mlmm.nmt.features import EmbeddingScorer, add_features
from mlmm.nmt.model import BOS, EOS, PAD, Seq2Seq, Sizes, load_translator
from mlmm.nmt.search import beam_search, greedy, nbest_lists, pad_batch
from mlmm.nmt.selection import select
from mlmm.nmt.train import TrainConfig, train
from mlmm.schema import subschema


@pytest.fixture(scope="module")
def trained(tmp_path_factory):
    torch.set_num_threads(1)
    train_src, train_tgt = toy_parallel_corpus(200, 0)
    val_src, val_tgt = toy_parallel_corpus(20, 1)
    config = TrainConfig(Sizes(16, 24, 16, 0.0), batch_size=16, learning_rate=0.01, max_epochs=3,
                         patience=2)
    translator, history = train(train_src, train_tgt, val_src, val_tgt, config, progress=False)
    path = tmp_path_factory.mktemp("nmt") / "model.pt"
    translator.save(path)
    return translator, history, path, val_src


def test_training_history_and_checkpoint(trained):
    translator, history, path, _ = trained
    assert 1 <= len(history) <= 3
    assert history[-1]["train_nll"] < history[0]["train_nll"]
    again = load_translator(path)
    src, lengths = pad_batch([translator.src.encode(["a", "red", "dog"])])
    assert greedy(again.model, [src[0].tolist()]) == greedy(translator.model, [src[0].tolist()])


def _teacher_forced_logp(model, source, target):
    src, lengths = pad_batch([source])
    tgt = torch.tensor([[BOS, *target, EOS]])
    with torch.no_grad():
        logp = model(src, lengths, tgt[:, :-1])[0]
    return float(logp.gather(1, tgt[0, 1:, None]).sum())


def test_beam_search_is_sorted_and_scores_are_log_probabilities(trained):
    translator, _, _, val_src = trained
    source = translator.src.encode(val_src[0])
    hyps = beam_search(translator.model, source, beam=5)
    assert len(hyps) == 5
    scores = [s for _, s in hyps]
    assert scores == sorted(scores, reverse=True)
    assert len({tuple(h) for h, _ in hyps}) == 5
    for tokens, score in hyps[:3]:
        assert _teacher_forced_logp(translator.model, source, tokens) == pytest.approx(score,
                                                                                       abs=1e-4)
    best_greedy = greedy(translator.model, [source])[0]
    assert hyps[0][1] >= _teacher_forced_logp(translator.model, source, best_greedy) - 1e-4


def test_nbest_lists_features_and_round_trip(trained, tmp_path):
    translator, _, _, val_src = trained
    nbest = nbest_lists(translator, val_src[:3], beam=4, progress=False)
    assert nbest.layout == [("NMT", 1), ("WordPenalty", 1)] and nbest.ids == [0, 1, 2]
    for texts, feats, scores in zip(nbest.texts, nbest.features, nbest.scores, strict=True):
        assert feats.shape == (4, 2)
        np.testing.assert_array_equal(feats[:, 0], scores)
        assert list(feats[:, 1]) == [-len(t.split()) for t in texts]
    write_nbest(tmp_path / "l.nbest", nbest)
    assert read_nbest(tmp_path / "l.nbest").texts == nbest.texts


class _FakeRetrieval:
    """Stands in for `mlmm.retrieval.load_trained`: sentences embed as (length, 1)."""

    def embed_images(self, features):
        return torch.as_tensor(features, dtype=torch.float32)

    def embed_sentences(self, language, sentences):
        return torch.tensor([[float(len(s)), 1.0] for s in sentences])

    def similarity(self, a, b):
        return (a * b).sum(1)


def test_feature_plugins(trained, monkeypatch):
    translator, _, _, val_src = trained
    nbest = nbest_lists(translator, val_src[:2], beam=3, progress=False)
    import mlmm.retrieval.api

    monkeypatch.setattr(mlmm.retrieval.api, "load_trained", lambda path: _FakeRetrieval())
    images = np.array([[1.0, 0.0], [0.0, 2.0]])
    scorers = [("Img", EmbeddingScorer("m.pt", "image", "de", "en", images)),
               ("Src", EmbeddingScorer("m.pt", "source", "de", "en")),
               ("Const", lambda ids, src, hyp: np.full(len(hyp), 7.0))]
    out = add_features(nbest, val_src, scorers)
    assert out.columns == ["NMT", "WordPenalty", "Img", "Src", "Const"]
    for i, (texts, feats) in enumerate(zip(out.texts, out.features, strict=True)):
        lengths = np.array([max(len(t.split()), 1) for t in texts], dtype=float)
        np.testing.assert_allclose(feats[:, 2], lengths * images[i, 0] + images[i, 1])
        np.testing.assert_allclose(feats[:, 3], lengths * len(val_src[i]) + 1)
        assert (feats[:, 4] == 7).all()


def test_cli_train_nbest_and_score(tmp_path, capsys):
    data = tmp_path / "tok"
    data.mkdir()
    for split, n, seed in (("train", 60, 0), ("val", 8, 1)):
        src, tgt = toy_parallel_corpus(n, seed)
        (data / f"{split}.lc.norm.tok.en").write_text("".join(" ".join(s) + "\n" for s in src))
        (data / f"{split}.lc.norm.tok.de").write_text("".join(" ".join(t) + "\n" for t in tgt))
    model = tmp_path / "model.pt"
    record = nmt_record(tmp_path / "record.json", {"embedding": 8, "hidden": 8,
                                                   "attention": 8, "decoder": "cgru"})
    assert main(["train-nmt", "--config", str(record), "--data", str(data), "--device", "cpu",
                 "--out", str(model), "--history",
                 str(tmp_path / "h.csv"), "--metrics", str(tmp_path / "m.json")]) == 0
    sizes = load_translator(model).model.sizes  # the record's settings reached the trainer
    assert (sizes.embedding, sizes.decoder) == (8, "cgru")
    beam = beam_record(tmp_path / "beam.json", 3)
    assert main(["nbest", "--config", str(beam), "--model", str(model), "--source",
                 str(data / "val.lc.norm.tok.en"), "--device", "cpu", "--out",
                 str(tmp_path / "val.nbest"), "--stats", str(tmp_path / "beam.stats.json")]) == 0
    assert len(read_nbest(tmp_path / "val.nbest")) == 8
    assert max(len(texts) for texts in read_nbest(tmp_path / "val.nbest").texts) == 3
    assert json.loads((tmp_path / "beam.stats.json").read_text())["beam"] == 3
    (tmp_path / "empty.json").write_text("{}")  # the schema's beam
    assert main(["nbest", "--config", str(tmp_path / "empty.json"), "--model", str(model),
                 "--source", str(data / "val.lc.norm.tok.en"), "--device", "cpu", "--out",
                 str(tmp_path / "wide.nbest"), "--stats", str(tmp_path / "wide.json")]) == 0
    assert json.loads((tmp_path / "wide.json").read_text())["beam"] == subschema("nmt.beam")[
        "default"]
    assert main(["rerank", "--nbest", str(tmp_path / "val.nbest"), "--out",
                 str(tmp_path / "1best")]) == 0
    assert main(["mt-score", "--hyp", str(tmp_path / "1best"), "--ref",
                 str(data / "val.lc.norm.tok.de"), "--system", "NMT", "--out",
                 str(tmp_path / "s.json")]) == 0
    assert main(["nmt-table", "--metrics", str(tmp_path / "s.json"), "--out",
                 str(tmp_path / "table")]) == 0
    assert "METEOR not computed" in (tmp_path / "table.md").read_text()


def _train_argv(root, record):
    return ["train-nmt", "--config", str(record), "--data", str(root / "data"), "--device",
            "cpu", "--out", str(root / "m.pt"), "--history", str(root / "h.csv"), "--metrics",
            str(root / "m.json")]  # fmt: skip


def test_train_nmt_record_keys_left_out_take_the_schema_defaults(tmp_path):
    nmt_data(tmp_path)
    record = nmt_record(tmp_path / "record.json")  # sizes and max_epochs only
    assert main(_train_argv(tmp_path, record)) == 0
    config = json.loads((tmp_path / "m.json").read_text())["provenance"]["config"]
    given = json.loads(record.read_text())
    for key in ("src", "tgt"):
        assert config[key] == subschema(f"nmt.{key}")["default"]
    for part in ("model", "train"):
        for key, node in subschema(f"nmt.{part}")["properties"].items():
            expected = given[part].get(key, node["default"])
            assert config[part][key] == expected, f"{part}.{key}"
    # the trainer ran with them: the schema's decoder, the record's epoch count
    assert load_translator(tmp_path / "m.pt").model.sizes.decoder == config["model"]["decoder"]
    assert json.loads((tmp_path / "m.json").read_text())["epochs"] == 1


@pytest.mark.parametrize(
    ("content", "says"),
    [
        ('{"model": {"dropout": 2}}', ["key 'model.dropout'", "expected a number < 1", "found 2"]),
        ('{"train": {"max_epochs": 1, "lr": 0.1}}',
         ["key 'train.lr'", "unknown key 'lr'"]),
        ('{"train": {"optimizer": "sgd"}}', ["key 'train.optimizer'", "found 'sgd'"]),
        ('{"train": {"learning_rate": NaN}}',
         ["key 'train.learning_rate'", "expected a finite number", "found nan"]),
        ('{"device": "cpu"}', ["key 'device'", "unknown key 'device'"]),
    ],
    ids=["out of range", "unknown key", "not an option", "not finite", "not a record key"],
)  # fmt: skip
def test_a_bad_train_nmt_record_is_one_line_naming_the_file_and_key(tmp_path, capsys, content,
                                                                    says):
    nmt_data(tmp_path)
    record = tmp_path / "record.json"
    record.write_text(content)
    outs = [tmp_path / name for name in ("m.pt", "h.csv", "m.json")]
    check(Case(_train_argv(tmp_path, record), [f"{record}, ", *says], outs), capsys)


@pytest.mark.parametrize(
    ("content", "says"),
    [
        ('{"beam": 0}', ["key 'beam'", "expected a number >= 1", "found 0"]),
        ('{"beam": 3, "hidden": 8}', ["key 'hidden'", "unknown key 'hidden'"]),
    ],
    ids=["beam 0", "unknown key"],
)
def test_a_bad_nbest_record_is_one_line_naming_the_file_and_key(tmp_path, capsys, content, says):
    record = tmp_path / "beam.json"
    record.write_text(content)
    for name in ("m.pt", "src.en"):
        (tmp_path / name).write_text("stand-in: the record is read first\n")
    argv = ["nbest", "--config", str(record), "--model", str(tmp_path / "m.pt"), "--source",
            str(tmp_path / "src.en"), "--out", str(tmp_path / "o.nbest")]  # fmt: skip
    check(Case(argv, [f"{record}, ", *says], [tmp_path / "o.nbest"]), capsys)


def test_cgru_step_is_gru_attention_on_the_intermediate_state_then_gru():
    torch.manual_seed(0)
    model = Seq2Seq(7, 9, Sizes(embedding=4, hidden=5, attention=10, dropout=0.0, decoder="cgru"))
    model.eval()
    src, lengths = pad_batch([[4, 5, 6], [4, 5]])
    annotations, keys, mask, state = model.encode(src, lengths)
    assert annotations.shape == (2, 3, 10) and keys.shape == (2, 3, 10) and state.shape == (2, 5)
    previous = torch.tensor([BOS, 5])
    with torch.no_grad():
        logp, new_state = model.step(previous, state, annotations, keys, mask)
        # by hand: s' = GRU1(y, s); e = v . tanh(K + W s'); c = softmax(e) . annotations;
        # s = GRU2(c, s'); readout from [s, c, y]
        y = model.tgt_embedding(previous)
        inter = model.cell(y, state)
        energy = model.att_score(torch.tanh(keys + model.att_query(inter)[:, None])).squeeze(-1)
        energy[~mask] = float("-inf")
        context = (torch.softmax(energy, -1)[..., None] * annotations).sum(1)
        expected_state = model.cell2(context, inter)
        hidden = torch.tanh(model.readout(torch.cat([expected_state, context, y], -1)))
        expected = torch.log_softmax(model.output(hidden), -1)
    assert logp.shape == (2, 9) and new_state.shape == (2, 5)
    torch.testing.assert_close(new_state, expected_state)
    torch.testing.assert_close(logp, expected)
    assert model.cell.input_size == 4 and model.cell2.input_size == 10  # GRU2 reads the context
    assert not mask[1, 2] and src[1, 2] == PAD


def test_beam_returns_exactly_k_finished_hypotheses_with_the_beam_shrinking():
    class Scripted(torch.nn.Module):
        """Vocabulary: specials, a=4, b=5. From any state EOS is the best word, so every step
        finishes hypotheses and the beam shrinks; scores are fixed per word."""

        def __init__(self):
            super().__init__()
            self.calls = []
            self.weight = torch.nn.Parameter(torch.zeros(1))

        def encode(self, src, lengths):
            return torch.zeros(1, 1, 1), torch.zeros(1, 1, 1), torch.ones(1, 1, dtype=torch.bool), \
                torch.zeros(1, 1)

        def step(self, previous, state, annotations, keys, mask):
            self.calls.append(len(previous))
            probabilities = torch.tensor([[0.0, 0.0, 0.0, 0.5, 0.3, 0.2]])
            return torch.log(probabilities).repeat(len(previous), 1), state

        def eval(self):
            return self

    model = Scripted()
    hyps = beam_search(model, [4, 5], beam=4)
    # step 1: top 4 of one live hypothesis: EOS, a, b (three real words): [] finishes, 2 live;
    # step 2: top 4 - 1 = 3 of the 2 x 3 candidates: a+EOS, b+EOS finish, [a, a] lives;
    # step 3: top 4 - 3 = 1: [a, a]+EOS finishes: exactly 4, and [a, b] (0.06) never enters.
    assert model.calls == [1, 2, 1]
    assert [h for h, _ in hyps] == [[], [4], [5], [4, 4]]
    np.testing.assert_allclose([s for _, s in hyps], np.log([0.5, 0.15, 0.1, 0.045]), rtol=1e-6)


def test_beam_returns_exactly_k_on_a_trained_model(trained):
    translator, _, _, val_src = trained
    hyps = beam_search(translator.model, translator.src.encode(val_src[0]), beam=7)
    assert len(hyps) == 7


def test_nmt_rows_whose_variants_are_not_trained_are_left_out_with_a_warning():
    nmt = {
        "embedding_features": {"Vimg": {"variant": "vse", "kind": "image"},
                               "Mimg": {"variant": "mlmme", "kind": "image"}},
        "systems": {"nmt": {"features": []}, "v": {"features": ["NMT", "Vimg"]},
                    "m": {"features": ["NMT", "Mimg"]}},
    }
    features, systems, warnings = select(nmt, {"vse"})
    assert list(features) == ["Vimg"] and list(systems) == ["nmt", "v"]
    assert any("nmt.systems.m left out" in w and "Mimg" in w for w in warnings)
    assert any("'mlmme' is not in retrieval.run" in w for w in warnings)
    nmt["systems"]["x"] = {"features": ["Typo"]}
    with pytest.raises(ValueError, match=r"nmt.systems.x.features: \['Typo'\]"):
        select(nmt, {"vse", "mlmme"})


def test_device_cuda_without_a_gpu_is_a_one_line_error(monkeypatch):
    from mlmm.errors import InputError

    monkeypatch.setattr(torch.cuda, "is_available", lambda: False)
    src, tgt = toy_parallel_corpus(4, 0)
    with pytest.raises(InputError, match="CUDA"):
        train(src, tgt, src, tgt, TrainConfig(Sizes(4, 4, 4, 0.0), device="cuda"), progress=False)


def test_adadelta_is_nematus_rule_without_a_learning_rate():
    """Nematus optimizers.adadelta: rg2 <- .95 rg2 + .05 g^2; ud = -sqrt(ru2 + 1e-6) /
    sqrt(rg2 + 1e-6) g; ru2 <- .95 ru2 + .05 ud^2; p <- p + ud (lrate unused)."""
    from mlmm.nmt.train import make_optimiser

    p = torch.nn.Parameter(torch.tensor([1.0, -2.0], dtype=torch.float64))
    optimiser = make_optimiser([p], TrainConfig(optimizer="adadelta", learning_rate=123.0))
    value, rg2, ru2 = p.detach().clone(), torch.zeros(2, dtype=torch.float64), 0.0
    for _ in range(3):
        optimiser.zero_grad()
        (p ** 3).sum().backward()  # g = 3 p^2
        g = 3 * value ** 2
        rg2 = 0.95 * rg2 + 0.05 * g ** 2
        ud = -torch.sqrt(ru2 + torch.tensor(1e-6)) / torch.sqrt(rg2 + 1e-6) * g
        ru2 = 0.95 * ru2 + 0.05 * ud ** 2
        value = value + ud
        optimiser.step()
        assert torch.allclose(p.detach(), value, atol=1e-12)
    adam = make_optimiser([p], TrainConfig(learning_rate=0.5))
    assert isinstance(adam, torch.optim.Adam) and adam.param_groups[0]["lr"] == 0.5


def test_max_length_leaves_out_pairs_with_a_long_side():
    """Nematus prepare_data keeps a pair when l_x < maxlen and l_y < maxlen."""
    from mlmm.nmt.train import within_length

    src = [["a"] * 2, ["a"] * 3, ["a"] * 1]
    tgt = [["b"] * 2, ["b"] * 1, ["b"] * 3]
    assert within_length(src, tgt, 3) == [(src[0], tgt[0])]
    assert within_length(src, tgt, None) == list(zip(src, tgt, strict=True))


def test_meteor_modules_follow_the_paraphrase_table(tmp_path):
    """Without data/paraphrase-<tgt>.gz beside the jar METEOR runs exact + stem and says so
    (the planning check, mlmm.local_data, stops the paper config before: test_local_data)."""
    from mlmm.nmt.metrics import meteor_modules

    jar = tmp_path / "meteor-1.5" / "meteor-1.5.jar"
    jar.parent.mkdir()
    jar.write_bytes(b"")
    table = jar.parent / "data" / "paraphrase-de.gz"
    assert meteor_modules(jar, "de") == (
        ["-m", "exact stem", "-w", "1.0 0.8"],
        "METEOR 1.5, -l de, modules exact stem (no paraphrase-de.gz)",
    )
    table.parent.mkdir()
    table.write_bytes(b"")
    assert meteor_modules(jar, "de")[0] == []


# Tokenised Multi30K-style German (Moses escapes, hyphenated words): sacrebleu's 13a and intl
# tokenisers split "&apos;s" and "park-bereich" again, and score these 68.39 and 72.27.
TOKENISED_HYPS = [
    "ein mann &apos;s hund läuft über die straße .",
    "zwei kinder spielen im park-bereich , lachend .",
]
TOKENISED_REFS = [
    "ein mann &apos;s hund rennt über die straße .",
    "zwei kinder spielen im park-bereich lachend .",
]


def test_reported_and_validation_bleu_score_the_tokens_as_they_are():
    """The reported BLEU (mt-score's mt_metrics) and the NMT's validation BLEU run
    sacrebleu with tokenize='none' on the tokenised text, unsmoothed; a change to 13a (or any
    other tokeniser) fails here."""
    import sacrebleu

    from mlmm.nmt.metrics import mt_metrics
    from mlmm.nmt.train import bleu

    def score(tokenize: str) -> float:
        refs, kind = [TOKENISED_REFS], {"tokenize": tokenize, "smooth_method": "none"}
        return sacrebleu.corpus_bleu(TOKENISED_HYPS, refs, **kind).score

    expected = score("none")
    assert expected == pytest.approx(59.6611, abs=1e-3)
    assert all(abs(score(other) - expected) > 5 for other in ("13a", "intl", "char"))
    assert mt_metrics(TOKENISED_HYPS, TOKENISED_REFS, "de")["BLEU"] == pytest.approx(expected)
    assert bleu(TOKENISED_HYPS, TOKENISED_REFS) == pytest.approx(expected)
