"""Retrieval tables and figures beside the papers' numbers, from the metrics.json of every
configured variant x seed (rule `train_retrieval`, retrieval.smk): Kadar 2018 Tables 2-7 and
Figure 3, Calixto 2017 Tables 1-2, AME 2019 Tables 1, 2, 5 and Figure 2. Which paper rows a
variant stands for is its `paper_rows` in config.yaml.
"""

import hashlib
import json

from mlmm.catalogue import CLAIM_PAPERS, FIGURES, TABLES

# every configured variant x seed (retrieval_common.smk), and the section naming their paper rows
REPORT_RUNS = RETRIEVAL_RUN_FILES
# their per-query outcomes (queries.npz beside each metrics.json): the cells' intervals, claims
REPORT_QUERIES = [path.with_name("queries.npz") for path in RETRIEVAL_RUN_FILES]
# without the throughput settings (threads, the records' devices): they change no table
REPORT_SECTION = json.dumps(
    {
        key: (
            {name: without_throughput(v) for name, v in value.items()}
            if key == "variants"
            else without_throughput(value) if key == "defaults" else value
        )
        for key, value in RETRIEVAL.items()
        if key != "threads"
    }
)
# its digest stands in the jobs' params, so that a changed section reruns them and the report's
# job panel shows a short key, not the section (which the jobs read from REPORT_RECORD's file)
REPORT_SECTION_DIGEST = hashlib.sha256(REPORT_SECTION.encode("utf-8")).hexdigest()[:16]
# the tables', figures' and claims' jobs read it from one file (written when one is planned)
REPORT_RECORD = lambda wildcards: write_record(
    RECORDS / "retrieval_tables.json", {"retrieval": json.loads(REPORT_SECTION)}
)
REPORT_TABLES = RESULTS / "tables"
REPORT_FIGURES = RESULTS / "figures"
RETRIEVAL_TABLE_FILES = [
    path for spec in TABLES for path in table_files(REPORT_TABLES / spec.stem)
]
RETRIEVAL_FIGURE_FILES = [
    REPORT_FIGURES / f"{paper}_figure{number}.{suffix}"
    for paper, number in FIGURES.items()
    for suffix in ("png", "pdf")
]
# One table job and one figure job per paper, reading the runs of the variants whose
# paper_rows name that paper (every run where none does): a paper's tables plan and run with
# that paper's data only.
REPORT_PAPERS = list(dict.fromkeys(spec.paper for spec in TABLES))
REPORT_PAPER_RUNS = {
    paper: [
        path
        for path in RETRIEVAL_RUN_FILES
        if any(
            row["paper"] == paper
            for row in RETRIEVAL_RECORDS[path.parent.parent.name]["paper_rows"]
        )
    ]
    or RETRIEVAL_RUN_FILES
    for paper in REPORT_PAPERS
}


for _paper in REPORT_PAPERS:

    rule:
        name:
            f"retrieval_tables_{_paper}"
        input:
            runs=REPORT_PAPER_RUNS[_paper],
            record=REPORT_RECORD,
            paper=PAPER_CSVS.get(_paper, []),
            queries=[
                path.with_name("queries.npz") for path in REPORT_PAPER_RUNS[_paper]
            ],
        output:
            reported(
                [
                    path
                    for spec in TABLES
                    if spec.paper == _paper
                    for path in table_files(REPORT_TABLES / spec.stem)
                ]
            ),
        log:
            LOGS / f"report/retrieval_tables_{_paper}.log",
        conda:
            "../../envs/core.yaml"
        resources:
            mem_mb=4000,
            runtime=60,
        params:
            section=REPORT_SECTION_DIGEST,
            out=REPORT_TABLES,
            subset=_paper,
        shell:
            (
                "mlmm retrieval-tables --config {input.record:q} --runs {input.runs:q}"
                + PAPER_OPTION
                + "--papers {params.subset} --out {params.out:q} > {log:q} 2>&1"
            )


