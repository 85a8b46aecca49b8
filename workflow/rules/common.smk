"""Paths and helpers shared by every rules file; each stage appends its finished products to
FINAL_TARGETS, which `rule all` requests."""

from pathlib import Path

RESULTS = Path(config["results"])
LOGS = RESULTS / "logs"
BENCHMARKS = RESULTS / "benchmarks"
PAPER_TABLES = config["paper_tables"] or ""
FINAL_TARGETS = []
