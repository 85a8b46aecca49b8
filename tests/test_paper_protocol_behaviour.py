"""The paper configuration's protocol values, checked by what the code does with them.

Each test reads its values from the resolved paper configuration (``helpers.paper_config``) or
from the code constant the fidelity registry names (``code.*`` leaves), and shows the mechanism
honouring them: the planned workflow trains one job per configured seed, lambda and system; the
trainer built from each record uses its rate, decay, margin, clip, batching, validation and
selection; Kádár's records draw their halves and caption samples; the model a record builds has
its sizes; the vocabulary applies its count threshold and boundary tokens; the NMT, TED and
pivot runs use their configured sizes, cuts and rates; MIRA clips its step at C and decays its
background; the beam returns the configured number of hypotheses. No value is restated here: a
value changed in config/paper.yaml is what these tests exercise (docs/fidelity.md shows each
value beside its source and names, per row, the tests that hold it).
"""

from __future__ import annotations

import numpy as np
import pytest
import torch
from helpers.paper_config import paper_config, paper_variants

from mlmm.data.multi30k import TRANSLATION_ONLY, image_list
from mlmm.data.vocab import UNK
from mlmm.retrieval.api import build_model
from mlmm.retrieval.config import languages
from mlmm.retrieval.data import END, START, Vocabularies


def _distinct(records: dict[str, dict], keys: tuple[str, ...]) -> dict[tuple, tuple[str, dict]]:
    """One (name, record) per distinct combination of ``keys`` (the tests build each once)."""
    out: dict[tuple, tuple[str, dict]] = {}
    for name, record in records.items():
        combination = tuple(repr(record[k]) for k in keys) + (repr(languages(record)),)
        out.setdefault(combination, (name, record))
    return out


SIZE_KEYS = ("encoder", "word_embeddings", "embed_dim", "hidden", "joint", "sentence_projection")


def _vocabularies(record: dict) -> Vocabularies:
    captions = {lang: [[["a", "man", "rides"]]] * 2 for lang in languages(record)}
    return Vocabularies.build(captions, {**record, "min_count": 1})


@pytest.mark.parametrize(
    "name", [name for name, _ in _distinct(paper_variants(), SIZE_KEYS).values()]
)
def test_each_paper_record_builds_the_model_of_its_sizes(name):
    """Rows 'sizes' (every paper): word embeddings ``embed_dim``, GRU ``hidden``, joint space
    ``joint``, one encoder per language or one shared, one sentence projection or one each."""
    record = paper_variants()[name]
    vocabs = _vocabularies(record)
    model = build_model(record, 7, vocabs)
    assert (model.image.in_features, model.image.out_features) == (7, record["joint"])
    expected = set(languages(record)) if record["encoder"] == "per-language" else {"shared"}
    assert set(model.text) == expected
    for encoder in model.text.values():
        assert encoder.embed.embedding_dim == record["embed_dim"]
        assert (encoder.gru.input_size, encoder.gru.hidden_size) == (
            record["embed_dim"],
            record["hidden"],
        )
        tokens, lengths = torch.tensor([[2, 3, 4]]), torch.tensor([3])
        assert encoder(tokens, lengths).shape == (1, record["joint"])
    projections = {id(encoder.proj) for encoder in model.text.values()}
    shared = record["sentence_projection"] == "shared" or len(model.text) == 1
    assert len(projections) == (1 if shared else len(model.text))


@pytest.mark.parametrize(
    "name", [name for name, _ in _distinct(paper_variants(), ("init",)).values()]
)
def test_each_paper_record_initialises_its_model_as_its_init_says(name):
    """Rows 'initialisation' (Calixto) and 'embeddings' (shared): the model a record builds is
    initialised by its ``init``: ``calixto_paper`` draws word embeddings from N(0, 0.01) and
    ``calixto_code`` from uniform(-0.1, 0.1), both with orthogonal recurrent blocks per gate;
    ``vsepp`` keeps uniform(-0.1, 0.1) words and torch's GRU initialisation."""
    hidden = 32
    record = {**paper_variants()[name], "embed_dim": 64, "hidden": hidden, "joint": 32}
    torch.manual_seed(0)
    model = build_model(record, 40, _vocabularies(record))
    encoder = next(iter(model.text.values()))
    words = encoder.embed.weight.detach()
    recurrent = encoder.gru.weight_hh_l0.detach()
    blocks = [recurrent[g * hidden : (g + 1) * hidden] for g in range(3)]
    orthogonal = all(torch.allclose(b @ b.t(), torch.eye(hidden), atol=1e-4) for b in blocks)
    assert orthogonal == record["init"].startswith("calixto_"), record["init"]
    if record["init"] == "calixto_paper":
        assert abs(float(words.std()) - 0.01) < 0.002
    else:
        assert float(words.abs().max()) <= 0.1 and float(words.std()) > 0.04


IMAGE_KEYS = ("image_norm", "image_dropout", "dropout_position", "similarity")


@pytest.mark.parametrize(
    "name", [name for name, _ in _distinct(paper_variants(), IMAGE_KEYS).values()]
)
def test_image_norm_of_each_record_acts_in_training_only_where_it_says(name):
    """Row 'VSE baseline': Kiros's VSE scores the unnormalised image projection in training
    (``image_norm: evaluation``), the evaluation encoder the normalised one; every other record
    normalises in both (MLMME: model_multilingual.py). Small sizes: the norm is what is tested."""
    small = {"embed_dim": 8, "hidden": 8, "joint": 6, "dropout": 0.0, "use_abs": False}
    record = {**paper_variants()[name], **small}
    model = build_model(record, 5, _vocabularies(record))
    features = torch.randn(4, 5) * 10
    model.train()
    trained = model.embed_images(features).norm(dim=1)
    model.eval()
    evaluated = model.embed_images(features).norm(dim=1)
    torch.testing.assert_close(evaluated, torch.ones(4))
    unit = torch.allclose(trained, torch.ones(4))
    assert unit == (record["image_norm"] == "always"), (name, record["image_norm"], trained)


VOCAB_KEYS = ("min_count", "tokens", "boundary_tokens", "count_words", "encoder", "word_embeddings")


@pytest.mark.parametrize(
    "name", [name for name, _ in _distinct(paper_variants(), VOCAB_KEYS).values()]
)
def test_each_paper_vocabulary_applies_its_min_count_and_boundary_tokens(name):
    """Rows 'vocabulary' (every paper): a word seen ``min_count`` times is kept, one seen once
    fewer is <unk>; ``boundary_tokens`` wraps every caption in <start> ... <end>; ``tokens``
    splits as the record says (nltk splits "dog's" in two, the token files' words do not)."""
    record = paper_variants()[name]
    first, *others = languages(record)
    threshold = record["min_count"]
    captions = {lang: [[["filler"]]] for lang in languages(record)}
    captions[first] = [[["kept", "dog's"]]] * threshold + [[["rare"]]] * (threshold - 1)
    vocabs = Vocabularies.build(captions, record)
    vocab = vocabs.vocabs[vocabs.encoder_of[first]]
    ids = vocabs.encode(first, ["kept", "rare"])
    words = [vocab.words[i] for i in ids]
    inner = words[1:-1] if record["boundary_tokens"] else words
    if record["boundary_tokens"]:
        assert words[0].endswith(START) and words[-1].endswith(END), words
    else:
        assert not any(w.endswith((START, END)) for w in words), words
    assert inner[0].endswith("kept")  # seen min_count times
    assert inner[1] == UNK, (threshold, inner)  # seen once fewer (never, at threshold 1)
    split = vocabs.encode(first, ["dog's"])
    assert len(split) - 2 * record["boundary_tokens"] == (2 if record["tokens"] == "nltk" else 1)


