"""CorrNet + MT rows of Rajendran et al. 2016 Table 5 (mlmm.pivot.mt): the Z2 sentence pairs,
the translated MIC caption files, the En-Image CorrNet on translations, the table rows."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest
from helpers.pivot import PAPER_TABLES, fake_run, make_world

from mlmm.cli import main
from mlmm.errors import InputError
from mlmm.nmt.model import Sizes
from mlmm.nmt.search import beam_search, best_translation
from mlmm.nmt.train import TrainConfig, train
from mlmm.outcomes import read_outcomes, verified_outcomes
from mlmm.pivot import nmt_records
from mlmm.pivot.data import held_out
from mlmm.pivot.evaluate import recalls_of_ranks
from mlmm.pivot.mt import (
    parallel_corpus,
    read_translations,
    translate_mic,
    translation_file,
    write_parallel,
)
from mlmm.records import write_record
from mlmm.results.pivot_table import SYSTEMS, table5
from mlmm.ted import TOPICS

MT_LABEL = "CorrNet + MT (NMT; the paper used Moses)"


def _talk(root: Path, pair: str, talk: int, lines: list[str], topic: int = 0) -> None:
    """One talk under one topic (positive) and the others (negative), as the corpus files it."""
    for t, name in enumerate(TOPICS):
        folder = root / pair / "train" / name / ("positive" if t == topic else "negative")
        folder.mkdir(parents=True, exist_ok=True)
        (folder / f"{talk}.ted").write_text("".join(line + "\n" for line in lines))


def ted_sentences(root: Path, language: str, talks: int = 10) -> Path:
    """Talk t: sentences `x{t}_{j}` / `e{t}_{j}` (j < 3), with markup and the language suffix;
    talk 3 has one English sentence too many, talk 4 an empty pair and a 6-token pair."""
    for t in range(talks):
        x = [f"<title>talk {t}</title>"] + [f"X{t}_{j}_{language} w_{language}" for j in range(3)]
        en = ["<title>talk</title>"] + [f"E{t}_{j}_en w_en" for j in range(3)]
        if t == 3:
            en.append("extra_en")
        if t == 4:
            x += ["", " ".join(["long"] * 6)]
            en += ["e", "short"]
        _talk(root, f"{language}-en", t, x, topic=t % 2)
        _talk(root, f"en-{language}", t, en, topic=t % 2)
    return root


@pytest.mark.parametrize("language", ["fr", "de"])
def test_table5_corrnet_mt_z2_sentence_pairs_x_to_en(tmp_path, language):
    root = ted_sentences(tmp_path / "ted", language)
    corpus, stats = parallel_corpus(root, language, 0.2, 1000, seed=1, max_length=5)
    ids = sorted(str(t) for t in range(10))  # talk ids in read_side's order: 0, 1, ..., 9
    _, val_rows = held_out(10, 0.2, 1000, 1)  # the talks pivot-train holds out of Z2
    val_talks = {ids[i] for i in val_rows}
    assert stats["talks"] == 10 and stats["validation_talks"] == 2
    assert stats["unaligned_talks"] == ["3"]
    assert stats["empty_pairs"] == 1
    expected = {"train": [], "val": []}
    for talk in ids:
        if talk == "3":
            continue
        split = "val" if talk in val_talks else "train"
        expected[split] += [(f"x{talk}_{j} w".split(), f"e{talk}_{j} w".split()) for j in range(3)]
        if talk == "4" and split == "val":  # the length cut is for training pairs only
            expected[split].append((["long"] * 6, ["short"]))
    for split in ("train", "val"):
        x, en = corpus[split]
        assert list(zip(x, en, strict=True)) == expected[split], split
    assert stats["long_pairs"] == (0 if "4" in val_talks else 1)
    write_parallel(tmp_path / "data", language, corpus, stats)
    lines = (tmp_path / f"data/train.lc.norm.tok.{language}").read_text().splitlines()
    english = (tmp_path / "data/train.lc.norm.tok.en").read_text().splitlines()
    assert lines == [" ".join(x) for x, _ in expected["train"]]
    assert english == [" ".join(e) for _, e in expected["train"]]
    assert json.loads((tmp_path / "data/stats.json").read_text())["train_pairs"] == len(lines)


def test_table5_corrnet_mt_z2_talks_on_one_side_only_are_refused(tmp_path):
    root = ted_sentences(tmp_path / "ted", "fr", talks=4)
    for path in (root / "en-fr").rglob("2.ted"):
        path.unlink()
    with pytest.raises(InputError, match=r"talks on one side only: \['2'\]"):
        parallel_corpus(root, "fr", 0.25, 1000, 1, 100)
    with pytest.raises(InputError, match="one of fr, de"):
        parallel_corpus(root, "it", 0.25, 1000, 1, 100)


def test_table5_corrnet_mt_records_reuse_the_one_nmt_recipe():
    config = {
        "pivot": {"languages": ["fr", "de"], "mt": {"beam": 3, "max_length": 100,
                                                    "model": {"hidden": 8}, "train": {}}},
        "nmt": {"model": {"embedding": 4, "hidden": 16, "decoder": "cgru"},
                "train": {"learning_rate": 0.5, "max_epochs": 2}},
    }  # fmt: skip
    records = nmt_records(config)
    assert list(records) == ["fr", "de"]
    for x, record in records.items():
        assert (record["src"], record["tgt"], record["data"]) == (x, "en", "z2")
        assert record["model"] == {"embedding": 4, "hidden": 8, "decoder": "cgru"}
        # one length cut: the data step's pivot.mt.max_length reaches the trainer too
        assert record["train"] == {"learning_rate": 0.5, "max_epochs": 2, "max_length": 100}
        assert (record["beam"], record["max_length"]) == (3, 100)


def test_table5_corrnet_mt_training_record_passes_the_nmt_schema(tmp_path):
    """What pivot_train_nmt writes for `train-nmt --config` is checked by the nmt section's
    model/train schemas, the one recipe; keys neither section sets take their defaults."""
    from mlmm.nmt import TRAIN_RECORD_KEYS, train_record
    from mlmm.records import write_record
    from mlmm.schema import read_record, subschema

    config = {"pivot": {"languages": ["de"], "mt": {"beam": 3, "max_length": 100,
                                                    "model": {"hidden": 8}}},
              "nmt": {"model": {"embedding": 4}, "train": {"max_epochs": 2}}}  # fmt: skip
    path = write_record(tmp_path / "de.json", train_record(nmt_records(config)["de"]))
    record = read_record(path, "nmt", TRAIN_RECORD_KEYS)
    assert (record["src"], record["tgt"]) == ("de", "en")
    assert (record["model"]["embedding"], record["model"]["hidden"]) == (4, 8)
    assert record["model"]["dropout"] == subschema("nmt.model.dropout")["default"]
    assert (record["train"]["max_epochs"], record["train"]["max_length"]) == (2, 100)
    config["pivot"]["mt"]["model"]["dropout"] = 1.5
    path = write_record(tmp_path / "de.json", train_record(nmt_records(config)["de"]))
    with pytest.raises(InputError, match=r"de\.json, key 'model\.dropout': expected a number < 1"):
        read_record(path, "nmt", TRAIN_RECORD_KEYS)


@pytest.fixture(scope="module")
def world(tmp_path_factory):
    return make_world(tmp_path_factory.mktemp("pivot_mt"), n_train=200, n_mic=20, talks=40)


@pytest.fixture(scope="module")
def translator_fr(world, tmp_path_factory):
    """A tiny fr -> en model trained on the MIC captions themselves (the layout is tested,
    not the translation quality)."""
    coco = world[0]
    tok = coco / "data/task2/tok"
    src = [line.split() for k in range(1, 6) for line in
           (tok / f"mic.lc.norm.tok.{k}.fr").read_text().splitlines()]  # fmt: skip
    tgt = [line.split() for k in range(1, 6) for line in
           (tok / f"mic.lc.norm.tok.{k}.en").read_text().splitlines()]  # fmt: skip
    config = TrainConfig(Sizes(8, 16, 16, 0.0), max_epochs=1, seed=1)
    translator, _ = train(src, tgt, src[:5], tgt[:5], config, ("fr", "en"), progress=False)
    path = tmp_path_factory.mktemp("nmt") / "model.pt"
    translator.save(path)
    return translator, path


def test_table5_corrnet_mt_translations_mirror_the_mic_caption_files(
    world, translator_fr, tmp_path
):
    coco = world[0]
    translator, model = translator_fr
    stats = translate_mic(model, coco, "fr", beam=2, out=tmp_path, progress=False)
    assert stats["sentences"] == 100 and stats["beam"] == 2
    assert 0 <= stats["bleu_against_english_mic"] <= 100
    for k in range(1, 6):
        source = (coco / f"data/task2/tok/mic.lc.norm.tok.{k}.fr").read_text().splitlines()
        lines = translation_file(tmp_path, k).read_text(encoding="utf-8").split("\n")[:-1]
        assert translation_file(tmp_path, k).name == f"mic.lc.norm.tok.{k}.en"
        assert len(lines) == 20
        for i in (0, 19):  # line i = image i, the length-normalised 1-best (translate.sh -n)
            beam = beam_search(translator.model, translator.src.encode(source[i].split()), 2)
            best = best_translation(beam, normalise=True)[0]
            assert lines[i] == " ".join(translator.tgt.decode(best))
    flat = read_translations(tmp_path, 20)  # image-major: caption c of image c // 5
    assert flat[5 * 3 + 2] == translation_file(tmp_path, 3).read_text().split("\n")[3].split()
    # the fr -> en model asked for as the de -> en one: its record names its languages
    with pytest.raises(InputError, match=r"model.pt, key 'made_from.run.languages': expected "
                                         r"languages \['de', 'en'\] \(pivot-translate\), found "
                                         r"languages \['fr', 'en'\]"):
        translate_mic(model, coco, "de", beam=2, out=tmp_path / "de", progress=False)


def test_table5_corrnet_mt_ranks_with_the_direct_runs_network(world, tmp_path, capsys):
    coco, feats, _ = world
    train = write_record(tmp_path / "train.json", {"hidden": 12, "epochs": 2, "min_count": 1})
    common = ["--coco-root", str(coco), "--features", str(feats), "--config", str(train)]
    direct = tmp_path / "direct"
    assert main(["pivot-train", *common, "--model", "direct", "--lambda", "1",
                 "--out", str(direct)]) == 0  # fmt: skip
    assert (direct / "model.pt").is_file() and (direct / "inputs.npz").is_file()
    direct_metrics = json.loads((direct / "metrics.json").read_text())
    # A perfect MT system: the "translations" are the English MIC captions themselves, so the
    # CorrNet + MT run must reproduce the En-Image CorrNet's test recalls exactly.
    perfect = tmp_path / "perfect"
    perfect.mkdir()
    for k in range(1, 6):
        shutil.copy(coco / f"data/task2/tok/mic.lc.norm.tok.{k}.en", translation_file(perfect, k))
    record = write_record(tmp_path / "mt.json", {"backbone": "alexnet_fc6"})
    args = ["pivot-mt", "--config", str(record), "--direct-run", str(direct),
            "--coco-root", str(coco), "--features", str(feats), "--language", "fr"]  # fmt: skip
    assert main([*args, "--translations", str(perfect), "--out", str(tmp_path / "mt")]) == 0
    mt = json.loads((tmp_path / "mt/metrics.json").read_text())
    assert (mt["model"], mt["language"], mt["lambda"]) == ("mt", "fr", 1.0)
    assert mt["criteria"] == direct_metrics["criteria"]
    for direction in ("i2t", "t2i"):
        for metric, value in direct_metrics["test"][direction].items():
            assert mt["test"][direction][metric] == pytest.approx(value), (direction, metric)
    assert mt["data"]["translated_tokens_in_vocabulary"] == 1.0
    # the MIC test ranks kept beside the run give its recalls exactly (mlmm.outcomes); the
    # direct run keeps its own under English, the rows' caption languages
    for run, result, key in ((tmp_path / "mt", mt, "fr"), (direct, direct_metrics, "en")):
        kept = read_outcomes(run / "queries.npz")["test"]
        assert set(kept) == {key} and recalls_of_ranks(kept[key]) == result["test"]
        assert verified_outcomes(run / "metrics.json", "queries")["test"].keys() == {key}
    # Untranslated French: no English word is known, every caption encodes alike.
    french = tmp_path / "french"
    french.mkdir()
    for k in range(1, 6):
        shutil.copy(coco / f"data/task2/tok/mic.lc.norm.tok.{k}.fr", translation_file(french, k))
    assert main([*args, "--translations", str(french), "--out", str(tmp_path / "fr")]) == 0
    untranslated = json.loads((tmp_path / "fr/metrics.json").read_text())
    assert untranslated["data"]["translated_tokens_in_vocabulary"] == 0.0
    # A run that is not the En-Image CorrNet's is refused with one line.
    two = fake_run(tmp_path / "two", "two", "fr", 1.0, {"i2t": 0, "t2i": 0}, 0.1)
    assert main(["pivot-mt", "--config", str(record), "--direct-run", str(two),
                 "--translations", str(perfect),
                 "--coco-root", str(coco), "--features", str(feats), "--language", "fr",
                 "--out", str(tmp_path / "bad")]) == 2  # fmt: skip
    assert "model 'direct'" in capsys.readouterr().err
    assert not (tmp_path / "bad/metrics.json").exists()


def _mt_run(path: Path, language: str, lam: float, criteria: dict, value: float, bleu: float):
    translation = {"language": language, "beam": 12, "bleu_against_english_mic": bleu}
    return fake_run(path, "mt", language, lam, criteria, value, {"translation": translation})


def test_table5_corrnet_mt_rows_labels_and_note(tmp_path):
    assert SYSTEMS["mt"] == MT_LABEL
    runs = [
        fake_run(tmp_path / "d1", "direct", None, 1.0, {"i2t": 0.3, "t2i": 0.1}, 0.30),
        fake_run(tmp_path / "d10", "direct", None, 10.0, {"i2t": 0.1, "t2i": 0.5}, 0.40),
        _mt_run(tmp_path / "fr1", "fr", 1.0, {"i2t": 0.3, "t2i": 0.1}, 0.10, 21.5),
        _mt_run(tmp_path / "fr10", "fr", 10.0, {"i2t": 0.1, "t2i": 0.5}, 0.20, 21.5),
        _mt_run(tmp_path / "de1", "de", 1.0, {"i2t": 0.3, "t2i": 0.1}, 0.05, 17.0),
    ]
    paper = PAPER_TABLES if PAPER_TABLES.is_dir() else None
    frame = table5(runs, paper, tmp_path / "out/t5")
    cell = frame.set_index(["system", "language", "direction", "metric"])
    # lambda per direction as for the En-Image CorrNet: i2t from lambda 1, t2i from lambda 10
    assert cell.loc[(MT_LABEL, "fr", "i2t", "R@5"), "ours"] == pytest.approx(0.105)
    assert cell.loc[(MT_LABEL, "fr", "t2i", "R@5"), "ours"] == pytest.approx(0.205)
    assert cell.loc[(MT_LABEL, "de", "t2i", "R@50"), "ours"] == pytest.approx(0.10)
    assert "CorrNet+MT" not in set(frame["system"])  # the paper's rows renamed onto ours
    markdown = (tmp_path / "out/t5.md").read_text()
    assert MT_LABEL in markdown
    assert "Moses (Section 6, footnote 4)" in markdown
    assert "project's attention NMT" in markdown and "beam search (12)" in markdown
    assert "trained De->En and Fr->En on the sentence pairs of the Z2 train talks" in markdown
    assert "English MIC captions: de 17.0; fr 21.5" in markdown
    assert "paper names no" not in markdown and "not regenerated" not in markdown
    if paper is None:
        pytest.skip("no paper tables here: the paper column is not checked")
    assert cell.loc[(MT_LABEL, "fr", "i2t", "R@5"), "paper"] == pytest.approx(0.101)
    assert cell.loc[(MT_LABEL, "de", "i2t", "R@50"), "paper"] == pytest.approx(0.420)


def test_table5_corrnet_mt_note_without_mt_runs(tmp_path):
    run = fake_run(tmp_path / "d", "direct", None, 1.0, {"i2t": 0.3, "t2i": 0.3}, 0.3)
    table5([run], None, tmp_path / "t5")
    markdown = (tmp_path / "t5.md").read_text()
    assert "Moses (Section 6, footnote 4)" in markdown
    assert "Not run here (no CorrNet + MT runs given)" in markdown
