"""Retrieval tables and figures from fabricated per-run metrics files."""

from __future__ import annotations

import json
from pathlib import Path

import pandas as pd
import pytest
import yaml

from mlmm.cli import main
from mlmm.errors import InputError
from mlmm.results import retrieval_tables as report

PAPER_TABLES = Path(__file__).resolve().parents[1] / "resources" / "paper_tables"  # shipped

BI_C2C = "this paper (cosine similarity, max-of-hinges loss, ResNet50 features); row label '+ c2c'"
CONFIG = {
    "retrieval": {
        "variants": {
            "bilingual_c2c": {
                "train_data": [{"portion": "comparable", "languages": ["en", "de"]}],
                "paper_rows": [
                    {"paper": "kadar2018", "table": 2, "system": "Bilingual + c2c",
                     "variant_note": BI_C2C},
                    {"paper": "kadar2018", "figure": 3, "system": "Bilingual"},
                ],
            },
            "ame_asym": {
                "train_data": [{"portion": "comparable", "languages": ["en", "de"]}],
                "paper_rows": [
                    {"paper": "ame2019", "table": 1, "system": "AME",
                     "variant_note": "similarity=asymmetric"},
                    {"paper": "ame2019", "table": 5, "system": "AME",
                     "variant_note": "similarity=asymmetric"},
                    {"paper": "ame2019", "figure": 2, "system": "AME"},
                ],
            },
            "mlmme": {
                "paper_rows": [{"paper": "calixto2017", "table": 2, "system": "MLMME",
                                "variant_note": "beta=0.5", "languages": ["en"]}],
            },
            "ours_only": {"paper_rows": [{"paper": "kadar2018", "table": 2, "system": "Extra"}]},
        }
    }
}  # fmt: skip


def direction(r1: float) -> dict:
    return {"R@1": r1, "R@5": r1 + 20, "R@10": r1 + 30, "medr": 3.0, "meanr": 9.5}


def fabricate(root: Path, variant: str, seed: int, r1: float, **extra) -> Path:
    metrics = {
        "variant": variant,
        "seed": seed,
        "provenance": {},
        "timings": {},
        "best_step": 10,
        "test": {lang: {"i2t": direction(r1), "t2i": direction(r1 - 5)} for lang in ("en", "de")},
        **extra,
    }
    path = root / variant / f"seed{seed}" / "metrics.json"
    path.parent.mkdir(parents=True)
    path.write_text(json.dumps(metrics))
    return path


@pytest.fixture
def setup(tmp_path):
    config = tmp_path / "config.yaml"
    config.write_text(yaml.safe_dump(CONFIG))
    runs = tmp_path / "runs"
    fabricate(runs, "bilingual_c2c", 1, 40.0)
    fabricate(runs, "bilingual_c2c", 2, 44.0)
    history = [{"step": s, "R@1_i2t": 10.0 + s, "alignment": 70.0 - s / 10} for s in (5, 10, 15)]
    fabricate(runs, "ame_asym", 1, 50.0, history=history, alignment={"en-de": 73.0},
              c2c={"en-de": direction(51.0), "de-en": direction(49.0)})  # fmt: skip
    fabricate(runs, "mlmme", 1, 20.0, sts={"2014": 0.70, "2015": 0.75})
    fabricate(runs, "ours_only", 1, 30.0)
    paper = tmp_path / "paper"
    paper.mkdir()
    cells = [
        ("Bilingual + c2c", BI_C2C, "en", "i2t", "R@1", "43.8"),
        ("VSE", "result reported by Gella et al. (2017)", "en", "i2t", "R@1", "31.6"),
    ]
    rows = [dict(paper="kadar2018", table=2, system=s, variant_note=v, dataset="test 2016",
                 language=la, direction=d, metric=m, value=x, source_note="")
            for s, v, la, d, m, x in cells]  # fmt: skip
    pd.DataFrame(rows).to_csv(paper / "kadar2018_table2.csv", index=False)
    return config, runs, paper