def _one_sentence_lists():
    """One n-best list of two hypotheses: the reference (features [1]) and a miss ([0])."""
    from mlmm.rerank import nbest_stats

    texts = [["a man rides a red horse on the beach", "two dogs sleep"]]
    refs = [["a man rides a red horse on the beach"]]
    return [np.array([[1.0], [0.0]])], nbest_stats(texts, refs)


def test_mira_clips_its_step_at_the_configured_c():
    """Row 'k-best MIRA': w += min(C, loss / ||d||^2) d with ``nmt.mira.c``; from the registered
    initial weight (``code.nmt.mira.initial_weight``) one update moves w by exactly C here."""
    from mlmm.rerank import INITIAL_WEIGHT, mira

    settings = paper_config()["nmt"]["mira"]
    features, stats = _one_sentence_lists()
    result = mira(features, stats, iters=1, c=settings["c"], decay=settings["decay"])
    assert result.weights[0] == pytest.approx(INITIAL_WEIGHT + settings["c"])
    wider = mira(features, stats, iters=1, c=settings["c"] * 1e4, decay=settings["decay"])
    assert wider.weights[0] > result.weights[0]  # the loss, not C, bounds the wider step


def test_mira_starts_from_the_registered_initial_weight():
    """Row 'k-best MIRA': before any epoch the weights are ``code.nmt.mira.initial_weight``
    (kbmira without --dense-init), and the first epoch's corpus BLEU is of the model-best
    hypotheses under them (every score equal: the first hypothesis, the miss here)."""
    from mlmm.rerank import INITIAL_WEIGHT, mira

    features, stats = _one_sentence_lists()
    features = [f[::-1].copy() for f in features]  # the miss first
    stats = [s[::-1].copy() for s in stats]
    settings = paper_config()["nmt"]["mira"]
    result = mira(features, stats, iters=0, c=settings["c"], decay=settings["decay"])
    np.testing.assert_array_equal(result.weights, np.full(1, INITIAL_WEIGHT))
    assert result.initial_bleu < 100.0


@pytest.mark.parametrize("loop", ["numpy", "compiled"])
def test_mira_background_decays_at_the_configured_rate(loop):
    """Row 'k-best MIRA': after a sentence the pseudo-document background is decay * itself
    plus the hope's statistics, ``decay`` from ``nmt.mira.decay``."""
    from mlmm import rerank

    if loop == "compiled" and rerank.current_build(rerank._mira_epoch, rerank.MIRA_SOURCE) is None:
        pytest.skip("the compiled MIRA loop is not built")
    run = rerank._numpy_epoch if loop == "numpy" else rerank._compiled_epoch
    settings = paper_config()["nmt"]["mira"]
    features, stats = _one_sentence_lists()
    data = rerank.TuningSet.build(features, stats)
    w, totals = np.zeros(1), np.zeros(1)
    background = np.ones(rerank.N_STATS)
    run(data, np.arange(1, dtype=np.int64), w, totals, background, settings["c"], settings["decay"])
    expected = settings["decay"] * np.ones(rerank.N_STATS) + stats[0][0]
    np.testing.assert_allclose(background, expected)


class _Scripted(torch.nn.Module):
    """A decoder whose next-word distribution is fixed: 4 specials (PAD, UNK, BOS, EOS at 0-3)
    and ``words`` real words; EOS gets ``eos`` of the probability mass."""

    def __init__(self, words: int, eos: float) -> None:
        super().__init__()
        real = torch.linspace(1.0, 2.0, words)
        probabilities = torch.cat(
            [torch.zeros(3), torch.tensor([eos]), (1 - eos) * real / real.sum()]
        )
        self.logp = torch.log(probabilities)[None]
        self.weight = torch.nn.Parameter(torch.zeros(1))

    def encode(self, src, lengths):
        ones = torch.ones(1, 1, dtype=torch.bool)
        return torch.zeros(1, 1, 1), torch.zeros(1, 1, 1), ones, torch.zeros(1, 1)

    def step(self, previous, state, annotations, keys, mask):
        return self.logp.repeat(len(previous), 1), state


@pytest.mark.parametrize("where", ["nmt.beam", "pivot.mt.beam"])
def test_beam_search_returns_the_configured_beam(where):
    """Rows 'beam bookkeeping' (Table 3's 20-best lists) and 'CorrNet + MT rows' (beam 12)."""
    from mlmm.nmt.search import beam_search

    node = paper_config()
    for part in where.split("."):
        node = node[part]
    hyps = beam_search(_Scripted(words=3 * node, eos=0.3), [4, 5, 6], beam=node)
    assert len(hyps) == node
    assert [s for _, s in hyps] == sorted((s for _, s in hyps), reverse=True)


def test_decoding_stops_at_the_registered_length_limit():
    """Row 'decoding length': without EOS, greedy and beam search stop after ``times_source``
    x source length + ``plus`` target words (``code.nmt.length_limit``)."""
    from mlmm.nmt.search import LENGTH_LIMIT, beam_search, greedy

    source = [4, 5, 6, 7]
    limit = LENGTH_LIMIT["times_source"] * len(source) + LENGTH_LIMIT["plus"]
    model = _Scripted(words=5, eos=1e-9)
    assert {len(h) for h, _ in beam_search(model, source, beam=3)} == {limit}
    assert len(greedy(model, [source])[0]) == limit


def test_the_1best_length_rule_of_each_translation_stage():
    """Rows 'CorrNet + MT rows' (wmt16-scripts translate.sh -n: the length-normalised 1-best,
    EOS counted as Nematus's len(sample)) and 'NMT 1-best' (Calixto Table 3: the highest
    log p(Y|X), the baseline the reranker's NMT feature is)."""
    from mlmm.nmt.search import best_translation
    from mlmm.pivot.mt import LENGTH_NORMALISED

    hyps = [([4], -1.0), ([4, 5, 6, 7], -1.5)]  # per token with EOS: -0.5 vs -0.3
    assert best_translation(hyps, normalise=False) == hyps[0]
    assert best_translation(hyps, normalise=True) == hyps[1]
    assert best_translation(hyps, LENGTH_NORMALISED) == (hyps[1] if LENGTH_NORMALISED else hyps[0])


