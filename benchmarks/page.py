"""Writes docs/benchmarks.md from the benchmarks' CSVs, so that the figures a user reads are the
ones a benchmark wrote, each with its date and the machine it ran on.

    .venv/bin/python benchmarks/page.py [--csv-dir results/benchmarks] [--out docs/benchmarks.md]

Each ``results/benchmarks/*.csv`` (the benchmark scripts' outputs; Snakemake's per-job timings
live in subdirectories and are not read) becomes one section: the script that wrote it, the
file's date, the machine (its ``host``/``device`` columns where the benchmark recorded them,
else this machine's description) and the table itself.
"""

from __future__ import annotations

import argparse
import datetime as dt
import os
import platform
from pathlib import Path

import pandas as pd

from mlmm.io import read_csv

ROOT = Path(__file__).resolve().parents[1]
MACHINE_COLUMNS = ("device", "gpu")  # an accelerator a benchmark named in its own rows


def this_machine() -> str:
    """Processor, core count and memory of the machine running this script."""
    model = platform.processor() or platform.machine()
    cpuinfo = Path("/proc/cpuinfo")
    if cpuinfo.is_file():
        names = [line.split(":", 1)[1].strip() for line in cpuinfo.read_text().splitlines()
                 if line.startswith("model name")]  # fmt: skip
        model = names[0] if names else model
    memory = os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES") / 2**30
    return f"{model}, {os.cpu_count()} cores, {memory:.0f} GiB, {platform.system()}"


def machine_of(frame: pd.DataFrame) -> str:
    """The accelerator a CSV names in its own columns, else this machine (the page is made on the
    machine that ran the benchmarks); a CSV that names only the CPU as its device gets this
    machine's description beside it, since "cpu" alone says nothing of the processor."""
    values = {
        column: sorted(map(str, frame[column].dropna().unique()))
        for column in MACHINE_COLUMNS
        if column in frame.columns and frame[column].notna().any()
    }
    if not values:
        return this_machine()
    named = "; ".join(f"{column} {', '.join(found)}" for column, found in values.items())
    only_cpu = all(value.lower().startswith("cpu") for found in values.values() for value in found)
    return f"{named} ({this_machine()})" if only_cpu else named


def script_of(stem: str) -> Path | None:
    """``benchmarks/STEM.py``, else the script whose name the CSV's name starts with (a
    script's second CSV: ``guards_stages.csv`` is ``guards.py``'s); None when there is none."""
    parts = stem.split("_")
    for end in range(len(parts), 0, -1):
        script = ROOT / "benchmarks" / f"{'_'.join(parts[:end])}.py"
        if script.is_file():
            return script
    return None


def section(path: Path) -> str:
    frame = read_csv(path)
    written = dt.datetime.fromtimestamp(path.stat().st_mtime, dt.UTC).strftime("%Y-%m-%d %H:%M UTC")
    script = script_of(path.stem)
    source = f"`benchmarks/{script.name}`" if script is not None else "a benchmark script"
    return "\n".join([
        f"## {path.stem}", "",
        f"Written by {source} on {written}; machine: {machine_of(frame)}.", "",
        frame.to_markdown(index=False, floatfmt=".4g"), "",
    ])  # fmt: skip


def page(csvs: list[Path]) -> str:
    today = dt.datetime.now(dt.UTC).strftime("%Y-%m-%d")
    head = [
        "# Benchmarks", "",
        f"Generated on {today} by `benchmarks/page.py` from `results/benchmarks/*.csv`;",
        "do not edit by hand. Each benchmark compares against a baseline measured in the same",
        "run: on a shared machine the ratios are the result, not the seconds. Rerun a",
        "benchmark, then this script.", "",
    ]  # fmt: skip
    if not csvs:
        head.append("No benchmark has written a CSV yet.\n")
    return "\n".join(head + [section(path) for path in csvs])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--csv-dir", type=Path, default=ROOT / "results/benchmarks")
    parser.add_argument("--out", type=Path, default=ROOT / "docs/benchmarks.md")
    args = parser.parse_args()
    # a document of the repository, not a pipeline artefact: no write record beside it
    args.out.write_text(page(sorted(args.csv_dir.glob("*.csv"))), encoding="utf-8")
    print(f"wrote {args.out}")


if __name__ == "__main__":
    main()
