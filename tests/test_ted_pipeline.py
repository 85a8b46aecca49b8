"""The whole TED stage, command by command, on a tiny demo corpus."""

import json
import shutil
from pathlib import Path

import pandas as pd
import pytest

from mlmm.cli import main
from mlmm.origin import Origin
from mlmm.outcomes import decision_metrics, decisions_path, read_decisions, verified_outcomes
from mlmm.records import write_record
from mlmm.ted import LANGUAGES, TOPICS

ORIGIN_COLUMNS = list(Origin().columns())  # data, configs, backbone, code

PAPER_TABLES = Path(__file__).resolve().parents[1] / "resources" / "paper_tables"


def run(*args) -> None:
    assert main([str(a) for a in args]) == 0


def test_demo_is_deterministic_and_has_the_layout(tmp_path):
    for name in ("a", "b"):
        run("demo-ted", tmp_path / name, "--train-docs", 12, "--test-docs", 6)
    pairs = sorted(p.name for p in (tmp_path / "a").iterdir() if p.is_dir())
    assert len(pairs) == 2 * len(LANGUAGES) and "pb-en" in pairs and "en-pb" in pairs
    talk = sorted((tmp_path / "a/de-en/train/art").glob("*/*.ted"))[0]
    copy = tmp_path / "b" / talk.relative_to(tmp_path / "a")
    assert talk.read_bytes() == copy.read_bytes()
    for topic in TOPICS:  # every talk under every topic, positive or negative
        assert len(list((tmp_path / "a/de-en/train" / topic).glob("*/*.ted"))) == 12
    talk.unlink()  # an edited demo (or a user's directory) is not replaced without --force
    talk.write_text("edited_de\n", encoding="utf-8")
    assert main(["demo-ted", str(tmp_path / "a"), "--train-docs", "12", "--test-docs", "6"]) == 2
    assert talk.read_text(encoding="utf-8") == "edited_de\n"


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
    records = tmp_path / "records"
    bow_record = write_record(records / "bow.json", {"languages": languages})
    run("ted-bow", "--config", bow_record, "--index", corpus / "index.json", "--out-dir", bow)
    train = write_record(records / "train.json", {"hidden": 8, "epochs": 2})
    runs = [tmp_path / "lambda1", tmp_path / "lambda10"]
    for lam, out in zip((1, 10), runs, strict=True):
        run("ted-train", "--config", train, "--bow", bow, "--out-dir", out, "--lambda", lam)
    defaults = write_record(records / "defaults.json", {})  # every setting the schema's
    tuning = tmp_path / "lambda.json"
    run("ted-tune", "--config", defaults, "--bow", bow, "--runs", *runs, "--out", tuning)
    chosen = json.loads(tuning.read_text())["chosen"]
    sources = ["en", *languages]  # English -> X as well as X -> Y
    assert set(chosen) == set(sources) and {c["lambda"] for c in chosen.values()} <= {1.0, 10.0}
    cldc = [tmp_path / f"cldc/{source}.json" for source in sources]
    for source, out in zip(sources, cldc, strict=True):
        run("ted-classify", "--config", defaults, "--bow", bow, "--tuning", tuning,
            "--source", source, "--out", out)  # fmt: skip
        result = json.loads(out.read_text())
        f1 = result["f1"]
        assert set(f1) == set(sources) and all(0 <= v <= 1 for v in f1.values())
        for target, per_topic in result["topic_f1"].items():  # undefined: named, not 0
            undefined = [t for t, v in zip(result["topics"], per_topic, strict=True) if v is None]
            assert result["left_out_topics"][target] == undefined
    run("ted-nb", "--bow", bow, "--out", tmp_path / "nb.json")
    # the per-document decisions kept beside each result give its F1 exactly (mlmm.outcomes)
    for out in [*cldc, tmp_path / "nb.json"]:
        decisions = read_decisions(decisions_path(out))
        assert decision_metrics(decisions) == json.loads(out.read_text())["f1"]
        assert verified_outcomes(out, "documents").keys() == decisions.keys()  # as read
    assert len(read_decisions(decisions_path(cldc[0]))["en"]) == 3  # one test set per pair
    tables = tmp_path / "tables"
    paper = ["--paper-tables", PAPER_TABLES] if PAPER_TABLES.is_dir() else []
    run("ted-tables", "--cldc", *cldc, "--nb", tmp_path / "nb.json", *paper, "--out-dir", tables)
    table1 = pd.read_csv(tables / "rajendran2016_table1.csv", keep_default_na=False)
    ours = table1[table1["ours"] != ""]
    assert len(ours) == 12  # 4 x 3 cross-lingual pairs, English included
    row = ours[(ours["language"] == "de") & (ours["variant_note"] == "test=fr")].iloc[0]
    assert row["direction"] == "cldc" and row["metric"] == "F1"
    # 10 test talks per pair leave some topics without a positive one: named in the note
    left_out = json.loads(cldc[1].read_text())["left_out_topics"]["fr"]
    assert left_out and f"de -> fr: {', '.join(left_out)}" in (
        tables / "rajendran2016_table1.md"
    ).read_text()
    # every cell of Table 1 has a test set of its own: a bootstrap interval around it
    assert (ours["ours_low"].astype(float) <= ours["ours"].astype(float)).all()
    assert (ours["ours"].astype(float) <= ours["ours_high"].astype(float)).all()
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
    # --paper-tables alone: none (without it, the tables the package ships)
    neighbours = write_record(records / "neighbours.json", {"table4_words": words})
    run("ted-neighbours", "--config", neighbours, "--bow", bow, "--tuning", tuning,
        "--paper-tables", "--out-dir", tables)  # fmt: skip
    table4 = pd.read_csv(tables / "rajendran2016_table4.csv", keep_default_na=False)
    # the origin columns every tidy CSV ends with (mlmm.origin): data, configs, backbone, code
    assert list(table4.columns) == ["english", "rank", *languages, *ORIGIN_COLUMNS]
    assert (table4.loc[table4["english"] == "market", "de"] != "").all()
    if not PAPER_TABLES.is_dir():
        return
    args = ["--config", neighbours, "--paper-tables", PAPER_TABLES, "--demo", "--out-dir", tables]
    run("ted-neighbours", "--bow", bow, "--tuning", tuning, *args)
    table4 = pd.read_csv(tables / "rajendran2016_table4.csv", keep_default_na=False, dtype=str)
    with_paper = [lang for lang in languages if lang not in ("de", "ar")]  # the paper's 9
    want = ["english", "rank"]
    for lang in languages:
        want += [lang, f"{lang}_paper"] if lang in with_paper else [lang]
    assert list(table4.columns) == [*want, *ORIGIN_COLUMNS]
    market = table4[table4["english"] == "market"]
    assert market["rank"].tolist() == ["1", "2", "3", "4", "overlap"]
    assert market["fr_paper"].tolist()[:4] == ["marché", "market", "boursier", "marketer"]
    ours = market["fr"].tolist()[:4]
    hits = len(set(ours) & {"marché", "market", "boursier", "marketer"})
    assert market["fr"].tolist()[4] == f"{hits}/4" and market["de"].tolist()[4] == ""
    notes = (tables / "rajendran2016_table4.md").read_text()
    assert "Demo corpus" in notes and "|ours ∩ paper|" in notes