def test_adadelta_and_clip_are_the_registered_constants():
    """Row 'optimiser' (Table 3 NMT): ``nmt.train.optimizer`` adadelta builds torch's Adadelta
    with the registered rho, eps and rate (``code.nmt.adadelta``); the clip is ``code.nmt.clip``."""
    from mlmm.nmt.train import ADADELTA, TrainConfig, make_optimiser

    optimizer = paper_config()["nmt"]["train"]["optimizer"]
    built = make_optimiser([torch.nn.Parameter(torch.zeros(2))], TrainConfig(optimizer=optimizer))
    group = built.param_groups[0]
    if optimizer == "adadelta":
        assert isinstance(built, torch.optim.Adadelta)
        assert {k: group[k] for k in ADADELTA} == ADADELTA
    assert TrainConfig().clip == TrainConfig.clip


def test_ter_is_computed_with_the_registered_settings():
    """Row 'TER': mt_metrics's TER is sacrebleu's with ``code.nmt.ter``; case-insensitive, so
    a hypothesis differing from its reference only in case scores 0."""
    from sacrebleu.metrics import TER

    from mlmm.nmt.metrics import TER_SETTINGS, mt_metrics

    hyps, refs = ["The Man rides a horse", "two dogs"], ["the man rides a horse", "two dogs run"]
    got = mt_metrics(hyps, refs, "en")["TER"]
    assert got == pytest.approx(TER(**TER_SETTINGS).corpus_score(hyps, [refs]).score)
    assert mt_metrics(["The Man"], ["the man"], "en")["TER"] == (
        0.0 if not TER_SETTINGS["case_sensitive"] else 100.0
    )


def test_alignment_ratio_asks_only_words_with_vectors_and_divides_by_every_source_word():
    """Row 'alignment ratio' (AME): AME-CMR model.py METRIC_SIMIL asks only the pairs whose both
    words have a fastText vector, searches only such target words, and divides by every source
    word of the (vocabulary-filtered) test lexicon; without ``known`` every word is asked."""
    from mlmm.retrieval import rcsls

    src = torch.eye(4)
    tgt = torch.tensor(
        [[1.0, 0, 0, 0], [0, 1.0, 0, 0], [0, 0.9, 0.1, 0], [0, 0, 0, 1.0]]
    )  # target 1 has no vector: unsearched, source 1 finds its translation 2 instead
    gold = {0: {0}, 1: {2}, 2: {3}}  # source 2 has no vector: not asked, a miss
    assert rcsls.precision_at_1(src, tgt, gold, None) == pytest.approx(100 / 3)
    known = rcsls.precision_at_1(src, tgt, gold, None, known_src={0, 1}, known_tgt={0, 2, 3})
    assert known == pytest.approx(200 / 3)
    nothing_known = rcsls.precision_at_1(src, tgt, gold, None, known_src=set(), known_tgt={0})
    assert nothing_known == 0.0


def test_the_trainer_asks_the_ratio_of_the_words_load_vectors_found(tmp_path):
    """Row 'alignment ratio': the words ``load_vectors`` finds a vector for are the ones the
    alignment directions ask and search (positions within each language's rows)."""
    from types import SimpleNamespace

    from mlmm.retrieval.config import merge_config, variant_defaults
    from mlmm.retrieval.word_embeddings import Alignment, load_vectors
    from mlmm.retrieval.word_vector_files import write_vec

    words = ["<pad>", "<unk>", "en:dog", "en:cat", "en:man", "de:hund", "de:katze", "de:mann"]
    vocab = SimpleNamespace(words=words, index={w: i for i, w in enumerate(words)})
    vocabs = SimpleNamespace(vocabs={"shared": vocab})
    model = SimpleNamespace(text={"shared": SimpleNamespace(embed=torch.nn.Embedding(8, 2))})
    vector = np.ones(2, dtype=np.float32)
    write_vec(tmp_path / "wiki.en.align.vec", {"dog": vector, "cat": vector})  # no "man"
    write_vec(tmp_path / "wiki.de.align.vec", {"hund": vector, "mann": vector})  # no "katze"
    record = merge_config(variant_defaults(), {"word_embeddings": "fme", "embed_dim": 2})
    known = load_vectors(model, vocabs, ["en", "de"], record, tmp_path)
    assert known == {"en": {"dog", "cat"}, "de": {"hund", "mann"}}
    muse = tmp_path / "muse"
    muse.mkdir()
    (muse / "en-de.txt").write_text("dog hund\ncat katze\nman mann\n", encoding="utf-8")
    record["alignment"] = {**record["alignment"], "sections": None, "train_fraction": 0.0}
    alignment = Alignment.build(
        model, vocabs, ["en", "de"], record, muse, torch.device("cpu"), known
    )
    direction = alignment.directions[0]
    assert direction.known_src == {0, 1} and direction.known_tgt == {0, 2}  # dog, cat; hund, mann
    assert set(direction.gold) == {0, 1, 2}  # every held-out source word counts


@pytest.mark.parametrize(
    "name",
    [
        name
        for name, _ in _distinct(
            {n: r for n, r in paper_variants().items() if r["dropout"] > 0},
            ("image_dropout", "dropout_position"),
        ).values()
    ],
)
def test_image_dropout_acts_where_each_record_places_it(name):
    """Rows 'image dropout' (Calixto) and 'dropout': with ``image_dropout: projection`` (or the
    code's ``after_norm``) the mask falls on the joint-space image vector, so training zeroes
    whole coordinates of it; on ``features`` it falls on the CNN features before the layer,
    and the projected vector keeps every coordinate. Small sizes: the placement is tested."""
    small = {"embed_dim": 8, "hidden": 8, "joint": 64}
    record = {**paper_variants()[name], **small}
    model = build_model(record, 32, _vocabularies(record))
    model.train()
    torch.manual_seed(0)
    embedded = model.embed_images(torch.rand(16, 32) + 0.5)
    zeroed = bool((embedded == 0).any())
    on_projection = record["image_dropout"] == "projection" or (
        record["dropout_position"] == "after_norm"
    )
    assert zeroed == on_projection, (name, record["image_dropout"], record["dropout_position"])
    other = {"features": "projection", "projection": "features"}[record["image_dropout"]]
    contrast = {**record, "image_dropout": other, "dropout_position": "before_norm"}
    moved = build_model(contrast, 32, _vocabularies(contrast)).train()
    assert bool((moved.embed_images(torch.rand(16, 32) + 0.5) == 0).any()) == (
        other == "projection"
    )


@pytest.mark.parametrize(
    "patience",
    sorted(
        {r["early_stopping"]["patience"] for r in paper_variants().values()},
        key=lambda p: (p is None, p or 0),
    ),
)
def test_early_stopping_waits_the_configured_patience(patience):
    """Rows 'stopping' (every paper): the trainer's Selector, built with the record's
    ``early_stopping.patience``, stops after exactly that many validations without a new best
    and keeps the best point; ``null`` never stops early."""
    from mlmm.retrieval.selection import Selector

    value = patience
    selector = Selector(value)
    assert selector.update((5.0,), step=100)
    for k in range(1, (value or 50) + 1):
        assert not selector.exhausted
        assert not selector.update((5.0 - k,), step=100 + k)
    assert selector.exhausted == (value is not None)
    assert (selector.score, selector.step) == ((5.0,), 100)


# --- the planned workflow: one training job per configured seed and per lambda -------------


