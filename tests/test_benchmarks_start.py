"""Every benchmark script the README lists starts (imports resolve, arguments parse): a
renamed package function once broke benchmarks/coco.py without any test noticing."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

BENCHMARKS = sorted((Path(__file__).resolve().parents[1] / "benchmarks").glob("*.py"))


@pytest.mark.parametrize("script", BENCHMARKS, ids=[p.stem for p in BENCHMARKS])
def test_benchmark_script_starts(script):
    out = subprocess.run([sys.executable, str(script), "--help"], capture_output=True, text=True)
    assert out.returncode == 0, out.stderr[-2000:]
    assert "usage" in out.stdout
