"""Claims registries and verdicts (mlmm.claims) on runs with planted effects, the intervals on
the retrieval tables' cells, and every shipped registry naming cells of the paper's tables."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
import yaml

from mlmm import claims as c
from mlmm.catalogue import CLAIM_PAPERS
from mlmm.errors import InputError
from mlmm.outcomes import write_outcomes
from mlmm.report import Run

REPO = Path(__file__).resolve().parents[1]
PAPER_TABLES = REPO / "resources" / "paper_tables"
NOTE = "this paper (cosine similarity, max-of-hinges loss, ResNet50 features)"
N = 400


def _run(tmp_path: Path, system: str, seed: int, ranks: np.ndarray, table: int = 2) -> Run:
    """A run mapped onto a Kádár row, its queries.npz holding ``ranks`` for en i2t."""
    out = tmp_path / f"{system.replace(' ', '_')}/seed{seed}"
    out.mkdir(parents=True)
    write_outcomes(out / "queries.npz", {"folds": 1, "test": {"en": {"i2t": ranks}}}, {})
    metrics = {"variant": system, "seed": seed, "test": {"en": {"i2t": {}}}}
    row = {"paper": "kadar2018", "table": table, "system": system, "variant_note": NOTE,
           "languages": ["en"]}  # fmt: skip
    return Run(system, seed, metrics, [row], [], out / "metrics.json")


def _claim(claim_id: str, better: str, than: str) -> dict:
    return {
        "id": claim_id, "finding": "x", "section": "5.1, Table 2", "table": 2,
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
    ]
    registry.write_text(yaml.safe_dump({"paper": "kadar2018", "claims": entries}))
    return runs, registry


def test_verdicts_of_planted_effects(planted):
    runs, registry = planted
    paper, claims = c.load_claims(registry)
    frame = c.evaluate_claims(runs, paper, claims, None).set_index("claim")
    # the paper's table is not given: the claim's direction is `better` over `than`
    assert frame.loc["planted", "verdict"] == "holds"
    assert frame.loc["planted", "effect_low"] > 0
    assert frame.loc["against", "verdict"] == "reversed"
    assert frame.loc["null", "verdict"] == "not significant"
    assert frame.loc["absent", "verdict"] == "not run"
    assert "Pivot-Sym" in frame.loc["absent", "reason"]
    assert np.isnan(frame.loc["absent", "p_holm"])
    assert frame.loc["planted", "seeds_better"] == 2
    # Holm over the three that ran: never below the raw p
    ran = frame.dropna(subset=["p"])
    assert (ran.p_holm >= ran.p).all()


def test_paper_effect_comes_from_the_paper_table(planted):
    runs, registry = planted
    paper, claims = c.load_claims(registry)
    frame = c.evaluate_claims(runs, paper, claims[:1], PAPER_TABLES)
    assert frame.paper_effect.iloc[0] == pytest.approx(80.1 - 79.8)  # Table 2, en i2t R@10


def test_claims_files_are_written(planted, tmp_path):
    runs, registry = planted
    paths = c.write_claims(runs, registry, None, tmp_path / "t", tmp_path / "f")
    names = sorted(p.name for p in paths)
    assert names == sorted(
        [f"kadar2018_claims.{s}" for s in ("csv", "md", "tex", "html", "png", "pdf")]
    )
    table = pd.read_csv(tmp_path / "t" / "kadar2018_claims.csv")
    assert set(table.verdict) == {"holds", "reversed", "not significant", "not run"}
    assert "percentile bootstrap" in (tmp_path / "t" / "kadar2018_claims.md").read_text()


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
    out = c.add_intervals(frame, runs, "kadar2018", 2)
    assert out.ours_low[0] <= out.ours[0] <= out.ours_high[0]
    assert out.within_noise[0] == (out.ours_low[0] <= 80.1 <= out.ours_high[0])
    assert np.isnan(out.ours_low[1]) and out.within_noise[1] is None


def test_bad_registry_names_the_claim_and_key(tmp_path):
    path = tmp_path / "x.yaml"
    path.write_text(yaml.safe_dump({"paper": "x", "claims": [{"id": "a"}]}))
    with pytest.raises(InputError, match=r"claims\[1\]"):
        c.load_claims(path)
    bad = _claim("a", "A", "B") | {"metric": "medr"}
    path.write_text(yaml.safe_dump({"paper": "x", "claims": [bad]}))
    with pytest.raises(InputError, match="higher is better"):
        c.load_claims(path)


@pytest.mark.parametrize("paper", CLAIM_PAPERS)
def test_every_shipped_claim_names_cells_of_the_paper_table(paper):
    """Each claim's two rows exist in the paper's table, so its paper effect is the paper's."""
    name, claims = c.load_claims(REPO / "resources" / "claims" / f"{paper}.yaml")
    assert name == paper and claims
    for claim in claims:
        assert np.isfinite(c.paper_effect(PAPER_TABLES, paper, claim)), claim.id