def _stand_ins(workdir) -> None:
    """An empty file at each file the planning checks in the paper config's local data sets."""
    from pathlib import Path

    from mlmm import local_data

    config = paper_config()
    jar = config["nmt"]["meteor_jar"]
    sets = {
        config["coco"]["mic"]["location"]: local_data.MIC,
        config["multi30k"]["images"]: local_data.MULTI30K_IMAGES,
        config["retrieval"]["sts"]: local_data.STS,
        config["ted"]["path"]: local_data.ted_expected(
            config["ted"]["languages"], config["ted"]["corpus_codes"]
        ),
        str(Path(jar).parent): local_data.meteor_expected(jar, config["nmt"]["tgt"], True),
    }
    for directory, patterns in sets.items():
        for pattern in patterns:
            path = Path(workdir) / directory / pattern.removeprefix("**/").replace("*", "x")
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_bytes(b"")


@pytest.fixture(scope="module")
def planned_paper(tmp_path_factory) -> dict[str, list[dict]]:
    """rule -> the wildcards (and ``input``, the files it reads) of each job of a dry run of
    config/paper.yaml (every job; stand-in files for its local data sets: nothing is read)."""
    import re
    import subprocess
    import sys

    from helpers.paper_config import PAPER, REPO
    from helpers.workflow import tool_env

    workdir = tmp_path_factory.mktemp("paper_plan")
    _stand_ins(workdir)
    proc = subprocess.run(
        [sys.executable, "-m", "snakemake", "-s", str(REPO / "Snakefile"), "-d", str(workdir),
         "-n", "--forceall", "--configfile", str(PAPER)],
        env=tool_env(), stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
        timeout=600, check=False,
    )  # fmt: skip
    assert proc.returncode == 0, proc.stdout[-3000:]
    jobs: dict[str, list[dict]] = {}
    for block in re.split(r"\n(?=(?:local)?rule \w+:\n)", proc.stdout):
        head = re.match(r"(?:local)?rule (\w+):\n", block)
        if head:
            found = dict(re.findall(r"^\s+(wildcards|input): (.+)$", block, re.M))
            pairs = found["wildcards"].split(", ") if "wildcards" in found else []
            job = dict(p.split("=", 1) for p in pairs)
            job["input"] = found.get("input", "").split(", ")
            jobs.setdefault(head.group(1), []).append(job)
    return jobs


def test_the_planned_paper_workflow_trains_each_record_once_per_configured_seed(planned_paper):
    """Rows 'seeds' (Kádár, Calixto, AME) and 'records run': the dry run of config/paper.yaml
    trains every record of ``retrieval.run``, seeds 1 .. its ``seeds``, and nothing else."""
    planned: dict[str, set[int]] = {}
    for job in planned_paper["train_retrieval"]:
        planned.setdefault(job["variant"], set()).add(int(job["seed"]))
    records = paper_variants()
    assert set(planned) == set(records)
    for name, record in records.items():
        assert planned[name] == set(range(1, record["seeds"] + 1)), name


def test_the_planned_paper_workflow_trains_one_corrnet_per_configured_lambda(planned_paper):
    """Rows 'sizes', 'corpus', 'English as a training / test language' (Rajendran Tables 1, 3,
    4) and 'sizes' (Table 5): one Bridge CorrNet per ``ted.lambdas`` value, lambda chosen on
    validation (rule ted_tune), a classifier trained on each of ``ted.languages`` and on
    English, the pivot pairing; the pivot stage trains its bridges per language of
    ``pivot.languages`` and lambda of ``pivot.lambdas``."""
    from mlmm.ted import PIVOT

    config = paper_config()
    ted, pivot = config["ted"], config["pivot"]
    runs = {job["ted_run"] for job in planned_paper["ted_train"]}
    assert runs == {f"lambda{value:g}" for value in ted["lambdas"]}
    assert len(planned_paper["ted_tune"]) == 1
    sources = {job["ted_source"] for job in planned_paper["ted_classify"]}
    assert sources == {*ted["languages"], PIVOT}
    pivot_jobs = {job["pivot_job"] for job in planned_paper["pivot_train"]}
    bridges = {f"bridge_{lang}_lambda{value:g}" for lang in pivot["languages"]
               for value in pivot["lambdas"]}  # fmt: skip
    assert bridges == {job for job in pivot_jobs if job.startswith("bridge_")}


def test_the_planned_paper_workflow_trains_each_record_on_its_backbones_features(planned_paper):
    """Rows 'features' (every paper): each record's training jobs read the features of its
    ``backbone``, the pivot CorrNets those of ``pivot.backbone``, and each is extracted."""
    extracted = {job["backbone"] for job in planned_paper["extract_features"]}
    records = paper_variants()
    for job in planned_paper["train_retrieval"]:
        backbone = records[job["variant"]]["backbone"]
        read = {path.split("/features/")[1].split("/")[0] for path in job["input"]
                if "/features/" in path}  # fmt: skip
        assert read == {backbone}, job["variant"]
        assert backbone in extracted
    pivot = paper_config()["pivot"]["backbone"]
    corrnets = [
        job for job in planned_paper["pivot_train"] if any("/features/" in p for p in job["input"])
    ]
    assert corrnets and all(
        any(f"/features/{pivot}/" in path for path in job["input"]) for job in corrnets
    )
    assert pivot in extracted


def test_the_planned_paper_workflow_reranks_each_system_with_its_features_models(planned_paper):
    """Rows 'reranking features' and 'fewer retrieval variants' (Table 3): every system of
    ``nmt.systems`` is reranked and scored, MIRA tunes those with features, and the n-best
    features are computed with the retrieval model (variant, seed) each embedding feature names."""
    nmt = paper_config()["nmt"]
    systems = nmt["systems"]
    assert {job["system"] for job in planned_paper["rerank"]} == set(systems)
    assert {job["system"] for job in planned_paper["mt_score"]} == set(systems)
    tuned = {name for name, system in systems.items() if system["features"]}
    assert {job["system"] for job in planned_paper["mira"]} == tuned
    used = {f for system in systems.values() for f in system["features"]}
    models = {
        f"results/retrieval/{spec['variant']}/seed{spec['seed']}/model.pt"
        for name, spec in nmt["embedding_features"].items()
        if name in used
    }
    for job in planned_paper["nbest_features"]:
        assert {path for path in job["input"] if path.endswith("model.pt")} == models


# --- a training run built from each paper recipe -------------------------------------------


@pytest.fixture(scope="module")
def world(tmp_path_factory):
    from helpers.retrieval import make_world

    return make_world(tmp_path_factory.mktemp("world"))


RUN_KEYS = (
    "optimizer", "epochs", "margin", "loss", "similarity", "batching", "batch_size", "grad_clip",
    "c2c", "c2c_probability", "validation", "select_language", "select_by", "early_stopping",
    "beta", "use_abs",
)  # fmt: skip
# Sizes and inputs of the toy world (its features are "toy"; no word vectors): what these tests
# read from each record is everything else.
TOY = {"embed_dim": 8, "hidden": 8, "joint": 8, "backbone": "toy", "device": "cpu",
       "word_embeddings": "random", "min_count": 1}  # fmt: skip


def _multi30k_records() -> dict[str, dict]:
    return {n: r for n, r in paper_variants().items() if r["dataset"] == "multi30k"}


