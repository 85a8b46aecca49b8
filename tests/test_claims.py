"""Claims registries and verdicts (mlmm.results.claims) on runs with planted effects, the
intervals on the retrieval tables' cells, and every shipped registry naming cells of the
paper's tables."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd
import pytest
import yaml

from mlmm.catalogue import CLAIM_PAPERS, TABLE_SUFFIXES
from mlmm.errors import InputError
from mlmm.outcomes import run_metrics, write_result
from mlmm.provenance import provenance
from mlmm.results import claims as c
from mlmm.results.intervals import Run, add_intervals
from mlmm.results.nmt_table import nmt_runs
from mlmm.results.pivot_table import pivot_runs
from mlmm.results.ted_tables import ted_runs

REPO = Path(__file__).resolve().parents[1]
PAPER_TABLES = REPO / "resources" / "paper_tables"
NOTE = "this paper (cosine similarity, max-of-hinges loss, ResNet50 features)"
N = 400


def _write_run(out: Path, system: str, seed: int, outcomes: dict) -> dict:
    """A retrieval run's metrics.json and queries.npz as train_variant writes them
    (``mlmm.outcomes.write_result``: its numbers from its outcomes)."""
    metrics = {
        "variant": system,
        "seed": seed,
        "provenance": provenance({"retrieval": {"name": system}}, seed, data=("multi30k",)),
        **run_metrics({"c2c": {}, "sts": {}, **outcomes}),
    }
    write_result(out / "metrics.json", metrics, "queries", outcomes)
    return metrics


def _run(tmp_path: Path, system: str, seed: int, ranks: np.ndarray, table: int = 2) -> Run:
    """A run mapped onto a Kádár row, its queries.npz holding ``ranks`` for en i2t."""
    out = tmp_path / f"{system.replace(' ', '_')}/seed{seed}"
    out.mkdir(parents=True)
    outcomes = {"folds": 1, "images": len(ranks), "test": {"en": {"i2t": ranks}}}
    metrics = _write_run(out, system, seed, outcomes)
    row = {"paper": "kadar2018", "table": table, "system": system, "variant_note": NOTE,
           "languages": ["en"]}  # fmt: skip
    return Run(system, seed, metrics, [row], [], out / "metrics.json")


def _claim(claim_id: str, better: str, than: str) -> dict:
    return {
        "id": claim_id, "finding": "x", "quote": "y", "section": "5.1, Table 2", "table": 2,
        "language": "en", "direction": "i2t", "metric": "R@10",
        "better": {"system": better, "variant_note": NOTE},
        "than": {"system": than, "variant_note": NOTE},
    }  # fmt: skip


@pytest.fixture
def planted(tmp_path):
    rng = np.random.default_rng(0)
    base = rng.integers(0, 60, size=N)
    strong = np.where(rng.random(N) < 0.4, 0, base)  # 40 % of queries moved to rank 0
    runs = [_run(tmp_path, "Monolingual", s, rng.permutation(base)) for s in (1, 2)]
    runs += [_run(tmp_path, "Bilingual", s, strong) for s in (1, 2)]
    runs += [_run(tmp_path, "Bilingual + c2c", 1, rng.permutation(base))]
    registry = tmp_path / "kadar2018.yaml"
    entries = [
        _claim("planted", "Bilingual", "Monolingual"),
        _claim("against", "Monolingual", "Bilingual"),
        _claim("null", "Bilingual + c2c", "Monolingual"),
        _claim("absent", "Pivot-Sym", "Monolingual"),
        _claim("german", "Bilingual", "Monolingual") | {"language": "de"},
    ]
    registry.write_text(yaml.safe_dump({"paper": "kadar2018", "claims": entries}))
    return runs, registry


def test_verdicts_of_planted_effects(planted):
    runs, registry = planted
    paper, claims, min_seeds = c.load_claims(registry)
    assert min_seeds == c.MIN_SEEDS
    frame = c.evaluate_claims(runs, paper, claims, None)
    assert list(frame.columns[:3]) == ["verdict", "compares", "claim"]
    frame = frame.set_index("claim")
    # the paper's table is not given: the claim's direction is `better` over `than`
    assert frame.loc["planted", "verdict"] == "reproduced"
    assert frame.loc["planted", "effect_low"] > 0
    assert frame.loc["against", "verdict"] == "reversed"
    assert frame.loc["null", "verdict"] == "inconclusive"
    assert frame.loc["absent", "verdict"] == "not run"
    assert "Pivot-Sym" in frame.loc["absent", "reason"]
    assert np.isnan(frame.loc["absent", "p_holm"])
    # the rows run, but only in English: the reason says so, not "kept no outcomes"
    assert frame.loc["german", "reason"].endswith("are configured for en, not de")
    assert frame.loc["planted", "seeds"] == "2 / 2"
    # two seeds a row are fewer than the documented minimum: trained models, not methods
    assert frame.loc["planted", "compares"].startswith("trained models (2 seeds")
    assert frame.loc["planted", "better"] == f"Bilingual [{NOTE}]"
    # Holm over the three that ran: never below the raw p; the interval at the claim's level
    ran = frame.dropna(subset=["p"])
    assert (ran.p_holm >= ran.p).all()
    assert ((ran.level >= 0.95) & (ran.level < 1)).all()
    assert (ran.mde > 0).all()


def test_paper_effect_comes_from_the_paper_table(planted):
    runs, registry = planted
    paper, claims, _ = c.load_claims(registry)
    frame = c.evaluate_claims(runs, paper, claims[:1], PAPER_TABLES)
    assert frame.paper_effect.iloc[0] == pytest.approx(80.1 - 79.8)  # Table 2, en i2t R@10


def test_claims_files_are_written(planted, tmp_path):
    runs, registry = planted
    paths = c.write_claims(runs, registry, None, tmp_path / "t", tmp_path / "f")
    names = sorted(p.name for p in paths)
    suffixes = [*TABLE_SUFFIXES, ".png", ".pdf"]  # every file of a table, then the figure
    assert names == sorted(f"kadar2018_claims{suffix}" for suffix in suffixes)
    table = pd.read_csv(tmp_path / "t" / "kadar2018_claims.csv")
    assert set(table.verdict) == {"reproduced", "reversed", "inconclusive", "not run"}
    text = (tmp_path / "t" / "kadar2018_claims.md").read_text()
    assert "Berg-Kirkpatrick" in text and "Koehn" not in text


def test_table_cells_get_intervals_and_within_noise(planted):
    runs, _ = planted
    frame = pd.DataFrame(
        {
            "system": ["Bilingual", "Pivot-Sym"], "variant_note": [NOTE, NOTE],
            "language": ["en", "en"], "direction": ["i2t", "i2t"], "metric": ["R@10", "R@10"],
            "paper": [80.1, 73.8], "ours": [np.nan, np.nan],
        }
    )  # fmt: skip
    stats = np.mean([r.path.with_name("queries.npz").stat().st_size for r in runs]) > 0
    assert stats
    strong = np.load(runs[2].path.with_name("queries.npz"))["test/en/i2t"]
    frame.loc[0, "ours"] = 100.0 * np.mean(strong < 10)
    out = add_intervals(frame, runs, "kadar2018", 2)
    assert out.ours_low[0] <= out.ours[0] <= out.ours_high[0]
    assert out.within_noise[0] == (out.ours_low[0] <= 80.1 <= out.ours_high[0])
    assert np.isnan(out.ours_low[1]) and out.within_noise[1] is None


@pytest.mark.parametrize(
    "change, message",
    [
        ({"id": "a", "finding": "x"}, r"claims\[1\] \(a\).*no \["),
        ({"metric": "accuracy"}, r"metric'.*accuracy"),
        ({"metric": ["R@1", "medr"]}, r"same better direction"),
        ({"than": {"system": "A", "variant_note": NOTE}}, r"two different rows"),
        ({"quote": ""}, r"quote'.*non-empty"),
        ({"test": "non-inferiority"}, r"margin'.*positive margin"),
        ({"margin": 1.0}, r"no margin on a superiority claim"),
        ({"table": "two"}, r"table'.*table number"),
        ({"colour": 1}, r"unknown \['colour'\]"),
        ({"cells": [{"language": "en"}]}, r"either 'cells' or"),
        ({"published_than": 2}, r"published_than'.*another table"),
        ({"published_than": "two"}, r"published_than'.*another table"),
    ],
)
def test_bad_registry_names_the_file_claim_and_key(tmp_path, change, message):
    path = tmp_path / "x.yaml"
    entry = _claim("a", "A", "B") | change
    if "cells" in change:
        entry = {k: v for k, v in entry.items() if k not in ("direction",)}
    if list(change) == ["id", "finding"]:
        entry = change
    path.write_text(yaml.safe_dump({"paper": "x", "claims": [entry]}))
    with pytest.raises(InputError, match=message) as info:
        c.load_claims(path)
    assert str(path) in str(info.value)


def test_empty_registry_and_missing_cells_are_refused(tmp_path):
    path = tmp_path / "kadar2018.yaml"
    path.write_text(yaml.safe_dump({"paper": "kadar2018", "claims": []}))
    with pytest.raises(InputError, match="at least one claim"):
        c.load_claims(path)
    absent = _claim("a", "Bilingual", "Monolingual") | {"language": "fr"}
    path.write_text(yaml.safe_dump({"paper": "kadar2018", "claims": [absent]}))
    with pytest.raises(InputError, match=r"claims \(a\).*0 cells"):
        c.load_claims(path, PAPER_TABLES)
    wrong_way = _claim("b", "Monolingual", "Bilingual")  # the paper's table says otherwise
    path.write_text(yaml.safe_dump({"paper": "kadar2018", "claims": [wrong_way]}))
    with pytest.raises(InputError, match="claim's direction"):
        c.load_claims(path, PAPER_TABLES)


@pytest.mark.parametrize("paper", CLAIM_PAPERS)
def test_every_shipped_claim_names_cells_of_the_paper_table(paper):
    """Each claim's rows exist in the paper's table on every cell, the paper's effect has the
    claim's direction (or meets a parity claim's margin), and every claim quotes the paper."""
    name, claims, min_seeds = c.load_claims(
        REPO / "resources" / "claims" / f"{paper}.yaml", PAPER_TABLES
    )
    assert name == paper and claims and min_seeds >= 5
    figure_rows = _figure_rows(paper)
    for claim in claims:
        assert len(claim.quote) > 20 and claim.section, claim.id
        if claim.figure:  # no paper numbers: its rows are the configured rows of that figure
            assert {claim.better, claim.than} <= figure_rows[claim.figure], claim.id
            assert np.isnan(c.paper_effect(PAPER_TABLES, paper, claim)), claim.id
            continue
        if np.isfinite(c.paper_effect(PAPER_TABLES, paper, claim)):
            continue
        # no paper effect on a table: only where the table leaves every cell of it empty
        frame = pd.read_csv(PAPER_TABLES / f"{paper}_table{claim.table}.csv")
        for cell, metric in claim.parts():
            for side in (0, 1):
                hit = c.paper_cell(frame, paper, claim, side, cell, metric)
                assert np.isnan(hit["value"]), (claim.id, side, cell)
                assert str(hit["source_note"]).startswith("ambiguous"), claim.id


def _figure_rows(paper: str) -> dict[int, set[tuple[str, str]]]:
    """(system, variant_note) of every configured row of each of the paper's figures."""
    variants = yaml.safe_load((REPO / "config" / "paper.yaml").read_text())["retrieval"]["variants"]
    rows: dict[int, set[tuple[str, str]]] = {}
    for record in variants.values():
        for row in (record or {}).get("paper_rows") or []:
            if row["paper"] == paper and "figure" in row:
                note = row.get("variant_note") or ""
                rows.setdefault(row["figure"], set()).add((row["system"], note))
    return rows