def test_table_mean_std_over_seeds_and_reference_rows(setup, tmp_path):
    config, runs, paper = setup
    loaded = report.load_runs([runs], report.read_section([config]))
    assert len(loaded) == 5
    spec = next(s for s in report.TABLES if s.stem == "kadar2018_table2")
    frame = report.build_table(loaded, spec, paper)
    cell = frame[(frame.system == "Bilingual + c2c") & (frame.direction == "i2t")
                 & (frame.metric == "R@1")].iloc[0]  # fmt: skip
    assert cell.ours == 42.0 and cell.runs == 2 and cell.paper == 43.8
    assert cell.ours_std == pytest.approx(2 * 2**0.5)
    assert cell["diff"] == pytest.approx(42.0 - 43.8)
    # the paper's quoted row stays, without ours
    vse = frame[frame.system == "VSE"].iloc[0]
    assert vse.paper == 31.6 and pd.isna(vse.ours)
    # a row of ours the paper does not have: only the cells the table shows (en, R@1/5/10)
    extra = frame[frame.system == "Extra"]
    assert len(extra) == 6 and extra.paper.isna().all()
    assert set(frame.language) == {"en"} and "medr" not in set(frame.metric)


def test_ame_c2c_alignment_and_sts_cells(setup):
    config, runs, _ = setup
    loaded = report.load_runs([runs], report.read_section([config]))
    specs = {s.stem: s for s in report.TABLES}
    t5 = report.build_table(loaded, specs["ame2019_table5"], None)
    got = {(r.language, r.direction, r.metric): r.ours for r in t5.itertuples()}
    assert got[("en-de", "t2t_en2de", "R@1")] == 51.0
    assert got[("en-de", "t2t_de2en", "R@10")] == 79.0
    t1 = report.build_table(loaded, specs["ame2019_table1"], None)
    assert t1[t1.metric == "alignment"].ours.tolist() == [73.0]
    sts = report.build_table(loaded, specs["calixto2017_table2"], None)
    assert dict(zip(sts.dataset, sts.ours, strict=True)) == {"2014": 0.70, "2015": 0.75}


def test_sts_table_against_real_paper_numbers(setup):
    config, runs, _ = setup
    loaded = report.load_runs([runs], report.read_section([config]))
    spec = next(s for s in report.TABLES if s.stem == "calixto2017_table2")
    frame = report.build_table(loaded, spec, PAPER_TABLES)
    mine = frame[(frame.system == "MLMME") & (frame.variant_note == "beta=0.5")]
    assert mine.set_index("dataset").paper.to_dict() == {"2014": 0.727, "2015": 0.776}
    assert mine.set_index("dataset")["diff"].to_dict() == pytest.approx(
        {"2014": 0.70 - 0.727, "2015": 0.75 - 0.776}
    )
    assert len(frame) == 12  # every paper cell once, ours beside its year


def test_cli_tables_and_figures(setup, tmp_path):
    config, runs, paper = setup
    out = tmp_path / "tables"
    argv = ["--config", str(config), "--runs", str(runs)]
    assert main(["retrieval-tables", *argv, "--paper-tables", str(paper), "--out", str(out)]) == 0
    assert len(list(out.glob("*_table*.csv"))) == len(report.TABLES)
    md = (out / "kadar2018_table2.md").read_text()
    assert "bilingual_c2c" in md and "43.8" in md
    assert "no configured variant" in (out / "kadar2018_table6.md").read_text()
    figures = tmp_path / "figures"
    record = tmp_path / "retrieval_tables.json"  # as the workflow writes it
    record.write_text(json.dumps({"retrieval": CONFIG["retrieval"]}), encoding="utf-8")
    argv = ["--config", str(record), "--runs", str(runs)]
    assert main(["retrieval-figures", *argv, "--out", str(figures)]) == 0
    again = tmp_path / "again"
    assert main(["retrieval-figures", *argv, "--out", str(again)]) == 0
    for stem in ("kadar2018_figure3", "ame2019_figure2"):
        for suffix in (".png", ".pdf"):
            drawn = (figures / stem).with_suffix(suffix).read_bytes()
            assert len(drawn) > 1000
            assert drawn == (again / stem).with_suffix(suffix).read_bytes()  # no clock inside