@pytest.mark.parametrize("name", [n for n, _ in _distinct(_multi30k_records(), RUN_KEYS).values()])
def test_each_paper_recipe_drives_its_training_run(name, world, tmp_path, monkeypatch):
    """Rows 'loss', 'optimiser', 'lr schedule', 'batching', 'gradient clipping', 'selection',
    'stopping', validation and data (Kádár, Calixto, AME on Multi30K): the trainer built from
    the record (a toy world, small sizes) uses its Adam rate, decays it by ``decay_factor``
    every ``decay_epochs`` epochs (never when null), ranks with its ``margin`` and ``loss``
    (order: absolute values or not, ``use_abs``),
    clips at its ``grad_clip``, draws batches of its ``batch_size`` and kind (switch: a c2c
    batch with ``c2c_probability``; joint: an image with a caption per language, ``beta``
    weighing image against sentence terms; pooled: languages mixed) over every caption of its
    ``train_data`` (c2c: every cross-language pair of an image's captions), validates on its
    ``select_language`` with the portion's captions per image every ``early_stopping.every``
    steps (null: each epoch; ``epoch_end``: each epoch too) up to ``epochs`` epochs, selects
    by its ``select_by``, and tests on its ``test`` split, images, portion and folds (STS
    with ``sts`` and English)."""
    from mlmm.retrieval.config import select_languages
    from mlmm.retrieval.losses import ranking_loss
    from mlmm.retrieval.train import Run

    record = {**paper_variants()[name], **TOY}
    run = Run(record, 1, world, tmp_path)
    opt = record["optimizer"]
    assert run.optimizer.param_groups[0]["lr"] == opt["lr"]
    if opt["decay_epochs"]:
        assert run._lr(opt["decay_epochs"] - 1) == opt["lr"]
        assert run._lr(opt["decay_epochs"]) == pytest.approx(opt["lr"] * opt["decay_factor"])
    else:
        assert run._lr(record["epochs"]) == opt["lr"]
    # zero embeddings score 0 against everything: each in-batch negative violates by the margin
    n, zeros = 4, torch.zeros(4, record["joint"])
    negatives = n - 1 if record["loss"] == "sum" else 1
    assert run._rank(zeros, zeros).item() == pytest.approx(2 * n * negatives * record["margin"])
    assert ranking_loss(torch.zeros(n, n), 0.0, record["loss"]).item() == 0.0

    clipped = []
    clip = torch.nn.utils.clip_grad_norm_
    monkeypatch.setattr(
        torch.nn.utils,
        "clip_grad_norm_",
        lambda p, max_norm: clipped.append(max_norm) or clip(p, max_norm),
    )
    _, size = run.train_step(use_amp=False)
    assert clipped == [record["grad_clip"]] and size == record["batch_size"]

    langs = languages(record)
    if record["image_subset"]["fraction"] == 1 and record["batching"] != "joint":
        # every image's captions of every source (fr/cs: translations), c2c pairs the
        # Cartesian products of one image's captions over every pair of languages
        from itertools import combinations

        images = len(image_list(world.data_root, "train"))
        counts = dict.fromkeys(langs, 0)
        for source in record["train_data"]:
            comparable = source["portion"] == "comparable"
            for lang in source["languages"]:
                full = 5 if comparable and lang not in TRANSLATION_ONLY else 1
                counts[lang] += source.get("captions_per_image") or full
        assert run.streams.examples == images * sum(counts.values())
        if record["c2c"]:
            pairs = sum(counts[a] * counts[b] for a, b in combinations(langs, 2))
            assert len(run.streams.c2c[0].lengths) == images * pairs
    batches = [run.streams.next_batch(record["batch_size"]) for _ in range(200)]
    sizes = {len(b) for b in batches}  # an epoch's last batch holds the rest
    assert max(sizes) == record["batch_size"] and min(sizes) >= 2
    if record["batching"] == "joint":
        assert all(b.joint and len(b.texts) == len(langs) for b in batches)
    elif record["batching"] == "pooled":
        assert all(len(b.texts) == 1 and b.images is not None for b in batches)
        assert set(batches[0].texts[0].languages) == set(langs)
    else:
        c2c = [b for b in batches if b.images is None]
        share = record["c2c_probability"] if record["c2c"] else 0.0
        assert abs(len(c2c) / len(batches) - share) < 0.15, (len(c2c), share)
        assert all(len(set(b.texts[0].languages)) == 1 for b in batches if b.images is not None)

    assert set(run.val.captions) == set(select_languages(record))
    validation = record["validation"]
    per_image = 1 if validation["portion"] == "translation" else 5
    per_image = min(per_image, validation.get("captions_per_image") or per_image)
    assert set(run.val.per_image.values()) == {per_image}, validation
    listed = range(len(image_list(world.data_root, validation["split"])))
    assert len(run.val.features) == len(listed[slice(*validation["images"])])

    run.model.eval()  # use_abs: the order score's absolute values of the embeddings (VSE++)
    embedded = run.model.embed_images(torch.from_numpy(run.val.features))
    absolute = record["use_abs"] and record["similarity"] == "order"
    assert bool((embedded < 0).any()) == (not absolute)

    run.validate(0.0, 0.0)  # the selection score: the recall sum, or (-sum of mean ranks, rsum)
    row = run.history[-1]
    rsum = (row["rsum"],)
    want = rsum if record["select_by"] == "rsum" else (-row["mean_rank"], *rsum)
    assert run.selector.score == pytest.approx(want)

    class Planned(Exception):
        pass

    due = run._validation_due
    planned = {}

    def first_check(every, total):
        planned.update(every=every, total=total)
        raise Planned

    monkeypatch.setattr(run, "_validation_due", first_check)
    with pytest.raises(Planned):
        run.train(progress=False)
    stopping, per_epoch = record["early_stopping"], run.steps_per_epoch
    assert planned == {
        "every": stopping["every"] or per_epoch,
        "total": record["epochs"] * per_epoch,
    }
    run.step = per_epoch  # an epoch's end between two validation intervals
    if per_epoch % planned["every"] and per_epoch < planned["total"]:
        assert due(planned["every"], planned["total"]) == stopping["epoch_end"]

    test = record["test"]  # the final test: its split, images, portion, folds; STS
    listed = range(len(image_list(world.data_root, test["split"])))
    images = len(listed[slice(*test["images"])])
    if images < 2:  # a range the toy split does not reach (Calixto: val images 500 on)
        from mlmm.errors import InputError

        with pytest.raises(InputError, match="images"):
            run.test()
        images = len(listed)  # the rest on the whole split
        run.record = {**record, "test": {**test, "images": [0, None]}}
    out = run.test()
    assert set(out["test"]) == set(langs)
    assert (run.outcomes["folds"], run.outcomes["images"]) == (test["folds"], images)
    for lang in langs:  # fr/cs have translations only
        comparable = test["portion"] == "comparable" and lang not in TRANSLATION_ONLY
        assert len(run.ranks[lang]["t2i"]) == images * (5 if comparable else 1), lang
    assert ("sts" in out) == (record["sts"] and "en" in langs)  # Pearson of the English encoder

    if record["batching"] == "joint":  # beta * S_I + (1 - beta) * S_S, on zero embeddings
        batch = batches[0]
        n, k = len(batch), len(langs)
        zeros = torch.zeros(n, record["joint"])
        monkeypatch.setattr(run.model, "embed_images", lambda features: zeros)
        monkeypatch.setattr(run, "_embed", lambda text: zeros)
        each = 2 * n * (n - 1 if record["loss"] == "sum" else 1) * record["margin"]
        sentence_pairs = k * (k - 1) // 2
        want = record["beta"] * k * each + (1 - record["beta"]) * sentence_pairs * each
        assert run.batch_loss(batch).item() == pytest.approx(want)