def test_nmt_systems_give_table3_intervals_and_claims(tmp_path):
    """mt-score outputs (metrics.json with sentences.npz beside) become Calixto Table 3 rows:
    their BLEU cells get intervals, and a planted BLEU gain holds as a claim."""

    from mlmm.cli import main

    rng = np.random.default_rng(3)
    refs = [" ".join(rng.choice(list("abcdefghij"), size=12)) for _ in range(200)]
    outputs = {
        ("NMT baseline (attention NMT, Bahdanau et al., 2015)", "no re-ranking (1-best)"): 0.5,
        ("NMT + MLMME re-ranking", "beta=0.25"): 0.8,
    }
    paths = []
    for number, ((system, note), keep) in enumerate(outputs.items()):
        hyps = [" ".join(w if rng.random() < keep else "z" for w in r.split()) for r in refs]
        out = tmp_path / f"s{number}"
        out.mkdir()
        (out / "hyp").write_text("\n".join(hyps) + "\n")
        (out / "ref").write_text("\n".join(refs) + "\n")
        argv = ["mt-score", "--hyp", out / "hyp", "--ref", out / "ref", "--system", system,
                "--variant-note", note, "--out", out / "metrics.json"]  # fmt: skip
        assert main([str(a) for a in argv]) == 0
        paths.append(out / "metrics.json")
    runs = nmt_runs(paths)
    system, note = next(iter(outputs))
    frame = pd.DataFrame(
        [{"system": system, "variant_note": note, "language": "en-de", "direction": "mt",
          "metric": metric, "paper": np.nan, "ours": runs[0].metrics["scores"][metric]}
         for metric in ("BLEU", "TER", "chrF")]
    )  # fmt: skip
    out = add_intervals(frame, runs, "calixto2017", 3)
    assert (out.ours_low < out.ours).all() and (out.ours < out.ours_high).all()
    registry = REPO / "resources" / "claims" / "calixto2017.yaml"
    paper, claims, _ = c.load_claims(registry)
    frame = c.evaluate_claims(runs, paper, claims, PAPER_TABLES).set_index("claim")
    verdicts = frame.verdict
    # a planted gain of far more than the paper's 4.5 BLEU; TER (lower is better) improves too
    assert verdicts["mlmme_reranking_improves_bleu"] == "larger than reported"
    assert verdicts["mlmme_reranking_improves_ter"] in ("reproduced", "larger than reported")
    assert frame.loc["mlmme_reranking_improves_ter", "our_effect"] > 0
    assert verdicts["vse_reranking_improves_bleu"] == "not run"


