"""TED cross-lingual document classification (Rajendran Tables 1, 3, 4).

corpus (demo | path | url) -> bag-of-words -> one Bridge CorrNet per lambda -> lambda per
source language -> perceptrons per source language (English and each language paired with
it: 12 jobs, 132 train/test pairs for the paper's 11) and Naive Bayes -> Tables 1, 3, 4 and
the Table 1 heatmap. See docs/ted.md.
"""

from mlmm.records import record_of

TED = config["ted"]
TED_DIR = RESULTS / "ted"
TED_RUNS = {f"lambda{value:g}": value for value in TED["lambdas"]}
TED_CORPUS = f"--languages {' '.join(TED['languages'])} --corpus-codes " + " ".join(
    f"{ours}={theirs}" for ours, theirs in TED["corpus_codes"].items()
)
# Training languages of the classifiers: English and every language paired with it.
TED_SOURCES = ["en", *TED["languages"]]
# the classifiers' per-document decisions (mlmm.outcomes): the tables' intervals, the claims
TED_CLDC_FILES = expand(TED_DIR / "cldc/{ted_source}.json", ted_source=TED_SOURCES)
TED_DOCUMENTS = [
    TED_DIR / "nb.documents.npz",
    *expand(TED_DIR / "cldc/{ted_source}.documents.npz", ted_source=TED_SOURCES),
]
TED_TABLES = [
    path
    for n in (1, 3, 4)
    for path in table_files(RESULTS / f"tables/rajendran2016_table{n}")
]
TED_RECORDS = RECORDS / "ted"
TED_FIGURES = [
    RESULTS / f"figures/rajendran2016_table1_heatmap.{ext}" for ext in ("png", "pdf")
]
if TED["source"] == "path":
    require_local_data(
        "ted.path",
        TED["path"],
        "the ted-cldc corpus",
        local_data.ted_expected(TED["languages"], TED["corpus_codes"]),
    )
TED_LOCATION = {
    "demo": "",
    "path": f"--path {quote(str(TED['path']))}",
    "url": f"--url {quote(str(TED['url']))}",
}

FINAL_TARGETS += TED_TABLES + TED_FIGURES


wildcard_constraints:
    ted_run="|".join(TED_RUNS),
    ted_source="|".join(TED_SOURCES),


rule ted_corpus:
    input:
        local=local_data_input(["ted.path"]),
    output:
        TED_DIR / "corpus/index.json",
    log:
        LOGS / "ted/corpus.log",
    benchmark:
        BENCHMARKS / "ted/corpus.tsv"
    # reaches the network: runs on the submitting host, never a compute node
    localrule: True
    conda:
        "../../envs/core.yaml"
    threads: 1
    resources:
        mem_mb=2000,
        runtime=120,
    params:
        source=TED["source"],
        corpus=TED_CORPUS,
        location=TED_LOCATION[TED["source"]],
        out_dir=TED_DIR / "corpus",
        demo=(
            f"--seed {TED['demo']['seed']} --train-docs {TED['demo']['train_docs']} "
            f"--test-docs {TED['demo']['test_docs']}"
        ),
    shell:
        "mlmm ted-fetch --source {params.source} {params.location} --out-dir {params.out_dir:q}"
        " {params.corpus} {params.demo} > {log:q} 2>&1"


rule ted_bow:
    input:
        index=TED_DIR / "corpus/index.json",
        record=lambda w: write_record(
            TED_RECORDS / "bow.json", record_of("ted-bow", TED)
        ),
    output:
        TED_DIR / "bow/meta.json",
    log:
        LOGS / "ted/bow.log",
    benchmark:
        BENCHMARKS / "ted/bow.tsv"
    conda:
        "../../envs/core.yaml"
    threads: 1
    resources:
        mem_mb=8000,
        runtime=60,
    params:
        out_dir=TED_DIR / "bow",
    shell:
        "mlmm ted-bow --config {input.record:q} --index {input.index:q}"
        " --out-dir {params.out_dir:q} > {log:q} 2>&1"


rule ted_train:
    input:
        bow=TED_DIR / "bow/meta.json",
        record=lambda w: write_record(
            TED_RECORDS / "train.json", record_of("ted-train", TED)
        ),
    output:
        model=TED_DIR / "corrnet/{ted_run}/model.pt",
        codes=TED_DIR / "corrnet/{ted_run}/codes.npz",
        metrics=TED_DIR / "corrnet/{ted_run}/metrics.json",
    log:
        LOGS / "ted/train_{ted_run}.log",
    benchmark:
        BENCHMARKS / "ted/train_{ted_run}.tsv"
    conda:
        "../../envs/torch.yaml"
    threads: TED["threads"]
    resources:
        mem_mb=4000,
        runtime=480,
        gpu=gpu_need("ted_train", lambda w: TED["device"]),
        # a throughput setting, not a result: a resource, not a param
        torch_device=TED["device"],
    params:
        bow=TED_DIR / "bow",
        out_dir=lambda wildcards: TED_DIR / "corrnet" / wildcards.ted_run,
        value=lambda wildcards: TED_RUNS[wildcards.ted_run],
    shell:
        "mlmm ted-train --config {input.record:q} --bow {params.bow:q}"
        " --out-dir {params.out_dir:q} --lambda {params.value}"
        " --device {resources.torch_device} --threads {threads} > {log:q} 2>&1"