def test_table4_paper_neighbours_and_overlap_by_hand():
    from mlmm.results.ted_tables import overlap, paper_neighbours

    paper = paper_neighbours(PAPER_TABLES)
    if not paper:
        pytest.skip("no paper tables here")
    assert len(paper) == 4 * 9 and all(len(words) == 4 for words in paper.values())
    assert paper["market", "es"] == ["mercado", "market", "place", "comercializan"]
    assert paper["oil", "pt-br"] == ["petróleo", "óleo", "azeite", "derramamento"]  # column 5
    assert paper["home", "pl"] == ["domu", "dom", "domem", "domach"]  # column 6
    assert paper["history", "ru"][0] == "истории"
    assert overlap(["maison", "foyer", "x", "y"], paper["home", "fr"]) == "2/4"
    assert overlap(["", "", "", ""], paper["home", "fr"]) == ""  # word not in our vocabulary
    assert overlap(["a"], []) == ""
    assert paper_neighbours(None) == {} and paper_neighbours(Path("/nonexistent")) == {}


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
    record = write_record(tmp_path / "bow.json", {"languages": ["fr"]})
    args = ["ted-bow", "--index", tmp_path / "out/index.json", "--out-dir", tmp_path / "bow"]
    assert main([str(a) for a in [*args, "--config", record]]) == 2
    assert str(broken) in capsys.readouterr().err


def one_pair_corpus(root: Path) -> Path:
    """A one-pair (en-de) corpus of 14 topics, untokenised (no `_de` suffix), with markup lines."""
    run("demo-ted", root, "--train-docs", 40, "--test-docs", 16, "--languages", "de")
    for side in ("de-en", "en-de"):
        for split in ("train", "test"):
            shutil.rmtree(root / side / split / "global")
    for path in sorted((root / "de-en/train/art").glob("*/*.ted")):
        text = path.read_text(encoding="utf-8").replace("_de ", " ").replace("_de\n", "\n")
        path.write_text(f"<title>talk</title>\n{text}", encoding="utf-8")  # all links
    return root