def test_nmt_systems_give_table3_intervals_and_claims(tmp_path):
    """mt-score outputs (metrics.json with sentences.npz beside) become Calixto Table 3 rows:
    their BLEU cells get intervals, and a planted BLEU gain holds as a claim."""
    import json

    from mlmm.nmt.metrics import mt_metrics, sentence_statistics
    from mlmm.outcomes import write_sentence_statistics

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
        record = {"system": system, "variant_note": note, "scores": mt_metrics(hyps, refs, "de")}
        (out / "metrics.json").write_text(json.dumps(record))
        write_sentence_statistics(out / "sentences.npz", sentence_statistics(hyps, refs), {})
        paths.append(out / "metrics.json")
    runs = c.nmt_runs(paths)
    system, note = next(iter(outputs))
    frame = pd.DataFrame(
        [{"system": system, "variant_note": note, "language": "en-de", "direction": "mt",
          "metric": metric, "paper": np.nan, "ours": runs[0].metrics["scores"][metric]}
         for metric in ("BLEU", "TER", "chrF")]
    )  # fmt: skip
    out = c.add_intervals(frame, runs, "calixto2017", 3)
    assert (out.ours_low < out.ours).all() and (out.ours < out.ours_high).all()
    registry = REPO / "resources" / "claims" / "calixto2017.yaml"
    paper, claims = c.load_claims(registry)
    verdicts = c.evaluate_claims(runs, paper, claims, PAPER_TABLES).set_index("claim").verdict
    assert verdicts["mlmme_reranking_improves_bleu"] == "holds"
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
    from mlmm.outcomes import decision_metrics, decisions_path, write_decisions

    sets = {t: {t: {"predicted": p, "gold": g}} for t, (p, g) in decisions.items()}
    record = {"f1": decision_metrics(sets)} | ({"source": source} if source else {})
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(record))
    write_decisions(decisions_path(path), {t: {t: d} for t, d in decisions.items()}, {})
    return path


def test_ted_decisions_give_table3_intervals_and_claims(tmp_path):
    """Bridge CorrNet (es) planted better than NB on the same test talks: the claim holds,
    Table 3's cells get an interval from the documents, the other languages are not run."""
    from mlmm import uncertainty
    from mlmm.ted.classify import topic_f1
    from mlmm.ted.report import NB_SYSTEM, mono_note

    rng = np.random.default_rng(5)
    gold = rng.random((300, 15)) < 0.1
    good = np.where(rng.random(gold.shape) < 0.9, gold, ~gold)
    poor = np.where(rng.random(gold.shape) < 0.7, gold, ~gold)
    # the macro F1 statistic of the bootstrap is the classifier's F1 (ted.classify.topic_f1)
    stacked = np.stack([good, gold], axis=-1)[None]
    assert uncertainty.macro_f1_statistic(stacked)[0] == topic_f1(gold, good).mean()
    cldc = _ted_result(tmp_path / "cldc/es.json", "es", {"es": (good, gold), "de": (poor, gold)})
    nb = _ted_result(tmp_path / "nb.json", None, {"es": (poor, gold)})
    runs = c.ted_runs([cldc], nb)
    paper, claims = c.load_claims(RAJENDRAN)
    frame = c.evaluate_claims(runs, paper, claims, PAPER_TABLES).set_index("claim")
    assert frame.loc["bridge_beats_nb_es", "verdict"] == "holds"
    assert frame.loc["bridge_beats_nb_es", "paper_effect"] == pytest.approx(0.535 - 0.526)
    assert frame.loc["nb_beats_bridge_ar", "verdict"] == "not run"
    table = pd.DataFrame(
        [{"system": system, "variant_note": mono_note("es"), "language": "es", "direction": "",
          "metric": "F1", "paper": paper_value, "ours": topic_f1(gold, found).mean()}
         for system, paper_value, found in (("Bridge CorrNet", 0.535, good),
                                            (NB_SYSTEM, 0.526, poor))]
    )  # fmt: skip
    out = c.add_intervals(table, runs, paper, 3)
    assert (out.ours_low < out.ours).all() and (out.ours < out.ours_high).all()
    cross = table.iloc[:1].assign(variant_note="test=de", direction="cldc")
    assert c.add_intervals(cross, runs, paper, 1).ours_low.notna().all()  # Table 1 cell