def test_cells_show_their_interval_and_mark(tmp_path):
    from mlmm.tables import write_table

    frame = pd.DataFrame(
        {
            "system": ["A", "B"], "variant_note": ["", ""], "language": ["en", "en"],
            "direction": ["i2t", "i2t"], "metric": ["R@10", "R@10"], "paper": [50.0, 70.0],
            "ours": [51.0, 60.0], "ours_std": [0.0, 0.0], "runs": [1.0, 1.0],
            "diff": [1.0, -10.0], "ours_low": [48.0, 57.5], "ours_high": [54.0, 62.5],
            "within_noise": [True, False],
        }
    )  # fmt: skip
    write_table(frame, tmp_path / "kadar2018_table2", "T", [])
    markdown = (tmp_path / "kadar2018_table2.md").read_text()
    assert "51.0 (50.0, +1.0) [48.0, 54.0] ≈" in markdown  # Kádár: one decimal
    assert "60.0 (70.0, −10.0) [57.5, 62.5] ≠" in markdown
    latex = (tmp_path / "kadar2018_table2.intervals.tex").read_text()  # the companion table
    assert r"$\approx$" in latex and r"$\neq$" in latex
    assert pd.read_csv(tmp_path / "kadar2018_table2.csv").within_noise.tolist() == [True, False]