# --- Kádár's training sets: image subsets, sampled captions, c2c pairs ---------------------

DRAW_KEYS = ("train_data", "image_subset", "c2c", "c2c_captions")


def _kadar_records_of_the_tiny_world() -> dict[str, dict]:
    """Kádár's records whose languages the tiny world holds (comparable en/de)."""
    return {n: r for n, r in paper_variants("kadar").items() if set(languages(r)) <= {"en", "de"}}


@pytest.mark.parametrize(
    "name", [n for n, _ in _distinct(_kadar_records_of_the_tiny_world(), DRAW_KEYS).values()]
)
def test_each_kadar_record_draws_its_training_sets(name, tmp_path):
    """Rows 'Table 5 halves', 'one caption per image + c2c' and 'data' (Kádár): the training
    sets built from the record give each language ``image_subset.fraction`` of the images
    (shared draw: the same images when ``overlap``, none in common when ``disjoint``), each
    image ``captions_per_image`` captions of each source (all of them when unset), c2c pairs
    on the subset's images (``image_subset.c2c: subset``) or every image (``all``), and with
    ``c2c_captions: shared`` the c2c pairs and the vocabulary are the c2i sample itself."""
    from helpers.retrieval import tiny_world

    from mlmm.retrieval.data import c2c_pairs, training_sets

    n = 10
    tiny_world(tmp_path, n)
    record = paper_variants()[name]
    sets = training_sets(tmp_path, record, seed=1)
    subset = record["image_subset"]
    langs = languages(record)
    images = {lang: {i for i, caps in enumerate(sets.c2i[lang]) if caps} for lang in langs}
    assert {len(kept) for kept in images.values()} == {round(subset["fraction"] * n)}
    if len(langs) > 1 and subset["draw"] == "shared" and subset["fraction"] < 1:
        first, second = images[langs[0]], images[langs[1]]
        assert (first == second) if subset["assignment"] == "overlap" else not first & second
    for lang in langs:
        per_source = [
            source.get("captions_per_image") or (5 if source["portion"] == "comparable" else 1)
            for source in record["train_data"]
            if lang in source["languages"]
        ]
        assert {len(sets.c2i[lang][i]) for i in images[lang]} == {sum(per_source)}, lang
    if record["c2c"]:
        paired = {a[1] for _, a, _, _ in c2c_pairs(sets.c2c)}  # (lang, caption, lang, caption)
        paired_images = {i for lang in langs for i, caps in enumerate(sets.c2c[lang]) if caps}
        want = set().union(*images.values()) if subset["c2c"] == "subset" else set(range(n))
        assert paired_images == want and paired
    if record["c2c_captions"] == "shared":  # one sample: c2c pairs hold the c2i captions
        assert sets.vocabulary == sets.c2i
        for lang in langs:
            assert all(sets.c2c[lang][i] == sets.c2i[lang][i] for i in images[lang]), lang


# --- Calixto Table 3: the NMT model and training run of the configured record --------------


def _nmt_config(**sizes):
    """The TrainConfig `mlmm train-nmt` builds from the paper's ``nmt`` record (cli.nmt)."""
    from mlmm.nmt import train_record
    from mlmm.nmt.model import Sizes
    from mlmm.nmt.train import TrainConfig

    nmt = paper_config()["nmt"]
    record = train_record(nmt)
    # the job's device: its resources' torch_device, ``nmt.device``
    model = Sizes(**{**record["model"], **sizes})
    return record, TrainConfig(model, device=nmt["device"], **record["train"])


def test_the_nmt_model_has_the_configured_sizes_decoder_and_dropout():
    """Rows 'sizes', 'decoder', 'dropout' (Table 3 NMT): the model built from the record has
    ``nmt.model``'s word embedding, GRU and attention sizes, the cGRU decoder's second cell,
    and dropout of ``nmt.model.dropout`` (none: two training passes agree)."""
    from mlmm.nmt.model import Seq2Seq

    record, config = _nmt_config()
    model_sizes = record["model"]
    model = Seq2Seq(9, 11, config.sizes)
    assert model.src_embedding.embedding_dim == model_sizes["embedding"]
    assert (model.encoder.input_size, model.encoder.hidden_size) == (
        model_sizes["embedding"],
        model_sizes["hidden"],
    )
    assert model.att_keys.out_features == model_sizes["attention"]
    assert hasattr(model, "cell2") == (model_sizes["decoder"] == "cgru")
    assert model.dropout.p == model_sizes["dropout"]
    model.train()
    src, lengths, tgt = torch.tensor([[4, 5, 6]]), torch.tensor([3]), torch.tensor([[2, 4, 5]])
    first, second = model(src, lengths, tgt), model(src, lengths, tgt)
    assert torch.equal(first, second) == (model_sizes["dropout"] == 0)


def test_the_nmt_run_applies_the_configured_length_cut_vocabulary_batches_and_patience(
    monkeypatch,
):
    """Rows 'sentence length', 'vocabulary', 'model selection', 'sizes' (batch), 'device' of
    Table 3: trained from the record (tiny sizes), the run leaves out pairs with a side of
    ``max_length`` tokens, keeps a word seen ``min_count`` times (not one seen once fewer),
    draws batches of ``batch_size`` and, validation BLEU never improving, stops after
    ``patience`` epochs past the first (within ``max_epochs``), on the device ``nmt.device``
    gives (auto: a GPU when present)."""
    from mlmm.nmt import train as nmt_train

    record, config = _nmt_config(embedding=4, hidden=4, attention=4)
    settings = record["train"]
    cut, threshold, size = settings["max_length"], settings["min_count"], settings["batch_size"]
    src = [["kept"]] * threshold + [["rare"]] * (threshold - 1) + [["once"], ["x"] * cut]
    src += [["w"]] * (2 * size)
    tgt = [["ja"]] * len(src)
    seen = {}
    batches = nmt_train._batches

    def recorded(pairs, batch_size, rng):
        seen.update(pairs=len(pairs), batch_size=batch_size)
        yield from batches(pairs, batch_size, rng)

    monkeypatch.setattr(nmt_train, "_batches", recorded)
    # references of words no hypothesis can hold: validation BLEU stays 0
    translator, history = nmt_train.train(src, tgt, [["w"]], [["nie"]], config, progress=False)
    assert seen == {"pairs": len(src) - 1, "batch_size": size}  # the cut-length pair left out
    words = translator.src.index
    assert "kept" in words and "rare" not in words and ("once" in words) == (threshold <= 1)
    assert len(history) == min(settings["max_epochs"], 1 + settings["patience"])
    device = paper_config()["nmt"]["device"]
    gpu = device == "cuda" or device == "auto" and torch.cuda.is_available()
    assert next(translator.model.parameters()).device.type == ("cuda" if gpu else "cpu")