def test_one_pair_of_fourteen_topics_as_it_comes(tmp_path):
    """The classic English-German CLDC setting on a corpus unlike the paper's: both directions,
    topics from the corpus, suffixed and plain tokens alike, markup lines skipped."""
    root = one_pair_corpus(tmp_path / "ted-cldc")
    common = ["--languages", "de"]
    corpus, bow = tmp_path / "corpus", tmp_path / "bow"
    run("ted-fetch", "--source", "path", "--path", root, "--out-dir", corpus, *common)
    records = tmp_path / "records"
    bow_record = write_record(records / "bow.json", {"languages": ["de"], "min_count": 2})
    run("ted-bow", "--config", bow_record, "--index", corpus / "index.json", "--out-dir", bow)
    meta = json.loads((bow / "meta.json").read_text())
    assert meta["topics"] == sorted(set(TOPICS) - {"global"})
    words = (bow / "vocab.de.txt").read_text(encoding="utf-8")
    assert "_de\t" not in words and "<title>talk</title>" not in words
    train = write_record(records / "train.json", {"hidden": 8, "epochs": 2})
    run("ted-train", "--config", train, "--bow", bow, "--out-dir", tmp_path / "run",
        "--lambda", 1)  # fmt: skip
    defaults = write_record(records / "defaults.json", {})
    tuning = tmp_path / "lambda.json"
    run("ted-tune", "--config", defaults, "--bow", bow, "--runs", tmp_path / "run", "--out", tuning)
    cldc = [tmp_path / f"cldc/{source}.json" for source in ("en", "de")]
    for source, out in zip(("en", "de"), cldc, strict=True):
        run("ted-classify", "--config", defaults, "--bow", bow, "--tuning", tuning,
            "--source", source, "--out", out)  # fmt: skip
    run("ted-nb", "--bow", bow, "--out", tmp_path / "nb.json")
    # the per-document decisions kept beside each result give its F1 exactly (mlmm.outcomes)
    for out in [*cldc, tmp_path / "nb.json"]:
        decisions = read_decisions(decisions_path(out))
        assert decision_metrics(decisions) == json.loads(out.read_text())["f1"]
        assert verified_outcomes(out, "documents").keys() == decisions.keys()  # as read
    assert len(read_decisions(decisions_path(cldc[0]))["en"]) == 1  # one test set per pair: de
    tables = tmp_path / "tables"
    run("ted-tables", "--cldc", *cldc, "--nb", tmp_path / "nb.json", "--out-dir", tables)
    table1 = pd.read_csv(tables / "rajendran2016_table1.csv", keep_default_na=False)
    cells = set(zip(table1["language"], table1["variant_note"], strict=True))
    assert cells == {("en", "test=de"), ("de", "test=en")}
    assert all(0 <= float(v) <= 1 for v in table1["ours"])
    table3 = pd.read_csv(tables / "rajendran2016_table3.csv", keep_default_na=False)
    assert set(table3["language"]) == {"en", "de"}


def test_topics_listed_are_read_and_a_missing_one_is_named(tmp_path, capsys):
    root = one_pair_corpus(tmp_path / "ted-cldc")
    corpus = tmp_path / "corpus"
    run("ted-fetch", "--source", "path", "--path", root, "--out-dir", corpus, "--languages", "de")
    args = ["ted-bow", "--index", corpus / "index.json"]
    settings = {"languages": ["de"], "min_count": 2}
    listed = write_record(tmp_path / "art.json", settings | {"topics": ["art", "science"]})
    run(*args, "--config", listed, "--out-dir", tmp_path / "bow")
    assert json.loads((tmp_path / "bow/meta.json").read_text())["topics"] == ["art", "science"]
    capsys.readouterr()
    missing = write_record(tmp_path / "global.json", settings | {"topics": ["global"]})
    assert main([str(a) for a in [*args, "--config", missing, "--out-dir", tmp_path / "b2"]]) == 2
    assert str(root / "de-en/train/global") in capsys.readouterr().err
    assert not (tmp_path / "b2").exists()


@pytest.mark.slow
def test_workflow_on_one_pair_of_fourteen_topics(tmp_path):
    """The TED rules of the workflow on the same corpus as it comes (source: path)."""
    import yaml
    from helpers.workflow import LOCAL_RUN, copy_workflow, run_snakemake

    root = one_pair_corpus(tmp_path / "ted-cldc")
    workdir = copy_workflow(tmp_path / "workflow")
    config = {"ted": {"source": "path", "path": str(root), "languages": ["de"], "min_count": 2,
                      "hidden": 8, "epochs": 3, "lambdas": [1, 10], "table4_words": ["market"]}}
    (workdir / "one_pair.yaml").write_text(yaml.safe_dump(config))
    targets = [f"results/tables/rajendran2016_table{n}.csv" for n in (1, 3, 4)]
    targets.append("results/figures/rajendran2016_table1_heatmap.png")
    proc = run_snakemake(workdir, *targets, *LOCAL_RUN, "--configfile", "one_pair.yaml")
    assert proc.returncode == 0, proc.stdout[-4000:]
    table1 = pd.read_csv(workdir / targets[0], keep_default_na=False)
    assert set(zip(table1["language"], table1["variant_note"], strict=True)) == {
        ("en", "test=de"), ("de", "test=en")
    }
    assert set(pd.read_csv(workdir / targets[1])["language"]) >= {"en", "de"}
    assert not (root.parent / "workflow/results/ted/corpus/ted-cldc").exists()  # used in place