# ----------------------------------------------------------------------------------------
# Rajendran et al. 2016: TED decisions (Tables 1, 3) and pivot test ranks (Table 5)

RAJENDRAN = REPO / "resources" / "claims" / "rajendran2016.yaml"


def _ted_result(path: Path, source: str | None, decisions: dict) -> Path:
    """A ted-classify (source given) or ted-nb result with its decisions beside it."""
    from mlmm.outcomes import decision_metrics

    sets = {t: {t: {"predicted": p, "gold": g}} for t, (p, g) in decisions.items()}
    record = {"provenance": provenance({"source": source}, data=("ted",)),
              "f1": decision_metrics(sets)}  # fmt: skip
    record |= {"source": source} if source else {}
    path.parent.mkdir(parents=True, exist_ok=True)
    write_result(path, record, "documents", {t: {t: d} for t, d in decisions.items()})
    return path


def test_ted_decisions_give_table3_intervals_and_claims(tmp_path):
    """Bridge CorrNet (es) planted better than NB on the same test talks: the claim holds,
    Table 3's cells get an interval from the documents, the other languages are not run."""
    from mlmm import uncertainty
    from mlmm.results.ted_tables import NB_SYSTEM, mono_note
    from mlmm.ted.classify import topic_f1

    rng = np.random.default_rng(5)
    gold = rng.random((300, 15)) < 0.1
    good = np.where(rng.random(gold.shape) < 0.9, gold, ~gold)
    poor = np.where(rng.random(gold.shape) < 0.7, gold, ~gold)
    # the macro F1 statistic of the bootstrap is the classifier's F1 (ted.classify.topic_f1)
    stacked = np.stack([good, gold], axis=-1)[None]
    assert uncertainty.macro_f1_statistic(stacked)[0] == topic_f1(gold, good).mean()
    cldc = _ted_result(tmp_path / "cldc/es.json", "es", {"es": (good, gold), "de": (poor, gold)})
    nb = _ted_result(tmp_path / "nb.json", None, {"es": (poor, gold)})
    runs = ted_runs([cldc], nb)
    paper, claims, _ = c.load_claims(RAJENDRAN)
    frame = c.evaluate_claims(runs, paper, claims, PAPER_TABLES).set_index("claim")
    assert frame.loc["bridge_beats_nb_es", "verdict"] == "larger than reported"
    assert frame.loc["bridge_beats_nb_es", "paper_effect"] == pytest.approx(0.535 - 0.526)
    assert frame.loc["bridge_beats_nb_it", "verdict"] == "not run"
    assert "no configured variant runs the row Bridge CorrNet [test=it" in frame.loc[
        "bridge_beats_nb_it", "reason"]  # fmt: skip
    table = pd.DataFrame(
        [{"system": system, "variant_note": mono_note("es"), "language": "es", "direction": "",
          "metric": "F1", "paper": paper_value, "ours": topic_f1(gold, found).mean()}
         for system, paper_value, found in (("Bridge CorrNet", 0.535, good),
                                            (NB_SYSTEM, 0.526, poor))]
    )  # fmt: skip
    out = add_intervals(table, runs, paper, 3)
    assert (out.ours_low < out.ours).all() and (out.ours < out.ours_high).all()
    cross = table.iloc[:1].assign(variant_note="test=de", direction="cldc")
    assert add_intervals(cross, runs, paper, 1).ours_low.notna().all()  # Table 1 cell