for _paper, _number in FIGURES.items():

    rule:
        name:
            f"retrieval_figures_{_paper}"
        input:
            runs=REPORT_PAPER_RUNS[_paper],
            record=REPORT_RECORD,
        output:
            reported(
                [
                    REPORT_FIGURES / f"{_paper}_figure{_number}.{suffix}"
                    for suffix in ("png", "pdf")
                ]
            ),
        log:
            LOGS / f"report/retrieval_figures_{_paper}.log",
        conda:
            "../../envs/core.yaml"
        resources:
            mem_mb=4000,
            runtime=60,
        params:
            section=REPORT_SECTION_DIGEST,
            out=REPORT_FIGURES,
            subset=_paper,
        shell:
            "mlmm retrieval-figures --config {input.record:q} --runs {input.runs:q} "
            "--papers {params.subset} --out {params.out:q} > {log:q} 2>&1"


# Each paper's claims (resources/claims/<paper>.yaml, package data: mlmm.shipped) tested on the
# runs: mlmm.results.claims
CLAIM_REGISTRIES = [
    workdir_relative(shipped.claims_registry(paper)) for paper in CLAIM_PAPERS
]
CLAIM_FILES = [
    path
    for paper in CLAIM_PAPERS
    for path in [
        *table_files(REPORT_TABLES / f"{paper}_claims"),
        REPORT_FIGURES / f"{paper}_claims.png",
        REPORT_FIGURES / f"{paper}_claims.pdf",
    ]
]


rule claims:
    input:
        runs=REPORT_RUNS,
        record=REPORT_RECORD,
        queries=REPORT_QUERIES,
        registries=CLAIM_REGISTRIES,
        nmt=NMT_SCORE_FILES,
        nmt_sentences=NMT_SENTENCE_FILES,
        # Rajendran et al. 2016: TED classifier results with their per-document decisions,
        # Table 5 runs with their MIC test ranks (ted.smk, pivot.smk)
        ted_cldc=TED_CLDC_FILES,
        ted_nb=TED_DIR / "nb.json",
        ted_documents=TED_DOCUMENTS,
        pivot=PIVOT_RUN_FILES,
        pivot_queries=[path.with_name("queries.npz") for path in PIVOT_RUN_FILES],
        paper=[path for paths in PAPER_CSVS.values() for path in paths],
    output:
        reported(CLAIM_FILES),
    log:
        LOGS / "report/claims.log",
    benchmark:
        BENCHMARKS / "report/claims.tsv"
    conda:
        "../../envs/core.yaml"
    resources:
        mem_mb=4000,
        runtime=60,
    params:
        section=REPORT_SECTION_DIGEST,
        tables=REPORT_TABLES,
        figures=REPORT_FIGURES,
    shell:
        (
            "mlmm claims --config {input.record:q} --runs {input.runs:q} "
            "--registry {input.registries:q} --nmt-runs {input.nmt:q}"
            + PAPER_OPTION
            + "--ted-cldc {input.ted_cldc:q} --ted-nb {input.ted_nb:q} "
            "--pivot-runs {input.pivot:q} --tables {params.tables:q} "
            "--figures {params.figures:q} > {log:q} 2>&1"
        )


# The report links the configuration instead of dumping it in every job's panel: the resolved
# configuration (every file merged, defaults filled in), rewritten whenever it changes.
CONFIGURATION_FILE = RESULTS / "configuration.yaml"


rule configuration:
    input:
        record=lambda wildcards: write_record(RECORDS / "configuration.json", config),
    output:
        report(
            CONFIGURATION_FILE,
            caption=str(REPORT_CAPTIONS / "configuration.rst"),
            category="Configuration",
            labels={"item": "resolved configuration"},
        ),
    log:
        LOGS / "report/configuration.log",
    conda:
        "../../envs/core.yaml"
    resources:
        mem_mb=1000,
        runtime=5,
    shell:
        "mlmm configuration {input.record:q} --out {output:q} > {log:q} 2>&1"


FINAL_TARGETS += RETRIEVAL_TABLE_FILES + RETRIEVAL_FIGURE_FILES + CLAIM_FILES
FINAL_TARGETS.append(CONFIGURATION_FILE)