def test_bad_inputs(setup, tmp_path):
    config, runs, _ = setup
    broken = runs / "ours_only" / "seed1" / "metrics.json"
    broken.write_text("{not json")
    with pytest.raises(InputError, match="metrics.json, line 1: expected a JSON metrics file"):
        report.load_runs([runs], report.read_section([config]))
    broken.write_text(json.dumps({"variant": "unknown", "seed": 1, "test": {}, "provenance": {}}))
    with pytest.raises(InputError, match="a variant named in retrieval.variants"):
        report.load_runs([runs], report.read_section([config]))
    broken.write_text(json.dumps({"variant": "mlmme", "seed": 1, "test": {}}))
    with pytest.raises(InputError, match="key 'provenance': expected a metrics file with"):
        report.load_runs([runs], report.read_section([config]))
    bad = yaml.safe_load(config.read_text())
    bad["retrieval"]["variants"]["mlmme"]["paper_rows"] = [{"paper": "x", "system": "y"}]
    config.write_text(yaml.safe_dump(bad))
    with pytest.raises(InputError, match="exactly one of 'table' and 'figure'"):
        report.load_runs([runs / "mlmme"], report.read_section([config]))


@pytest.mark.parametrize("configs", [["config.yaml"], ["config.yaml", "config/paper.yaml"]])
def test_configured_paper_rows_meet_the_paper_tables(configs, tmp_path):
    """Every table row a configured variant claims is spelled as in the paper's CSV."""
    root = Path(__file__).resolve().parents[1]
    paths = [root / c for c in configs]
    if not all(p.is_file() for p in paths):
        pytest.skip(f"{configs} not all present")
    section = report.read_section(paths)
    every = {"en-de": direction(50.0), "de-en": direction(50.0)}
    runs = []
    for name in section.get("variants") or {}:
        metrics = {
            "variant": name,
            "seed": 1,
            "test": {la: {"i2t": direction(40.0), "t2i": direction(35.0)}
                     for la in ("en", "de", "fr", "cs", "ja")},
            "c2c": every, "sts": {"2014": 0.7, "2015": 0.7},
            "alignment": {"en-de": 70.0, "en-ja": 80.0}, "provenance": {},
        }  # fmt: skip
        path = tmp_path / name / "seed1" / "metrics.json"
        path.parent.mkdir(parents=True)
        path.write_text(json.dumps(metrics))
        runs += report.load_runs([path], section)
    specs = {(s.paper, s.table): s for s in report.TABLES}
    for run in runs:
        for row in run.paper_rows:
            if "table" not in row:
                continue
            spec = specs[(row["paper"], row["table"])]
            frame = report.build_table(runs, spec, PAPER_TABLES)
            mine = frame[
                (frame.system == row["system"]) & (frame.variant_note == row["variant_note"])
            ]
            matched = mine.paper.notna() & mine.ours.notna()
            assert matched.any(), f"{run.variant}: {row} matches no cell of {spec.stem}"


def test_tables_in_the_papers_shape(setup, tmp_path):
    """One row per system, the paper's columns, each cell 'ours ± std (paper, difference)';
    the tidy CSV keeps one row per cell."""
    config, runs, _ = setup
    out = tmp_path / "tables"
    argv = ["--config", str(config), "--runs", str(runs), "--paper-tables", str(PAPER_TABLES)]
    assert main(["retrieval-tables", *argv, "--out", str(out)]) == 0
    tidy = pd.read_csv(out / "kadar2018_table2.csv")
    systems = list(dict.fromkeys(tidy.system))
    assert len(tidy) == 6 * len(systems)
    lines = (out / "kadar2018_table2.md").read_text().splitlines()
    header = next(line for line in lines if line.startswith("| system"))
    assert "image→text R@1" in header and "text→image R@10" in header
    rows = [line for line in lines if line.startswith("| ") and line != header]
    assert len(rows) == len(systems)  # one row per system of the paper and of ours
    c2c = next(row for row in rows if "| Bilingual + c2c" in row)
    assert "42.0 ± 2.8 (43.8, −1.8)" in c2c
    monolingual = next(row for row in rows if "| Monolingual" in row)
    assert "– (42.4)" in monolingual  # the paper's number alone where we have no run
    html = (out / "kadar2018_table2.html").read_text()
    assert html.startswith("<!DOCTYPE html>") and "Bilingual + c2c" in html
    tex = (out / "kadar2018_table2.tex").read_text()
    assert r"\pm" in tex and "multicolumn" in tex


