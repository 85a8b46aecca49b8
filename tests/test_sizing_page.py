"""docs/workflow.md's per-paper sizing section is generated (benchmarks/sizing_page.py) from
the paper configuration's dry runs and benchmarks/gpu_hours.py's CSV: it fails when stale."""

from __future__ import annotations

import subprocess
import sys

from helpers.workflow import REPO, tool_env


def test_the_sizing_section_is_current():
    proc = subprocess.run(
        [sys.executable, str(REPO / "benchmarks/sizing_page.py"), "--check"],
        env=tool_env(), capture_output=True, text=True, timeout=600,
    )  # fmt: skip
    assert proc.returncode == 0, (proc.stdout + proc.stderr)[-2000:]
