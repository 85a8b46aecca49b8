"""Every benchmark script the README lists starts (imports resolve, arguments parse), so that a
renamed package function cannot break one unnoticed."""

from __future__ import annotations

import importlib.util
import subprocess
import sys
from pathlib import Path

import pandas as pd
import pytest

BENCHMARKS = sorted((Path(__file__).resolve().parents[1] / "benchmarks").glob("*.py"))


@pytest.mark.parametrize("script", BENCHMARKS, ids=[p.stem for p in BENCHMARKS])
def test_benchmark_script_starts(script):
    out = subprocess.run([sys.executable, str(script), "--help"], capture_output=True, text=True)
    assert out.returncode == 0, out.stderr[-2000:]
    assert "usage" in out.stdout


def _scale_module():
    path = Path(__file__).resolve().parents[1] / "benchmarks" / "scale.py"
    spec = importlib.util.spec_from_file_location("bench_scale", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_scale_quick_mode_writes_its_csv_exponents_and_plot(tmp_path):
    """The rehearsal's quick mode (1/16 and 1/8) on two cheap stages: one row a stage and
    fraction, each stage measured in its own process (its own peak memory)."""
    out = tmp_path / "scale.csv"
    run = subprocess.run(
        [sys.executable, str(BENCHMARKS[0].parent / "scale.py"), "--quick", "--stages",
         "nbest_mira", "multi30k_validate", "--work", str(tmp_path / "work"), "--out", str(out)],
        capture_output=True, text=True,
    )  # fmt: skip
    assert run.returncode == 0, run.stderr[-2000:]
    frame = pd.read_csv(out)
    assert sorted(zip(frame["stage"], frame["fraction"], strict=True)) == [
        ("multi30k_validate", 0.0625), ("multi30k_validate", 0.125),
        ("nbest_mira", 0.0625), ("nbest_mira", 0.125)]  # fmt: skip
    assert (frame["seconds"] > 0).all() and (frame["peak_rss_mb"] > frame["start_rss_mb"] - 1).all()
    assert (frame.groupby("stage")["size"].apply(lambda s: s.iloc[1] > s.iloc[0])).all()
    exponents = pd.read_csv(tmp_path / "scale_exponents.csv")
    assert set(exponents["stage"]) == {"nbest_mira", "multi30k_validate"}
    assert exponents["time_exponent"].notna().all()
    assert (tmp_path / "scale.png").stat().st_size > 0


def test_scale_exponent_is_the_log_log_slope():
    scale = _scale_module()
    frame = pd.DataFrame({"stage": "s", "unit": "items", "fraction": [0.25, 0.5, 1.0],
                          "size": [100, 200, 400], "seconds": [1.0, 4.0, 16.0],
                          "peak_rss_mb": [110.0, 120.0, 140.0],
                          "start_rss_mb": 100.0})  # fmt: skip
    row = scale.exponents(frame).iloc[0]
    assert row["time_exponent"] == pytest.approx(2.0)
    assert row["memory_exponent"] == pytest.approx(1.0)
    assert row["seconds"] == 16.0 and row["peak_rss_mb"] == 140


def test_gpu_hours_takes_full_size_costs_from_the_scale_csv(tmp_path):
    """gpu_hours.py's non-network rows: the fraction-1 figure, else the largest fraction's
    seconds scaled up by the stage's fitted exponent; every stage it counts is a scale.py
    stage."""
    sys.path.insert(0, str(BENCHMARKS[0].parent))
    gpu_hours = importlib.import_module("gpu_hours")
    pd.DataFrame({"stage": ["a", "a", "b"], "fraction": [0.25, 1.0, 0.5],
                  "seconds": [1.0, 3.0, 2.0], "peak_rss_mb": [10, 30, 20]}).to_csv(
        tmp_path / "scale.csv", index=False)  # fmt: skip
    pd.DataFrame({"stage": ["b"], "time_exponent": [2.0]}).to_csv(
        tmp_path / "scale_exponents.csv", index=False
    )
    costs = gpu_hours.scale_costs(tmp_path / "scale.csv")
    assert costs["a"]["seconds"] == 3.0 and costs["a"]["peak_mb"] == 30
    assert costs["b"]["seconds"] == pytest.approx(8.0)
    counts = gpu_hours.stage_counts(gpu_hours.paper_config(), 30)
    assert set(counts) <= set(_scale_module().STAGES)
    assert all(n >= 1 for n, _ in counts.values())


def _page(csv_dir: Path) -> str:
    """benchmarks/page.py run on the CSVs of ``csv_dir``: the page it writes."""
    page = csv_dir / "benchmarks.md"
    script = Path(__file__).resolve().parents[1] / "benchmarks" / "page.py"
    done = subprocess.run(
        [sys.executable, str(script), "--csv-dir", str(csv_dir), "--out", str(page)],
        capture_output=True, text=True,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr[-2000:]
    return page.read_text(encoding="utf-8")


def test_benchmarks_page_carries_each_csv_with_its_date_and_machine(tmp_path):
    pd.DataFrame({"method": ["ours", "baseline"], "seconds": [1.5, 3.0]}).to_csv(
        tmp_path / "speed.csv", index=False
    )
    pd.DataFrame({"device": ["cuda: NVIDIA H200"], "images_per_s": [812.0]}).to_csv(
        tmp_path / "features.csv", index=False
    )
    text = _page(tmp_path)
    assert text.index("## features") < text.index("## speed")
    assert "machine: device cuda: NVIDIA H200." in text
    assert "cores" in text.split("## speed")[1]  # no device column: this machine's description
    assert "| ours     |       1.5 |" in text


def test_benchmarks_page_describes_the_processor_of_a_csv_whose_device_is_the_cpu(tmp_path):
    pd.DataFrame({"device": ["cpu"], "images_per_s": [5.9]}).to_csv(
        tmp_path / "features.csv", index=False
    )
    line = next(x for x in _page(tmp_path).splitlines() if x.startswith("Written by"))
    assert "machine: device cpu (" in line and "cores" in line


def test_benchmarks_page_names_the_script_of_a_second_csv(tmp_path):
    """A script's second CSV (guards.py writes guards.csv and guards_stages.csv) is credited
    to it, not to "a benchmark script"."""
    pd.DataFrame({"stage": ["features"], "guard_share": [0.001]}).to_csv(
        tmp_path / "guards_stages.csv", index=False
    )
    assert "Written by `benchmarks/guards.py`" in _page(tmp_path)


def test_guards_quick_mode_writes_a_row_per_stage_with_its_share(tmp_path):
    """benchmarks/guards.py --quick: the per-step rows, and per stage of the paper
    configuration (those needing no Multi30K here) its guards' seconds, the stage's time where
    a rate is recorded, the share, and the time at which the share would reach 2 %; a feature
    extraction's writer thread apart from what its end waits for; the extraction loop's
    blocked seconds with its shards saved in the loop and on the writer thread."""
    script = Path(__file__).resolve().parents[1] / "benchmarks" / "guards.py"
    pd.DataFrame(
        {"encoders": ["EmbeddingBag over CSR rows (mlmm)"], "run_hours_20_epochs": [2.0]}
    ).to_csv(tmp_path / "pivot.csv", index=False)
    done = subprocess.run(
        [sys.executable, str(script), "--quick", "--dir", str(tmp_path), "--stages", "ted",
         "pivot", "features", "--pivot-csv", str(tmp_path / "pivot.csv"), "--out",
         str(tmp_path / "guards.csv"), "--stages-out", str(tmp_path / "stages.csv")],
        capture_output=True, text=True,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr[-2000:]
    steps = pd.read_csv(tmp_path / "guards.csv")
    assert list(steps["step"]) == ["write", "read", "read_hashing_every_time"]
    stages = pd.read_csv(tmp_path / "stages.csv")
    assert [s.split(" ")[0] for s in stages["stage"]] == ["features"] * 5 + [
        "ted-train,", "pivot-train,"]  # fmt: skip
    assert (stages["guard_seconds"] > 0).all()
    features = stages.iloc[0]
    assert "(writer thread)" in features["guarded"] and "(waited for)" in features["guarded"]
    assert 0 < features["gpu_guard_seconds"] < features["guard_seconds"]
    stages = stages.iloc[5:]
    pivot = stages.iloc[1]
    assert pivot["stage_seconds"] == pytest.approx(2.0 * 3600)  # the paper's 20 epochs
    assert pivot["guard_share"] == pytest.approx(pivot["guard_seconds"] / pivot["stage_seconds"])
    assert (stages["stage_seconds_at_2pct"] == stages["guard_seconds"] / 0.02).all()
    assert "model.pt" in stages.iloc[0]["guarded"]
    loop = pd.read_csv(tmp_path / "guards_loop.csv")
    assert list(loop["saving"]) == ["in the loop", "writer thread"]
    assert (loop[["blocked_in_loop_s", "blocked_at_end_s"]] >= 0).all().all()
    assert not any(tmp_path.glob("mlmm-guards-*"))  # the scratch files are gone