def test_a_claim_against_published_numbers_resamples_our_side_only(tmp_path):
    """Rajendran's 107-of-110 sentence compares their Bridge CorrNet with DOC/ADD as Table 2
    quotes it: the claim's other side is those printed numbers, held fixed; the effect is our
    F1 minus theirs over the cells, its interval our side's, and the table says so."""
    from mlmm import uncertainty
    from mlmm.ted.classify import topic_f1

    rng = np.random.default_rng(7)
    gold = rng.random((300, 15)) < 0.1
    decisions = {test: (np.where(rng.random(gold.shape) < 0.9, gold, ~gold), gold)
                 for test in ("de", "fr")}  # fmt: skip
    runs = ted_runs([_ted_result(tmp_path / "cldc/es.json", "es", decisions)], None)
    paper, claims, _ = c.load_claims(RAJENDRAN, PAPER_TABLES)
    shipped = next(claim for claim in claims if claim.published_than)
    assert (shipped.table, shipped.published_than, len(shipped.cells)) == (1, 2, 110)
    cells = [{"language": "es", "direction": "cldc", "test_language": t} for t in ("de", "fr")]
    entry = {"id": "two_pairs", "finding": "x", "quote": "y", "section": "5", "table": 1,
             "published_than": 2, "metric": "F1", "cells": cells,
             "better": {"system": "Bridge CorrNet", "variant_note": "test={test_language}"},
             "than": {"system": "DOC/ADD (Hermann & Blunsom, 2014b)",
                      "variant_note": "test={test_language}"}}  # fmt: skip
    registry = tmp_path / "rajendran2016.yaml"
    registry.write_text(yaml.safe_dump({"paper": paper, "min_seeds": 1, "claims": [entry]}))
    _, (claim,), _ = c.load_claims(registry, PAPER_TABLES)
    frame = c.evaluate_claims(runs, paper, [claim], PAPER_TABLES, 1).set_index("claim")
    row = frame.loc["two_pairs"]
    table1 = pd.read_csv(PAPER_TABLES / "rajendran2016_table1.csv")
    table2 = pd.read_csv(PAPER_TABLES / "rajendran2016_table2.csv")

    def printed(table: pd.DataFrame, test: str) -> float:
        return float(table[(table.language == "es") & (table.variant_note == f"test={test}")
                           ].value.iloc[0])  # fmt: skip

    ours = np.mean([topic_f1(gold, found).mean() - printed(table2, test)
                    for test, (found, gold) in decisions.items()])  # fmt: skip
    assert row["our_effect"] == pytest.approx(ours) and ours > 0
    assert row["paper_effect"] == pytest.approx(
        np.mean([printed(table1, t) - printed(table2, t) for t in decisions]))
    assert "published, the paper's Table 2; not rerun" in row["than"]
    assert row["seeds"] == "1 / published" and row["verdict"] != "not run"
    # the interval is our side's alone: the published number only shifts it
    found, truth = decisions["de"]
    stacked = [np.stack([found, truth], axis=-1)]
    value, draws = uncertainty.replicates_against(stacked, 0.4, uncertainty.macro_f1_statistic)
    alone = uncertainty.replicates_against(stacked, 0.0, uncertainty.macro_f1_statistic)[1]
    assert value == pytest.approx(topic_f1(truth, found).mean() - 0.4)
    assert np.allclose(draws, alone - 0.4)
    # without the paper's tables the published side is not at hand: not run, and why
    missing = c.evaluate_claims(runs, paper, [claim], tmp_path / "none", 1).iloc[0]
    assert missing["verdict"] == "not run" and "Table 2" in missing["reason"]


def _pivot_run(root: Path, model: str, language: str | None, i2t, t2i) -> Path:
    from mlmm.fingerprint import record_directory
    from mlmm.pivot.evaluate import recalls_of_ranks
    from mlmm.pivot.experiment import write_test_ranks

    out = root / f"{model}_{language}"
    out.mkdir(parents=True)
    test = recalls_of_ranks({"i2t": i2t, "t2i": t2i})
    key = "" if model == "random" else language or "en"
    record = {"model": model, "language": language, "lambda": 1.0, "test": test,
              "criteria": {"i2t": 0.0, "t2i": 0.0},
              "provenance": provenance({"model": model, "language": language},
                                        data=("coco",))}  # fmt: skip
    write_test_ranks(out / "metrics.json", key, {"i2t": i2t, "t2i": t2i}, record)
    record_directory(out, "metrics.json")  # as pivot-train and pivot-mt record the run
    return out / "metrics.json"


