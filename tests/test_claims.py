"""Claims registries and verdicts (mlmm.claims) on runs with planted effects, the intervals on
the retrieval tables' cells, and every shipped registry naming cells of the paper's tables."""

from __future__ import annotations

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
    assert "51.0 (50.0, +1.0) [48.0, 54.0] ≈" in markdown  # R@10 as the papers print it
    assert "60.0 (70.0, −10.0) [57.5, 62.5] ≠" in markdown
    latex = (tmp_path / "kadar2018_table2.tex").read_text()
    assert r"$\approx$" in latex and r"$\neq$" in latex
    assert pd.read_csv(tmp_path / "kadar2018_table2.csv").within_noise.tolist() == [True, False]