def test_a_figure_without_runs_fails_instead_of_drawing_a_placeholder(setup, tmp_path):
    config, runs, _ = setup
    section = report.read_section([config])
    loaded = report.load_runs([runs / "mlmme"], section)  # maps onto no figure
    with pytest.raises(InputError, match="figure: 3"):
        report.kadar_figure3(loaded, tmp_path)
    with pytest.raises(InputError, match="figure: 2"):
        report.ame_figure2(loaded, tmp_path)
    assert not list(tmp_path.glob("*.png"))


def test_notes_name_runs_the_cap_stopped_while_still_improving(setup, tmp_path):
    """A run stopped by its epoch cap at its best validation says so in the notes."""
    config, runs, paper = setup
    fabricate(runs, "bilingual_c2c", 3, 42.0, stopped_by="cap", still_improving=True)
    loaded = report.load_runs([runs], report.read_section([config]))
    out = tmp_path / "tables"
    report.build_tables(loaded, paper, out)
    notes = (out / "kadar2018_table2.md").read_text()
    assert "bilingual_c2c (seed 3): stopped by its epoch/step cap while still improving" in notes
    assert "still improving" not in (out / "ame2019_table1.md").read_text()


def _stamp_runs(runs: Path, source: str) -> None:
    """Give every fabricated run the provenance a workflow run records (mlmm.origin)."""
    for path in runs.rglob("metrics.json"):
        metrics = json.loads(path.read_text())
        metrics["provenance"] = {
            "origin": {"data": {"multi30k": source, "coco": source}, "configs": ["config.yaml"]},
            "config": {"retrieval": {"backbone": "efficientnet_lite0", "dataset": "multi30k",
                                     "similarity": "cosine", "loss": "max"}},
        }  # fmt: skip
        metrics["device"] = "cpu"
        path.write_text(json.dumps(metrics))


def _figure_texts(monkeypatch) -> dict[str, list[str]]:
    """The title and caption each figure the report draws keeps for its metadata and caption
    file (mlmm.origin.stamp_figure), by file stem."""
    from mlmm.origin import figure_caption

    drawn: dict[str, list[str]] = {}

    def save(fig, stem):
        drawn[Path(stem).name] = list(figure_caption(fig).values())
        return []

    monkeypatch.setattr(report, "save_figure", save)
    return drawn


@pytest.mark.parametrize("source", ["demo", "mirror"])
def test_tables_and_figures_say_which_data_config_and_backbone_ran(
    setup, tmp_path, monkeypatch, source
):
    """Demo-world numbers beside the papers' are labelled demo in every format
    (md, tex, html, csv) and figure, with the backbone that ran (EfficientNet-Lite0, not the
    paper row's 'ResNet50 features'); runs on real data (provenance: mirror) never say demo."""
    config, runs, paper = setup
    _stamp_runs(runs, source)
    monkeypatch.delenv("MLMM_DATA", raising=False)  # what the runs recorded, not this job
    out = tmp_path / "tables"
    argv = ["--config", str(config), "--runs", str(runs), "--paper-tables", str(paper)]
    assert main(["retrieval-tables", *argv, "--out", str(out)]) == 0
    stem = out / "kadar2018_table2"
    texts = {suffix: stem.with_suffix(suffix).read_text() for suffix in (".md", ".tex", ".html")}
    csv = pd.read_csv(stem.with_suffix(".csv"), keep_default_na=False)
    for suffix, text in texts.items():
        assert "EfficientNet-Lite0" in text, suffix
        assert "configuration config.yaml" in text, suffix
        assert ("DEMO WORLD" in text) == (source == "demo"), suffix
        assert ("[demo world]" in text) == (source == "demo"), suffix
        assert ("real data" in text) == (source != "demo"), suffix
    assert "bilingual_c2c ran: EfficientNet-Lite0 image features" in texts[".md"]
    assert set(csv["data"]) == {"demo" if source == "demo" else "real"}
    assert set(csv["backbone"]) == {"efficientnet_lite0"} and set(csv["configs"]) == {"config.yaml"}

    drawn = _figure_texts(monkeypatch)
    loaded = report.load_runs([runs], report.read_section([config]))
    report.build_figures(loaded, tmp_path / "figures")
    assert set(drawn) == {"kadar2018_figure3", "ame2019_figure2"}
    for stem_name, figure_texts in drawn.items():
        text = " ".join(figure_texts)
        assert "EfficientNet-Lite0" in text, stem_name
        assert ("DEMO WORLD" in text and "[demo world]" in text) == (source == "demo"), text
        assert ("demo" in text.lower()) == (source == "demo"), text