def test_pivot_ranks_give_table5_intervals_and_claims(tmp_path):
    """Table 5 runs with planted ranks on the same MIC images and captions: the claims
    across rows of other caption languages (En-Image CorrNet) and of the CorrNet + MT row
    are tested, recalls stay fractions of 1, absent rows are not run."""
    from mlmm.results.pivot_table import read_runs, table5

    rng = np.random.default_rng(2)
    weak_i2t, weak_t2i = rng.integers(0, 200, 100), rng.integers(0, 100, 500)
    strong_i2t = np.where(rng.random(100) < 0.5, 0, weak_i2t)
    strong_t2i = np.where(rng.random(500) < 0.5, 0, weak_t2i)
    paths = [
        _pivot_run(tmp_path, "direct", None, strong_i2t, strong_t2i),
        _pivot_run(tmp_path, "bridge", "fr", weak_i2t, weak_t2i),
        _pivot_run(tmp_path, "mt", "fr", strong_i2t, strong_t2i),
    ]
    runs = pivot_runs(read_runs(paths))
    paper, claims, _ = c.load_claims(RAJENDRAN)
    frame = c.evaluate_claims(runs, paper, claims, PAPER_TABLES).set_index("claim")
    # CorrNet + MT on French captions against the En-Image CorrNet's English ones, same
    # images, same ranks: parity within the margin
    assert frame.loc["mt_close_to_en_image_fr", "verdict"] == "reproduced"
    assert frame.loc["mt_close_to_en_image_fr", "our_effect"] == 0
    assert frame.loc["mt_beats_bridge_fr", "verdict"] in ("reproduced", "larger than reported")
    assert 0 < frame.loc["mt_beats_bridge_fr", "our_effect"] < 1  # fractions of 1
    assert frame.loc["bridge_beats_2corrnet_fr", "verdict"] == "not run"
    assert frame.loc["mt_beats_bridge_de", "verdict"] == "not run"
    table = table5(paths, PAPER_TABLES, tmp_path / "rajendran2016_table5")
    ours = table.dropna(subset=["ours"])
    assert ours.ours_low.notna().all() and (ours.ours_low <= ours.ours).all()
    assert (ours.ours <= ours.ours_high).all() and (ours.ours_high <= 1).all()
    assert ours.within_noise.notna().all()


# ----------------------------------------------------------------------------------------
# verdicts that read effect sizes; lower-is-better metrics; claims over several cells


@pytest.mark.parametrize(
    "args, expected",
    [
        # test, ours, low, high, p_holm, paper, mde, margin
        (("superiority", 3.0, 1.0, 5.0, 0.001, 4.0, 2.0), "reproduced"),
        (("superiority", 3.0, 1.0, 5.0, 0.001, 9.0, 2.0), "smaller than reported"),
        (("superiority", 3.0, 1.0, 5.0, 0.001, 0.5, 2.0), "larger than reported"),
        (("superiority", -3.0, -5.0, -1.0, 0.001, 4.0, 2.0), "reversed"),
        (("superiority", 0.1, -0.5, 0.7, 0.6, 0.3, 1.2), "below detectable"),
        (("superiority", 1.0, -1.0, 3.0, 0.3, 2.5, 2.0), "inconclusive"),
        (("superiority", 0.0, -1.0, 1.0, 0.9, 6.0, 2.0), "contradicts the paper's size"),
        (("superiority", np.nan, np.nan, np.nan, np.nan, 6.0, np.nan), "not run"),
        (("non-inferiority", 0.0, -0.5, 0.5, 0.001, 0.2, 1.0, 2.0), "reproduced"),
        (("non-inferiority", -4.0, -5.0, -3.0, 0.9, 0.2, 1.0, 2.0), "worse than the margin"),
        (("non-inferiority", -1.0, -3.0, 1.0, 0.2, 0.2, 3.0, 2.0), "below detectable"),
        (("non-inferiority", -1.0, -3.0, 1.0, 0.2, 0.2, 1.5, 2.0), "inconclusive"),
    ],
)
def test_each_verdict(args, expected):
    assert c.verdict(*args) == expected
    assert expected in c.VERDICTS