def _pivot_run(root: Path, model: str, language: str | None, i2t, t2i) -> Path:
    from mlmm.outcomes import write_outcomes
    from mlmm.pivot.evaluate import recalls_of_ranks

    out = root / f"{model}_{language}"
    out.mkdir(parents=True)
    test = recalls_of_ranks({"i2t": i2t, "t2i": t2i})
    key = "" if model == "random" else language or "en"
    write_outcomes(out / "queries.npz", {"folds": 1, "test": {key: {"i2t": i2t, "t2i": t2i}}}, {})
    record = {"model": model, "language": language, "lambda": 1.0, "test": test,
              "criteria": {"i2t": 0.0, "t2i": 0.0}}  # fmt: skip
    (out / "metrics.json").write_text(json.dumps(record))
    return out / "metrics.json"


def test_pivot_ranks_give_table5_intervals_and_claims(tmp_path):
    """Table 5 runs with planted ranks on the same MIC images and captions: the claims
    across rows of other caption languages (En-Image CorrNet) and of the CorrNet + MT row
    are tested, recalls stay fractions of 1, absent rows are not run."""
    from mlmm.pivot.table import read_runs, table5

    rng = np.random.default_rng(2)
    weak_i2t, weak_t2i = rng.integers(0, 200, 100), rng.integers(0, 100, 500)
    strong_i2t = np.where(rng.random(100) < 0.5, 0, weak_i2t)
    strong_t2i = np.where(rng.random(500) < 0.5, 0, weak_t2i)
    paths = [
        _pivot_run(tmp_path, "direct", None, strong_i2t, strong_t2i),
        _pivot_run(tmp_path, "bridge", "fr", weak_i2t, weak_t2i),
        _pivot_run(tmp_path, "mt", "fr", strong_i2t, strong_t2i),
    ]
    runs = c.pivot_runs(read_runs(paths))
    paper, claims = c.load_claims(RAJENDRAN)
    frame = c.evaluate_claims(runs, paper, claims, PAPER_TABLES).set_index("claim")
    assert frame.loc["en_image_beats_bridge_fr_i2t", "verdict"] == "holds"
    assert frame.loc["mt_beats_bridge_fr_i2t", "verdict"] == "holds"
    assert 0 < frame.loc["mt_beats_bridge_fr_i2t", "our_effect"] < 1  # fractions of 1
    assert frame.loc["bridge_beats_2corrnet_fr_i2t", "verdict"] == "not run"
    assert frame.loc["mt_beats_bridge_de_t2i", "verdict"] == "not run"
    table = table5(paths, PAPER_TABLES, tmp_path / "rajendran2016_table5")
    ours = table.dropna(subset=["ours"])
    assert ours.ours_low.notna().all() and (ours.ours_low <= ours.ours).all()
    assert (ours.ours <= ours.ours_high).all() and (ours.ours_high <= 1).all()
    assert ours.within_noise.notna().all()
