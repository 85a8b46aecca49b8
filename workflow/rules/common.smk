"""Paths and helpers shared by every rules file; each stage appends its finished products to
FINAL_TARGETS, which `rule all` requests.

Repository files (manifests, shipped paper tables, the workflow's own `src/`) are found from
the Snakefile's directory, so the workflow runs from any working directory (`snakemake -d`);
outputs go under `results` relative to the working directory.
"""

from pathlib import Path
from shlex import (
    quote,
)  # every path in a shell command: `:q`, or quote() inside options

from snakemake.exceptions import WorkflowError

import mlmm.local_data as local_data

REPOSITORY = Path(workflow.basedir)
# The rules files read plain data of the package (mlmm.catalogue, mlmm.retrieval.config: no
# imports beyond the standard library) while they are parsed, from this checkout's src/, which
# the Snakefile puts first on sys.path (a Snakemake from conda or pipx has no mlmm of its own).

RESULTS = Path(config["results"])
LOGS = RESULTS / "logs"
BENCHMARKS = RESULTS / "benchmarks"
# Downloads (COCO archives, fastText vectors, MUSE, TED, Multi30K) are kept apart from results:
# `make clean` deletes results/ but keeps them.
DOWNLOADS = Path(config["downloads"])


def repository_path(path):
    """A relative path of a repository file (e.g. a manifest), from the repository root."""
    path = Path(path)
    return path if path.is_absolute() else REPOSITORY / path


# Every local data set the configuration reads (copies that cannot be downloaded), declared by
# the rules files and checked at once by the Snakefile after the last one (mlmm.local_data): a
# missing or incomplete copy is found by `snakemake -n`, all of them in one message, not by a
# job hours into the run.
LOCAL_DATA = []


def require_local_data(key, path, what, expected=()):
    """Declares the local data set at `path` (config `key`) and the files expected inside it."""
    LOCAL_DATA.append(local_data.LocalData(key, Path(path), what, tuple(expected)))


# null: the papers' tables shipped in resources/paper_tables
PAPER_TABLES = Path(config["paper_tables"] or REPOSITORY / "resources/paper_tables")
if not PAPER_TABLES.is_dir():
    raise WorkflowError(
        f"config paper_tables: expected a directory of <paper>_table<N>.csv, "
        f"found no directory {PAPER_TABLES}"
    )
FINAL_TARGETS = []

# The report (`snakemake --report`) shows every paper table as its HTML page and every figure as
# its PNG, each with the caption workflow/report/<stem>.rst, grouped by paper.
REPORT_CAPTIONS = REPOSITORY / "workflow/report"
PAPER_NAMES = {
    "kadar2018": "Kádár et al. 2018",
    "calixto2017": "Calixto & Liu 2017",
    "ame2019": "Mohammadshahi et al. 2019 (AME)",
    "rajendran2016": "Rajendran et al. 2016",
}


def table_files(stem):
    """A table's files: tidy CSV, and Markdown, LaTeX and HTML in the paper's shape."""
    return [Path(f"{stem}.{suffix}") for suffix in ("csv", "md", "tex", "html")]


def reported(paths):
    """Outputs of a table or figure rule, the HTML page / PNG of each flagged for the report."""
    flagged = []
    for path in map(Path, paths):
        if path.suffix in (".html", ".png"):
            kind = "Tables" if path.suffix == ".html" else "Figures"
            paper, item = path.stem.split("_", 1)  # kadar2018, table2 / table1_heatmap
            path = report(
                path,
                caption=str(REPORT_CAPTIONS / f"{path.stem}.rst"),
                category=PAPER_NAMES[paper],
                subcategory=kind,
                # listed by name, not by file path: "Table 2", "Table 1 heatmap", "Figure 3"
                labels={
                    "paper": PAPER_NAMES[paper],
                    "item": item.replace("_", " ")
                    .replace("table", "Table ")
                    .replace("figure", "Figure "),
                },
            )
        flagged.append(path)
    return flagged