def _kadar_runs(tmp_path, table: int, rows: dict, per_image: int = 5) -> list[Run]:
    """Runs of Kádár rows with en i2t and t2i ranks on the same 100 images (five captions an
    image) and the image ids beside them."""
    runs = []
    for (system, note), (i2t, t2i) in rows.items():
        out = tmp_path / system.replace(" ", "_")
        out.mkdir()
        outcomes = {"folds": 1, "images": len(i2t), "test": {"en": {"i2t": i2t, "t2i": t2i}}}
        metrics = _write_run(out, system, 1, outcomes)
        row = {"paper": "kadar2018", "table": table, "system": system, "variant_note": note,
               "languages": ["en"]}  # fmt: skip
        runs.append(Run(system, 1, metrics, [row], [], out / "metrics.json"))
    return runs


def test_lower_is_better_and_several_cells(tmp_path):
    """A claim on median rank (lower is better) over two cells and a parity claim: the effect
    is oriented so that positive is the claim's direction, the mean over the cells."""
    rng = np.random.default_rng(4)
    weak = rng.integers(0, 60, 100), rng.integers(0, 60, 500)
    strong = np.maximum(weak[0] - 20, 0), np.maximum(weak[1] - 20, 0)
    c2c = NOTE + "; row label '+ c2c'"
    runs = _kadar_runs(tmp_path, 2, {("Bilingual + c2c", c2c): strong, ("Bilingual", NOTE): weak})
    cells = [{"language": "en", "direction": "i2t"}, {"language": "en", "direction": "t2i"}]
    base = {"finding": "x", "quote": "y", "section": "5.1", "table": 2, "cells": cells,
            "better": {"system": "Bilingual + c2c", "variant_note": c2c},
            "than": {"system": "Bilingual", "variant_note": NOTE}}  # fmt: skip
    entries = [
        base | {"id": "medr", "metric": "medr"},
        base | {"id": "recalls", "metric": ["R@1", "R@5", "R@10"]},
        base | {"id": "parity", "metric": "R@10", "test": "non-inferiority", "margin": 1.0,
                "better": base["than"], "than": base["better"]},  # fmt: skip
    ]
    registry = tmp_path / "kadar2018.yaml"
    registry.write_text(yaml.safe_dump({"paper": "kadar2018", "min_seeds": 1, "claims": entries}))
    paper, claims, min_seeds = c.load_claims(registry)
    frame = c.evaluate_claims(runs, paper, claims, None, min_seeds).set_index("claim")
    expected = np.mean([np.floor(np.median(w)) - np.floor(np.median(s))
                        for w, s in zip(weak, strong, strict=True)])  # fmt: skip
    assert frame.loc["medr", "our_effect"] == pytest.approx(expected) and expected > 0
    assert frame.loc["medr", "verdict"] == "reproduced"
    assert frame.loc["medr", "cells"] == "medr: en i2t; en t2i (mean)"
    assert frame.loc["recalls", "our_effect"] > 0
    assert frame.loc["medr", "compares"] == "methods"  # the registry's minimum is one seed
    # Bilingual is clearly worse than Bilingual + c2c: not within a 1-point margin
    assert frame.loc["parity", "verdict"] == "worse than the margin"
    assert frame.loc["parity", "test"] == "non-inferiority, margin 1"


def test_claims_and_intervals_import_no_table_builder():
    """The layers: mlmm.results.intervals and mlmm.results.claims sit under the table builders
    and import none of them; the builders import mlmm.results.intervals, never
    mlmm.results.claims."""
    import ast

    builders = {
        "mlmm.results.retrieval_tables",
        "mlmm.results.nmt_table",
        "mlmm.results.ted_tables",
        "mlmm.results.pivot_table",
    }

    def imported(module: str) -> set[str]:
        path = REPO / "src" / (module.replace(".", "/") + ".py")
        found = set()
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.ImportFrom) and node.module:
                found |= {node.module} | {f"{node.module}.{a.name}" for a in node.names}
            elif isinstance(node, ast.Import):
                found |= {a.name for a in node.names}
        return found

    for low in (
        "mlmm.results.claims",
        "mlmm.results.intervals",
        "mlmm.uncertainty",
        "mlmm.outcomes",
    ):
        assert not imported(low) & builders, low
    for builder in builders:
        assert "mlmm.results.claims" not in imported(builder), builder


def _figure_run(tmp_path: Path, system: str, seed: int, ranks: np.ndarray) -> Run:
    """A run mapped onto a row of Kádár Figure 3 (``figure: 3``, no table), en i2t ranks."""
    out = tmp_path / f"figure3_{system}/seed{seed}"
    out.mkdir(parents=True)
    outcomes = {"folds": 1, "images": len(ranks), "test": {"en": {"i2t": ranks}}}
    metrics = _write_run(out, system, seed, outcomes)
    row = {"paper": "kadar2018", "figure": 3, "system": system, "variant_note": "",
           "languages": None}  # fmt: skip
    return Run(system, seed, metrics, [row], [], out / "metrics.json")


