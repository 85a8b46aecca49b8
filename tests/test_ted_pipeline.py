"""The whole TED stage, command by command, on a tiny demo corpus."""

import json
from pathlib import Path

import pandas as pd
import pytest

from mlmm.cli import main
from mlmm.ted import LANGUAGES, TOPICS

PAPER_TABLES = Path(__file__).resolve().parents[1] / "resources" / "paper_tables"


def run(*args) -> None:
    assert main([str(a) for a in args]) == 0


def test_demo_is_deterministic_and_has_the_layout(tmp_path):
    for name in ("a", "b"):
        run("demo-ted", tmp_path / name, "--train-docs", 12, "--test-docs", 6)
    pairs = sorted(p.name for p in (tmp_path / "a").iterdir())
    assert len(pairs) == 2 * len(LANGUAGES) and "pb-en" in pairs and "en-pb" in pairs
    talk = sorted((tmp_path / "a/de-en/train/art").glob("*/*.ted"))[0]
    copy = tmp_path / "b" / talk.relative_to(tmp_path / "a")
    assert talk.read_bytes() == copy.read_bytes()
    for topic in TOPICS:  # every talk under every topic, positive or negative
        assert len(list((tmp_path / "a/de-en/train" / topic).glob("*/*.ted"))) == 12


def test_pipeline_on_tiny_demo(tmp_path):
    languages = ["de", "fr", "ru"]
    common = ["--languages", *languages, "--corpus-codes", "pt-br=pb"]
    corpus, bow = tmp_path / "corpus", tmp_path / "bow"
    run(
        "ted-fetch",
        "--source",
        "demo",
        "--out-dir",
        corpus,
        "--train-docs",
        24,
        "--test-docs",
        10,
        *common,
    )
    run("ted-bow", "--index", corpus / "index.json", "--out-dir", bow, *common)
    runs = [tmp_path / "lambda1", tmp_path / "lambda10"]
    for lam, out in zip((1, 10), runs, strict=True):
        run(
            "ted-train",
            "--bow",
            bow,
            "--out-dir",
            out,
            "--lambda",
            lam,
            "--hidden",
            8,
            "--epochs",
            2,
        )
    tuning = tmp_path / "lambda.json"
    run("ted-tune", "--bow", bow, "--runs", *runs, "--out", tuning)
    chosen = json.loads(tuning.read_text())["chosen"]
    assert set(chosen) == set(languages) and {c["lambda"] for c in chosen.values()} <= {1.0, 10.0}
    cldc = [tmp_path / f"cldc/{source}.json" for source in languages]
    for source, out in zip(languages, cldc, strict=True):
        run("ted-classify", "--bow", bow, "--tuning", tuning, "--source", source, "--out", out)
        f1 = json.loads(out.read_text())["f1"]
        assert set(f1) == set(languages) and all(0 <= v <= 1 for v in f1.values())
    run("ted-nb", "--bow", bow, "--out", tmp_path / "nb.json")
    tables = tmp_path / "tables"
    paper = ["--paper-tables", PAPER_TABLES] if PAPER_TABLES.is_dir() else []
    run("ted-tables", "--cldc", *cldc, "--nb", tmp_path / "nb.json", *paper, "--out-dir", tables)
    table1 = pd.read_csv(tables / "rajendran2016_table1.csv", keep_default_na=False)
    ours = table1[table1["ours"] != ""]
    assert len(ours) == 6  # 3 x 2 cross-lingual pairs
    row = ours[(ours["language"] == "de") & (ours["variant_note"] == "test=fr")].iloc[0]
    assert row["direction"] == "cldc" and row["metric"] == "F1"
    if paper:
        assert float(row["paper"]) == pytest.approx(0.505)
        assert float(row["doc_add"]) == pytest.approx(0.46)
    table3 = pd.read_csv(tables / "rajendran2016_table3.csv", keep_default_na=False)
    assert {"Bridge CorrNet", "Raw Data NB [Hermann & Blunsom, 2014b]"} <= set(table3["system"])
    figure = tmp_path / "figures/heatmap"
    run("ted-heatmap", "--table", tables / "rajendran2016_table1.csv", "--out", figure)
    assert figure.with_suffix(".png").stat().st_size > 0
    assert figure.with_suffix(".pdf").stat().st_size > 0
    words = ["market", "nonexistentword"]
    run("ted-neighbours", "--bow", bow, "--tuning", tuning, "--words", *words, "--out-dir", tables)
    table4 = pd.read_csv(tables / "rajendran2016_table4.csv", keep_default_na=False)
    assert list(table4.columns) == ["english", "rank", *languages]
    assert (table4.loc[table4["english"] == "market", "de"] != "").all()


def test_malformed_corpus_is_one_line_error(tmp_path, capsys):
    run("demo-ted", tmp_path / "c", "--train-docs", 10, "--test-docs", 5, "--languages", "fr")
    broken = sorted((tmp_path / "c/fr-en/test/art").glob("*/*.ted"))[0]
    broken.unlink()  # a hard link: the talk's copies under the other topics stay intact
    broken.write_bytes(b"\xc3\x28 bad_fr\n")
    # fetch only checks the layout; reading the talks finds the bad file
    run(
        "ted-fetch",
        "--source",
        "path",
        "--path",
        tmp_path / "c",
        "--out-dir",
        tmp_path / "out",
        "--languages",
        "fr",
    )
    args = ["ted-bow", "--index", tmp_path / "out/index.json", "--out-dir", tmp_path / "bow"]
    assert main([str(a) for a in [*args, "--languages", "fr"]]) == 2
    assert str(broken) in capsys.readouterr().err