@pytest.mark.parametrize(
    "name",
    [
        name
        for name, _ in _distinct(
            {n: r for n, r in paper_variants("ame_").items() if r["word_embeddings"] != "random"},
            ("embed_dim", "word_embeddings", "unknown_word_init", "encoder"),
        ).values()
    ],
)
def test_the_configured_vectors_fill_each_ame_records_word_embeddings(name, tmp_path):
    """Rows 'sizes' and 'Mono' (AME): vectors of ``retrieval.vectors.dim`` are copied into the
    word embeddings of the model each AME record builds (``embed_dim``), frozen for FME, and
    vectors of another size are refused. Small GRU and joint sizes: the embedding is tested."""
    from mlmm.errors import InputError
    from mlmm.retrieval.word_embeddings import load_vectors
    from mlmm.retrieval.word_vector_files import write_vec

    record = {**paper_variants()[name], "hidden": 8, "joint": 8}
    dim = paper_config()["retrieval"]["vectors"]["dim"]
    vocabs = _vocabularies(record)
    model = build_model(record, 5, vocabs)
    rng = np.random.default_rng(0)
    vectors = {w: rng.normal(size=dim).astype(np.float32) for w in ("a", "man", "rides")}
    for lang in languages(record):
        write_vec(tmp_path / f"wiki.{lang}.align.vec", vectors)
    load_vectors(model, vocabs, languages(record), record, tmp_path)
    weight, vocab = model.text["shared"].embed.weight, vocabs.vocabs["shared"]
    for lang in languages(record):
        torch.testing.assert_close(weight[vocab.index[f"{lang}:man"]].detach(),
                                   torch.from_numpy(vectors["man"]))  # fmt: skip
    assert weight.requires_grad == (record["word_embeddings"] != "fme")
    wider = {w: np.append(v, 0.0).astype(np.float32) for w, v in vectors.items()}
    for lang in languages(record):
        write_vec(tmp_path / f"wiki.{lang}.align.vec", wider)
    with pytest.raises(InputError, match="embed_dim"):
        load_vectors(build_model(record, 5, vocabs), vocabs, languages(record), record, tmp_path)


# --- Rajendran: the Bridge CorrNet runs of the TED and pivot stages ------------------------


@pytest.fixture
def corrnet_calls(monkeypatch) -> list[dict]:
    """What each CorrNet training run used: its model, batch size and SGD rate."""
    from mlmm.ted import corrnet

    calls: list[dict] = []
    train, batches, sgd = corrnet.train, corrnet.batches, torch.optim.SGD

    def recorded_train(*args, **kwargs):
        calls.append({})
        model, history = train(*args, **kwargs)
        calls[-1].update(model=model, history=history)
        return model, history

    def recorded_batches(sizes, batch_size, rng):
        calls[-1]["batch_size"] = batch_size
        return batches(sizes, batch_size, rng)

    def recorded_sgd(params, lr):
        calls[-1]["lr"] = lr
        return sgd(params, lr=lr)

    monkeypatch.setattr(corrnet, "train", recorded_train)
    monkeypatch.setattr(corrnet, "batches", recorded_batches)
    monkeypatch.setattr(torch.optim, "SGD", recorded_sgd)
    return calls


def _check_corrnet(call: dict, settings: dict) -> None:
    model = call["model"]
    assert model.hidden_size == settings["hidden"]
    assert len(call["history"]) == settings["epochs"]
    assert call["batch_size"] == settings["batch_size"] and call["lr"] == settings["learning_rate"]
    assert model.binary == (settings["input"] == "binary")
    assert model.reconstruction_kind == settings["reconstruction"]


def test_the_ted_stage_reads_its_corpus_and_trains_with_the_configured_settings(
    tmp_path, corrnet_calls
):
    """Rows 'topics', 'vocabulary', 'sizes', 'reconstruction loss L', 'device' (Rajendran
    Tables 1, 3, 4): on a generated corpus in the real layout, the bag of words keeps the
    topic directories found (``ted.topics`` null) and only words counted ``min_count`` times
    or more, and a `ted-train` run from the paper's record trains a Bridge CorrNet of
    ``hidden`` units for ``epochs`` epochs in mini-batches of ``batch_size`` at SGD rate
    ``learning_rate``, with its input reading and reconstruction loss, on the device
    ``ted.device`` gives (auto: a GPU when present)."""
    from mlmm.records import record_of
    from mlmm.ted import bow, corpus, demo
    from mlmm.ted.experiment import train_stage

    ted = paper_config()["ted"]
    language, codes = ted["languages"][0], ted["corpus_codes"]
    root = demo.generate(tmp_path / "ted-cldc", train_docs=24, test_docs=8, general_words=60,
                         topic_words=10, codes=codes, languages=[language])  # fmt: skip
    meta = bow.build(root, tmp_path / "bow", [language], ted["topics"], codes, ted["min_count"])
    if ted["topics"] is None:
        assert meta["topics"] == corpus.find_topics(root, [language], codes)
    counts = [
        int(line.split("\t")[1])
        for line in (tmp_path / f"bow/vocab.{language}.txt").read_text("utf-8").splitlines()
    ]
    assert counts and min(counts) >= ted["min_count"]
    # the device a job is given (its resources' torch_device: ``ted.device``)
    settings = record_of("ted-train", ted) | {"lambda": ted["lambdas"][0], "device": ted["device"]}
    train_stage(tmp_path / "bow", tmp_path / "run", settings)
    _check_corrnet(corrnet_calls[-1], settings)
    gpu = ted["device"] == "cuda" or ted["device"] == "auto" and torch.cuda.is_available()
    assert next(corrnet_calls[-1]["model"].parameters()).device.type == ("cuda" if gpu else "cpu")