def _figure_claim(claim_id: str, better: str, than: str) -> dict:
    return {"id": claim_id, "finding": "x", "quote": "y", "section": "6.3, Figure 3",
            "figure": 3, "language": "en", "direction": "i2t", "metric": "R@10",
            "better": {"system": better}, "than": {"system": than}}  # fmt: skip


def test_figure_claims_test_the_direction_only(tmp_path):
    """A claim on a figure's rows (no paper numbers): its runs are the variants mapped onto
    that figure, not a table's rows of the same number; its paper effect is blank, so a
    significant effect in the claim's direction is reproduced, against it reversed, and a null
    one inconclusive (never 'below detectable' or a size verdict)."""
    rng = np.random.default_rng(7)
    base = rng.integers(0, 60, size=N)
    strong = np.where(rng.random(N) < 0.4, 0, base)
    runs = [_figure_run(tmp_path, "Monolingual", s, rng.permutation(base)) for s in (1, 2)]
    runs += [_figure_run(tmp_path, "Multilingual", s, strong) for s in (1, 2)]
    runs += [_figure_run(tmp_path, "Bilingual", s, rng.permutation(base)) for s in (1, 2)]
    # a Table 3 run of the same system name must not stand in for the figure's row
    runs += [_run(tmp_path, "Trilingual", 1, strong, table=3)]
    registry = tmp_path / "kadar2018.yaml"
    entries = [_figure_claim("more", "Multilingual", "Monolingual"),
               _figure_claim("fewer", "Monolingual", "Multilingual"),
               _figure_claim("null", "Bilingual", "Monolingual"),
               _figure_claim("table_row", "Trilingual", "Monolingual")]  # fmt: skip
    registry.write_text(yaml.safe_dump({"paper": "kadar2018", "min_seeds": 2, "claims": entries}))
    paper, claims, min_seeds = c.load_claims(registry, PAPER_TABLES)
    assert claims[0].source == ("figure", 3) and claims[0].table == 0
    frame = c.evaluate_claims(runs, paper, claims, PAPER_TABLES, min_seeds).set_index("claim")
    assert frame["paper_effect"].isna().all()
    assert frame.loc["more", "verdict"] == "reproduced" and frame.loc["more", "our_effect"] > 0
    assert frame.loc["fewer", "verdict"] == "reversed"
    assert frame.loc["null", "verdict"] == "inconclusive"
    assert frame.loc["table_row", "verdict"] == "not run"
    assert "Trilingual" in frame.loc["table_row", "reason"]


@pytest.mark.parametrize(
    "change, message",
    [
        ({"table": 3}, r"exactly one of 'table' and 'figure'.*both"),
        ({"figure": None}, r"figure'.*a figure number"),
        ({"figure": 0}, r"a figure number"),
    ],
)
def test_figure_claims_name_one_figure(tmp_path, change, message):
    entry = {k: v for k, v in (_figure_claim("f", "Bilingual", "Monolingual") | change).items()}
    registry = tmp_path / "kadar2018.yaml"
    registry.write_text(yaml.safe_dump({"paper": "kadar2018", "claims": [entry]}))
    with pytest.raises(InputError, match=message):
        c.load_claims(registry)
    del entry["figure"]
    entry.pop("table", None)
    registry.write_text(yaml.safe_dump({"paper": "kadar2018", "claims": [entry]}))
    with pytest.raises(InputError, match=r"exactly one of 'table' and 'figure'.*neither"):
        c.load_claims(registry)


PAPER_TEXTS = REPO.parent / "shared" / "papers"


def _letters(text: str) -> str:
    """Letters and digits only, lower case: a quote and the paper text compare across line
    breaks, hyphenation ('fine-\\ntuning'), emphasis marks and typographic dashes."""
    import unicodedata

    return "".join(ch for ch in unicodedata.normalize("NFKC", text).lower() if ch.isalnum())


@pytest.mark.skipif(not PAPER_TEXTS.is_dir(), reason="no ../shared/papers")
@pytest.mark.parametrize("paper", CLAIM_PAPERS)
def test_every_claim_quotes_its_paper_verbatim(paper):
    """Each registered claim's quote, cut only at '...', stands in one paper text: a verdict
    tests what the authors wrote, not a paraphrase."""
    texts = [_letters(p.read_text(encoding="utf-8", errors="replace"))
             for p in sorted(PAPER_TEXTS.iterdir())]  # fmt: skip
    _, claims, _ = c.load_claims(REPO / "resources" / "claims" / f"{paper}.yaml")
    misquoted = []
    for claim in claims:
        parts = [_letters(part) for part in claim.quote.split("...") if _letters(part)]
        if not any(all(part in text for part in parts) for text in texts):
            misquoted.append(claim.id)
    assert misquoted == []