rule ted_tune:
    input:
        bow=TED_DIR / "bow/meta.json",
        codes=expand(TED_DIR / "corrnet/{ted_run}/codes.npz", ted_run=TED_RUNS),
        record=lambda w: write_record(
            TED_RECORDS / "tune.json", record_of("ted-tune", TED)
        ),
    output:
        TED_DIR / "lambda.json",
    log:
        LOGS / "ted/tune.log",
    benchmark:
        BENCHMARKS / "ted/tune.tsv"
    conda:
        "../../envs/core.yaml"
    threads: TED["threads"]
    resources:
        mem_mb=4000,
        runtime=60,
    params:
        bow=TED_DIR / "bow",
        runs=[TED_DIR / "corrnet" / run for run in TED_RUNS],
    shell:
        "mlmm ted-tune --config {input.record:q} --bow {params.bow:q} --runs {params.runs:q}"
        " --out {output:q} --jobs {threads} > {log:q} 2>&1"


rule ted_classify:
    input:
        bow=TED_DIR / "bow/meta.json",
        tuning=TED_DIR / "lambda.json",
        codes=expand(TED_DIR / "corrnet/{ted_run}/codes.npz", ted_run=TED_RUNS),
        record=lambda w: write_record(
            TED_RECORDS / "classify.json", record_of("ted-classify", TED)
        ),
    output:
        result=TED_DIR / "cldc/{ted_source}.json",
        # per-document decisions the F1 is computed from (mlmm.outcomes)
        documents=TED_DIR / "cldc/{ted_source}.documents.npz",
    log:
        LOGS / "ted/classify_{ted_source}.log",
    conda:
        "../../envs/core.yaml"
    threads: 1
    resources:
        mem_mb=2000,
        runtime=30,
    params:
        bow=TED_DIR / "bow",
    shell:
        "mlmm ted-classify --config {input.record:q} --bow {params.bow:q}"
        " --tuning {input.tuning:q} --source {wildcards.ted_source}"
        " --out {output.result:q} > {log:q} 2>&1"


rule ted_nb:
    input:
        TED_DIR / "bow/meta.json",
    output:
        result=TED_DIR / "nb.json",
        documents=TED_DIR / "nb.documents.npz",
    log:
        LOGS / "ted/nb.log",
    benchmark:
        BENCHMARKS / "ted/nb.tsv"
    conda:
        "../../envs/core.yaml"
    threads: TED["threads"]
    resources:
        mem_mb=4000,
        runtime=30,
    params:
        bow=TED_DIR / "bow",
    shell:
        "mlmm ted-nb --bow {params.bow:q} --out {output.result:q} --jobs {threads} > {log:q} 2>&1"


rule ted_tables:
    input:
        cldc=expand(TED_DIR / "cldc/{ted_source}.json", ted_source=TED_SOURCES),
        nb=TED_DIR / "nb.json",
        documents=TED_DOCUMENTS,
        paper=PAPER_CSVS.get("rajendran2016", []),
    output:
        reported(path for path in TED_TABLES if "table4" not in path.name),
    log:
        LOGS / "ted/tables.log",
    conda:
        "../../envs/core.yaml"
    threads: 1
    resources:
        mem_mb=1000,
        runtime=10,
    params:
        out_dir=RESULTS / "tables",
    shell:
        (
            "mlmm ted-tables --cldc {input.cldc:q} --nb {input.nb:q}"
            + PAPER_OPTION
            + "--out-dir {params.out_dir:q} > {log:q} 2>&1"
        )


rule ted_heatmap:
    input:
        RESULTS / "tables/rajendran2016_table1.csv",
    output:
        reported(TED_FIGURES),
    log:
        LOGS / "ted/heatmap.log",
    conda:
        "../../envs/core.yaml"
    threads: 1
    resources:
        mem_mb=1000,
        runtime=10,
    params:
        stem=RESULTS / "figures/rajendran2016_table1_heatmap",
    shell:
        "mlmm ted-heatmap --table {input:q} --out {params.stem:q} > {log:q} 2>&1"


rule ted_table4:
    input:
        bow=TED_DIR / "bow/meta.json",
        tuning=TED_DIR / "lambda.json",
        models=expand(TED_DIR / "corrnet/{ted_run}/model.pt", ted_run=TED_RUNS),
        paper=PAPER_CSVS.get("rajendran2016", []),
        record=lambda w: write_record(
            TED_RECORDS / "neighbours.json", record_of("ted-neighbours", TED)
        ),
    output:
        reported(path for path in TED_TABLES if "table4" in path.name),
    log:
        LOGS / "ted/table4.log",
    conda:
        "../../envs/torch.yaml"
    threads: 1
    resources:
        mem_mb=4000,
        runtime=10,
    params:
        bow=TED_DIR / "bow",
        demo="--demo" if TED["source"] == "demo" else "",
        out_dir=RESULTS / "tables",
    shell:
        (
            "mlmm ted-neighbours --config {input.record:q} --bow {params.bow:q}"
            " --tuning {input.tuning:q}"
            + PAPER_OPTION
            + "{params.demo} --out-dir {params.out_dir:q} > {log:q} 2>&1"
        )
