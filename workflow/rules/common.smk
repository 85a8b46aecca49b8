"""Paths and helpers shared by every rules file; each stage appends its finished products to
FINAL_TARGETS, which `rule all` requests.

Repository files (manifests, shipped paper tables, report captions, claims registries) are
found with Snakemake's source-path API, so the workflow runs from any working directory
(`snakemake -d`) and from any source (a path, an HTTP URL, github(...), as a module); outputs
go under `results` relative to the working directory.
"""

import os
from pathlib import Path
from shlex import (
    quote,
)  # every path in a shell command: `:q`, or quote() inside options

from snakemake.exceptions import WorkflowError

import mlmm.local_data as local_data
import mlmm.shipped as shipped
from mlmm.catalogue import TABLE_SUFFIXES
from mlmm.records import write_record
from mlmm.slurm import nvidia_present

# The rules files read plain data of the installed package (mlmm.catalogue,
# mlmm.retrieval.config: no imports beyond the standard library) while they are parsed.

RESULTS = Path(config["results"])
LOGS = RESULTS / "logs"
BENCHMARKS = RESULTS / "benchmarks"
# Downloads (COCO archives, fastText vectors, MUSE, TED, Multi30K) are kept apart from results:
# `make clean` deletes results/ but keeps them.
DOWNLOADS = Path(config["downloads"])


def repository_path(path):
    """A local copy of a file of the workflow's source (e.g. a manifest) named relative to the
    repository root (this file is workflow/rules/common.smk): the file itself for a local
    source, Snakemake's cached download for a remote one. An absolute path stays as it is.
    """
    if os.path.isabs(path):
        return Path(path)
    return Path(workflow.source_path(f"../../{path}"))


# Every local data set the configuration reads (copies that cannot be downloaded), by config
# key, declared by the rules files; each rule that reads one names it in its input
# (`local_data_input`), so that a job is planned only with its data set in place and a target
# needs only the data sets of its own jobs (mlmm.local_data).
LOCAL_DATA = {}


def require_local_data(key, path, what, expected=()):
    """Declares the local data set at `path` (config `key`) and the files expected inside it."""
    LOCAL_DATA[key] = local_data.LocalData(key, Path(path), what, tuple(expected))


def local_data_input(keys):
    """An input function checking, when a job is planned, the declared local data sets it
    reads (`keys`: config keys, or a function of the wildcards giving them); it adds no input
    file (a user's copy is identified by the params that need it). A missing or incomplete set
    stops the planning with one line naming it; planning the default target, the message
    names every declared set that is missing, as the whole configuration needs them all.
    """

    def check(wildcards):
        wanted = keys(wildcards) if callable(keys) else keys
        targets = set(workflow.dag_settings.targets)
        local_data.check_job_data(
            [LOCAL_DATA[key] for key in wanted if key in LOCAL_DATA],
            list(LOCAL_DATA.values()) if not targets or "all" in targets else [],
        )
        return []

    return check


# Configuration records a stage command reads from a file (`--config FILE`), not its command
# line: written when a job needing one is planned, rewritten only when it changes (an input
# whose mtime follows the record), under results/records/ (mlmm.records).
RECORDS = RESULTS / "records"


# The GPU rules' need, stated in their own `resources:` (profiles choose partitions and
# runtimes only). NVIDIA_PRESENT: this machine has a card.
NVIDIA_PRESENT = nvidia_present()
# the name and device(wildcards) of every GPU rule (those whose resources call gpu_need)
GPU_RULES = {}


def gpu_need(rule, device, shared=False):
    """The `gpu` resource of the jobs of GPU rule ``rule``, in cards (``device(wildcards)``, the
    stage's configured device): one, the need every cluster executor submits (`--gpus=1` under
    SLURM). Run here by the local executor, a job takes none where it will not use one (no
    NVIDIA device, or `device: cpu`: such jobs run side by side on the CPU), and a ``shared``
    rule's jobs share the card through `gpu_slots` instead (profiles/default). A profile or
    --set-resources that sets 0 under a cluster executor stops the run (Snakefile onstart).
    """
    GPU_RULES[rule] = device

    def need(wildcards):
        local = workflow.local_exec and not workflow.remote_exec and not workflow.dryrun
        if local and (shared or not NVIDIA_PRESENT or device(wildcards) == "cpu"):
            return 0
        return 1

    return need


def gpu_slots(device):
    """`gpu_slots` of a shared GPU rule's local jobs: one of the card's N slots when this
    machine has a card and the stage may use it (profiles/default sets N)."""
    return lambda wildcards: int(NVIDIA_PRESENT and device(wildcards) != "cpu")


def workdir_relative(path):
    """`path` relative to the working directory where it lies inside it (a repository file of a
    checkout run from its root), else as it is: an input named so is the same input in a moved
    checkout or a new clone, and reruns nothing there."""
    path, here = Path(path), Path.cwd()
    return (
        path.relative_to(here)
        if path.is_absolute() and path.is_relative_to(here)
        else path
    )


# The papers' tables. null: those the package ships (resources/paper_tables in the repository;
# package data of the installed mlmm, so any deployment of the workflow has them:
# mlmm.shipped), which the table commands read when given no --paper-tables: the rules pass
# none. A directory: its CSVs are passed to the commands as the rules' inputs (PAPER_OPTION),
# never as a parameter, so no job's command names where the checkout or the tables lie.
PAPER_TABLES = Path(config["paper_tables"]) if config["paper_tables"] else None
_PAPER_DIR = PAPER_TABLES or shipped.paper_tables()
if not _PAPER_DIR.is_dir():
    raise WorkflowError(
        f"config paper_tables: expected a directory of <paper>_table<N>.csv, "
        f"found no directory {_PAPER_DIR}"
    )
# The papers' CSVs, by paper: inputs (`paper`) of the table rules that read them, so that a
# corrected number reruns the table (a parameter would not); the shipped ones too.
PAPER_CSVS = {}
for _csv in sorted(_PAPER_DIR.glob("*_table*.csv")):
    PAPER_CSVS.setdefault(_csv.name.split("_table")[0], []).append(
        workdir_relative(_csv)
    )
# The table commands' option naming the configured tables: the rule's input `paper`.
PAPER_OPTION = " --paper-tables {input.paper:q} " if PAPER_TABLES else " "

FINAL_TARGETS = []

# The report (`snakemake --report`) shows every paper table as its HTML page and every figure as
# its PNG, each with the caption workflow/report/<stem>.rst, grouped by paper (a caption path
# is relative to the rules file that defines the rule: Snakemake reads it as a source file).
REPORT_CAPTIONS = Path("../report")
PAPER_NAMES = {
    "kadar2018": "Kádár et al. 2018",
    "calixto2017": "Calixto & Liu 2017",
    "ame2019": "Mohammadshahi et al. 2019 (AME)",
    "rajendran2016": "Rajendran et al. 2016",
}


def table_files(stem):
    """Every file a table command writes for a table (mlmm.tables.write_table): tidy CSV;
    Markdown, LaTeX and HTML in the paper's shape; the LaTeX companions and notes file.
    """
    return [Path(f"{stem}{suffix}") for suffix in TABLE_SUFFIXES]


def reported(paths):
    """Outputs of a table or figure rule, the HTML page / PNG of each flagged for the report."""
    flagged = []
    for path in map(Path, paths):
        if path.suffix in (".html", ".png"):
            kind = "Tables" if path.suffix == ".html" else "Figures"
            kind = "Claims" if path.stem.endswith("_claims") else kind
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