def test_origin_of_runs_without_a_record_is_unrecorded_not_this_jobs(monkeypatch):
    """The environment the Snakefile exports; runs that recorded no origin are of unrecorded
    origin (their backbones still said), never labelled with this job's sources."""
    from mlmm.origin import Origin, environment

    env = environment(
        {"multi30k": {"source": "demo"}, "coco": {"source": "url"}, "ted": {"source": "demo"}},
        "/repo",
        ["/repo/config.yaml", "/repo/config/paper.yaml", "/elsewhere/mine.yaml"],
        True,
    )
    assert env == {
        "MLMM_DATA": "multi30k=demo,coco=url,ted=demo",
        "MLMM_CONFIGS": "config.yaml,config/paper.yaml,/elsewhere/mine.yaml,--config",
    }
    monkeypatch.setenv("MLMM_DATA", env["MLMM_DATA"])
    monkeypatch.setenv("MLMM_CONFIGS", env["MLMM_CONFIGS"])
    origin = Origin.of_runs([{"provenance": {"config": {"backbone": "resnet50"}}}])
    assert not origin.known and not origin.demo and origin.backbones == ["resnet50"]
    assert "ResNet-50" in origin.note() and "unrecorded origin" in origin.note()
    assert "DEMO WORLD" not in origin.note() and not origin.configs
    assert "unrecorded origin" in Origin.of_runs([]).note()
    recorded = Origin.current(["coco"])
    assert recorded.data == {"coco": "url"} and recorded.configs == env["MLMM_CONFIGS"].split(",")


def test_generated_data_in_the_real_layouts_is_never_labelled_real(monkeypatch, tmp_path):
    """The paper miniature's sources are url/path/files (the real layouts), so the
    sources alone read "real data"; the marker mlmm demo-paper-layouts leaves in the working
    directory makes every source ':generated', and the notes, titles and CSV columns say so."""
    import pandas as pd

    from mlmm.origin import GENERATED_MARKER, Origin, environment

    config = {"multi30k": {"source": "url"}, "coco": {"source": "files"}, "ted": {"source": "path"}}
    monkeypatch.chdir(tmp_path)
    assert (
        environment(config, "/repo", [], False)["MLMM_DATA"] == "multi30k=url,coco=files,ted=path"
    )
    (tmp_path / GENERATED_MARKER).write_text("generated", encoding="utf-8")
    env = environment(config, "/repo", [], False)
    assert env["MLMM_DATA"] == "multi30k=url:generated,coco=files:generated,ted=path:generated"
    monkeypatch.setenv("MLMM_DATA", env["MLMM_DATA"])
    origin = Origin.current(["multi30k", "coco", "ted"])
    assert origin.generated and not origin.demo
    assert "GENERATED DATA in the real layouts" in origin.note()
    assert "real data" not in origin.note()
    assert origin.title("Table 2") == "Table 2 [generated data]"
    assert origin.columns()["data"] == "generated"
    table = pd.DataFrame([{"x": 1, **origin.columns()}])
    assert Origin.of_table(table).generated


@pytest.mark.parametrize("configs", [["config.yaml"], ["config.yaml", "config/paper.yaml"]])
def test_a_written_record_reads_back_as_the_configuration_it_records(configs, tmp_path):
    """The tables', figures' and claims' jobs read the retrieval section from the record the
    workflow writes (JSON); every value, small floats such as AME's COCO rate 6e-05 included,
    must read back as the configuration holds it, or every run is refused as another config's."""
    from mlmm.records import write_record

    root = Path(__file__).resolve().parents[1]
    retrieval = report.read_section([root / c for c in configs])
    assert retrieval["variants"]
    numbers = {"small_numbers": [6e-05, 1e-6, 2.5e-10, 1e21]}
    retrieval = {**retrieval, "defaults": {**retrieval.get("defaults", {}), **numbers}}
    record = write_record(tmp_path / "retrieval_tables.json", {"retrieval": retrieval})
    assert report.read_section([record]) == json.loads(json.dumps(retrieval))