def test_the_pivot_stage_trains_with_the_configured_settings(tmp_path, corrnet_calls, monkeypatch):
    """Rows 'sizes', 'vocabulary', 'reconstruction loss', 'image feature scaling', 'Z1 split'
    (Rajendran Table 5): a `pivot-train` bridge run from the paper's record (a generated COCO
    + talks world) trains a Bridge CorrNet of ``hidden`` units for ``epochs`` epochs in mini-batches
    of ``batch_size`` at rate ``learning_rate`` on ``input`` rows, z-scores the image rows
    only with ``standardise_images``, holds out ``validation_fraction`` of the Z1 images and of
    the talks (at most ``validation_max``) for choosing lambda, and keeps the words of the talks
    seen ``min_count`` times."""
    from helpers.pivot import make_world

    import mlmm.pivot.experiment as experiment
    from mlmm.records import record_of

    pivot = paper_config()["pivot"]
    coco, features, ted = make_world(tmp_path / "world")
    settings = record_of("pivot-train", pivot)
    loaded = []
    load = experiment.load
    monkeypatch.setattr(
        experiment, "load", lambda *a, **k: loaded.append(load(*a, **k)) or loaded[-1]
    )
    experiment.train_stage(coco, features, settings["backbone"], ted, pivot["languages"][0],
                           "bridge", pivot["lambdas"][0], settings, tmp_path / "run",
                           progress=False)  # fmt: skip
    _check_corrnet(corrnet_calls[-1], settings)
    data = loaded[-1]
    images = data.z1.images
    unit = np.allclose(images.mean(0), 0, atol=1e-3) and np.allclose(images.std(0), 1, atol=1e-2)
    assert unit == settings["standardise_images"]

    def held(n: int) -> int:
        return min(settings["validation_max"], max(1, round(settings["validation_fraction"] * n)))

    talks = data.z2.foreign.shape[0] + data.z2.val_foreign.shape[0]
    assert data.z2.val_foreign.shape[0] == held(talks)
    z1 = len(data.z1.images) + len(data.z1.val_images) + len(data.z1.dropped)
    assert len(data.z1.val_images) == held(z1)
    from collections import Counter

    from mlmm.pivot.data import ted_corpus_root
    from mlmm.ted.corpus import find_topics, read_pair

    language = pivot["languages"][0]
    root = ted_corpus_root(ted)
    talks_read = read_pair(root, language, "train", find_topics(root, [language], None))[0]
    counts = Counter(word for talk in talks_read.tokens for word in talk)
    assert set(data.words[language]) == {w for w, c in counts.items() if c >= settings["min_count"]}


def test_the_pivot_examples_show_the_configured_paper_queries_first():
    """Row 'Tables 6 and 7' (Rajendran): each configured paper query
    (``pivot.examples.paper_queries``) is found among MIC captions tokenised as the MIC set's
    (Table 6: the image it describes) and shown first, the rest of ``per_language`` queries
    drawn from the other items."""
    from mlmm.data.coco import tokenise_mic
    from mlmm.pivot.data import CAPTIONS_PER_IMAGE
    from mlmm.results.pivot_examples import choose_queries, find_caption

    examples = paper_config()["pivot"]["examples"]
    count = examples["per_language"]
    checked = 0
    for table, per_language in examples["paper_queries"].items():
        for language, texts in per_language.items():
            captions = [["filler", str(i)] for i in range(3 * CAPTIONS_PER_IMAGE)]
            captions += [tokenise_mic(text, language) for text in texts]
            captions += [["pad", str(i)] for i in range(-len(captions) % CAPTIONS_PER_IMAGE)]
            found = [find_caption(captions, text, language) for text in texts]
            assert found == list(range(3 * CAPTIONS_PER_IMAGE, 3 * CAPTIONS_PER_IMAGE + len(texts)))
            n_items = len(captions)
            if table == "table6":
                found = [c // CAPTIONS_PER_IMAGE for c in found]
                n_items //= CAPTIONS_PER_IMAGE
            rng = np.random.default_rng(examples["seed"])
            queries = choose_queries(n_items, found, count, rng)
            assert len(queries) == count and len({item for item, _ in queries}) == count
            paper = list(dict.fromkeys(found))[:count]
            assert queries[: len(paper)] == [(item, "paper") for item in paper]
            checked += len(texts)
    assert checked  # the paper config names queries


@pytest.mark.parametrize(
    "name",
    [
        name
        for name, _ in _distinct(
            {n: r for n, r in paper_variants("ame_").items() if r["word_embeddings"] == "ame"},
            ("alignment",),
        ).values()
    ],
)
def test_each_ame_alignment_uses_its_configured_sections_mappings_rate_and_neighbours(
    name, tmp_path, monkeypatch
):
    """Rows 'alignment data', 'mappings in the forward pass', 'RCSLS schedule', 'W orthogonal,
    rows normalised' (AME): the alignment built from the record trains on the MUSE sections of
    ``alignment.sections.train`` and measures on ``sections.test``, has one mapping per
    direction of ``mappings`` (two: en-X and X-en), starts at the rate ``lr`` (an int with
    ``lr_halving: integer``), scores RCSLS with ``knn`` neighbours on rows normalised or not
    (``normalise``), and after a step W is orthogonal again exactly when ``orthogonalise``."""
    from mlmm.retrieval import rcsls
    from mlmm.retrieval.word_embeddings import Alignment, load_vectors
    from mlmm.retrieval.word_vector_files import lexicon_file, write_vec

    record = {**paper_variants()[name], "hidden": 8, "joint": 8}
    settings = record["alignment"]
    english, other = languages(record)[0], languages(record)[1]
    assert english == "en"
    n = 24
    words = {"en": [f"e{i}" for i in range(n)], other: [f"o{i}" for i in range(n)]}
    vocabs = Vocabularies.build(
        {lang: [[w]] for lang, w in words.items()}, {**record, "min_count": 1}
    )
    model = build_model(record, 5, vocabs)
    rng = np.random.default_rng(0)
    for lang, listed in words.items():
        vectors = {w: rng.normal(size=record["embed_dim"]).astype(np.float32) for w in listed}
        write_vec(tmp_path / f"wiki.{lang}.align.vec", vectors)
    known = load_vectors(model, vocabs, [english, other], record, tmp_path)
    muse = tmp_path / "muse"
    muse.mkdir()
    names = [*settings["sections"]["train"], settings["sections"]["test"]]
    pairs = {section: range(8 * k, 8 * k + 8) for k, section in enumerate(names)}
    for section, indices in pairs.items():
        for reverse in (False, True):
            lines = [f"o{i} e{i}" if reverse else f"e{i} o{i}" for i in indices]
            lexicon_file(muse, other, section, reverse).write_text("\n".join(lines) + "\n")
    alignment = Alignment.build(
        model, vocabs, [english, other], record, muse, torch.device("cpu"), known
    )
    assert len(alignment.directions) == (2 if settings["mappings"] == "two" else 1)
    trained = {i for section in settings["sections"]["train"] for i in pairs[section]}
    measured = set(pairs[settings["sections"]["test"]])
    for direction in alignment.directions:
        source = direction.pair.split("-")[0]
        # the direction's rows: the source language's words in vocabulary order
        position = [w.split(":", 1)[1] for w in vocabs.vocabs["shared"].words
                    if w.startswith(f"{source}:")]  # fmt: skip
        assert {position[i] for i in direction.train[:, 0].tolist()} == {
            words[source][i] for i in trained
        }
        assert {position[i] for i in direction.gold} == {words[source][i] for i in measured}
    integer = settings["lr_halving"] == "integer"
    assert alignment.lr == (int(settings["lr"]) if integer else settings["lr"])
    seen = []
    loss = rcsls.rcsls_loss

    def recorded(src, tgt, pairs, mapping, knn, normalise):
        seen.append((knn, normalise))
        return loss(src, tgt, pairs, mapping, knn, normalise)

    monkeypatch.setattr(rcsls, "rcsls_loss", recorded)
    alignment.loss().backward()
    assert set(seen) == {(settings["knn"], settings["normalise"])}
    alignment.step()
    for direction in alignment.directions:
        w = direction.mapping.detach().double()
        orthogonal = torch.allclose(w @ w.t(), torch.eye(len(w), dtype=w.dtype), atol=1e-5)
        assert orthogonal == settings["orthogonalise"]
