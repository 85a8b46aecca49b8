"""Pivot image-caption retrieval (Rajendran et al. 2016, Table 5).

One job per (model, caption language, lambda), all independent: En-Image CorrNet (direct, per
lambda), Bridge CorrNet and 2-CorrNet (per language and lambda), Bridge MAE (per language, no
lambda), Random (one). The table job picks lambda per direction on validation data. Needs the
prepared COCO (COCO_MARKER), its image features (coco_feature_file) and a ted-cldc root
(PIVOT_TED_ROOT, complete when PIVOT_TED_INPUT exists); see src/mlmm/pivot.
"""

import re

from mlmm.nmt import train_record
from mlmm.pivot import nmt_records
from mlmm.records import record_of

PIVOT = config["pivot"]
PIVOT_DIR = RESULTS / "pivot"
# Z2: the COCO demo world's TED-like talks, or the TED stage's corpus (its index.json names the
# corpus root, which `pivot-train --ted-root` accepts).
if PIVOT["ted"] == "demo":
    PIVOT_TED_ROOT = DEMO_COCO / "ted"
    PIVOT_TED_INPUT = DEMO_COCO / "MANIFEST.sha256"
else:
    PIVOT_TED_ROOT = PIVOT_TED_INPUT = TED_DIR / "corpus/index.json"
# The data set the talks belong to, recorded in the results' provenance (mlmm.origin): the
# demo talks are part of the COCO demo world, the TED stage's are the ted data set.
PIVOT_TALKS_DATA = "coco" if PIVOT["ted"] == "demo" else "ted"
PIVOT_TABLES = table_files(RESULTS / "tables/rajendran2016_table5")
PIVOT_RECORDS = RECORDS / "pivot"


# job name -> (command-line flags, needs the TED talks)
PIVOT_JOBS = {"random": ("--model random", False)}
for _lam in PIVOT["lambdas"]:
    PIVOT_JOBS[f"direct_lambda{_lam:g}"] = (f"--model direct --lambda {_lam}", False)
for _x in PIVOT["languages"]:
    PIVOT_JOBS[f"mae_{_x}"] = (f"--model mae --language {_x}", True)
    for _model in ("bridge", "two"):
        for _lam in PIVOT["lambdas"]:
            PIVOT_JOBS[f"{_model}_{_x}_lambda{_lam:g}"] = (
                f"--model {_model} --language {_x} --lambda {_lam}",
                True,
            )
# Z1 reads its rows of the Karpathy splits' features: train alone (pivot_split karpathy: train
# minus MIC) or train, val and test (paper: every image minus MIC); MIC is the test set.
PIVOT_Z1_SPLITS = (
    ["train"] if COCO["pivot_split"] == "karpathy" else ["train", "val", "test"]
)
PIVOT_FEATURES = [
    coco_feature_file(PIVOT["backbone"], split) for split in [*PIVOT_Z1_SPLITS, "mic"]
]
# coco_feature_file gives <features>/<backbone>/<split>.npy; the command takes <features>.
PIVOT_FEATURE_DIR = Path(PIVOT_FEATURES[0]).parent.parent

# Tables 6 and 7 (qualitative top-5) from the Bridge CorrNet runs of every language and lambda
PIVOT_EXAMPLE_RUNS = [job for job in PIVOT_JOBS if job.startswith("bridge_")]
PIVOT_EXAMPLE_FILES = [
    RESULTS / f"figures/rajendran2016_table{table}.{suffix}"
    for table in (6, 7)
    for suffix in ("png", "pdf")
] + [RESULTS / f"tables/rajendran2016_table{table}.csv" for table in (6, 7)]

# CorrNet + MT rows: per language X an X -> en NMT on Z2's sentences (the one NMT trainer with
# the record of mlmm.pivot.nmt_records), the MIC captions in X translated with it, and the
# En-Image CorrNet of each direct run ranking the translations (one run per lambda).
PIVOT_MT = nmt_records(config)
PIVOT_MT_DIR = PIVOT_DIR / "mt"
PIVOT_MT_RUNS = [
    PIVOT_MT_DIR / f"{x}/lambda{lam:g}/metrics.json"
    for x in PIVOT_MT
    for lam in PIVOT["lambdas"]
]
# every Table 5 run (metrics.json; queries.npz beside each): pivot_table, the claims
PIVOT_RUN_FILES = [
    *(PIVOT_DIR / job / "metrics.json" for job in PIVOT_JOBS),
    *PIVOT_MT_RUNS,
]
PIVOT_MT_DATA = [
    PIVOT_MT_DIR / "{language}/data" / f"{split}.lc.norm.tok.{side}"
    for split in ("train", "val")
    for side in ("{language}", "en")
]
PIVOT_MT_TRANSLATIONS = [
    PIVOT_MT_DIR / "{language}/translations" / f"mic.lc.norm.tok.{k}.en"
    for k in range(1, 6)
]

FINAL_TARGETS += PIVOT_TABLES + PIVOT_EXAMPLE_FILES


wildcard_constraints:
    pivot_job="|".join(re.escape(job) for job in PIVOT_JOBS),
    language="|".join(re.escape(x) for x in PIVOT_MT),
    mt_lambda="|".join(re.escape(f"{lam:g}") for lam in PIVOT["lambdas"]),


rule pivot_train:
    input:
        coco=COCO_MARKER,
        features=lambda w: [] if w.pivot_job == "random" else PIVOT_FEATURES,
        ted=lambda w: PIVOT_TED_INPUT if PIVOT_JOBS[w.pivot_job][1] else [],
        record=lambda w: write_record(
            PIVOT_RECORDS / "train.json", record_of("pivot-train", PIVOT)
        ),
    output:
        metrics=PIVOT_DIR / "{pivot_job}/metrics.json",
        # what ranks the MIC test set (codes or scores), read by pivot_examples
        ranking=PIVOT_DIR / "{pivot_job}/test_ranking.npz",
        # the MIC test ranks the recalls are computed from (mlmm.outcomes)
        queries=PIVOT_DIR / "{pivot_job}/queries.npz",
    log:
        LOGS / "pivot/{pivot_job}.log",
    benchmark:
        BENCHMARKS / "pivot/{pivot_job}.tsv"
    conda:
        "../../envs/torch.yaml"
    threads: PIVOT["threads"]
    # Paper scale: 118K images x 5 captions x 20 epochs; 2-CorrNet trains two networks.
    resources:
        mem_mb=16000,
        runtime=1440,
        gpu=gpu_need("pivot_train", lambda w: PIVOT["device"]),
        # a throughput setting, not a result: a resource, not a param
        torch_device=PIVOT["device"],
    params:
        job=lambda w: PIVOT_JOBS[w.pivot_job][0],
        ted=lambda w: (
            f"--ted-root {quote(str(PIVOT_TED_ROOT))} --dataset {PIVOT_TALKS_DATA}"
            if PIVOT_JOBS[w.pivot_job][1]
            else ""
        ),
        coco=COCO_ROOT,
        features=PIVOT_FEATURE_DIR,
        out_dir=lambda w: PIVOT_DIR / w.pivot_job,
    shell:
        "mlmm pivot-train --config {input.record:q} --coco-root {params.coco:q}"
        " --features {params.features:q} {params.job} --dataset coco"
        " {params.ted} --device {resources.torch_device} --threads {threads}"
        " --out {params.out_dir:q} > {log:q} 2>&1"


rule pivot_mt_data:
    input:
        ted=PIVOT_TED_INPUT,
        record=lambda w: write_record(
            PIVOT_RECORDS / "mt-data.json", record_of("pivot-mt-data", PIVOT)
        ),
    output:
        PIVOT_MT_DATA,
        stats=PIVOT_MT_DIR / "{language}/data/stats.json",
    log:
        LOGS / "pivot/mt_data_{language}.log",
    benchmark:
        BENCHMARKS / "pivot/mt_data_{language}.tsv"
    # mlmm.pivot.data imports the TED CorrNet (torch) (tests/test_envs.py)
    conda:
        "../../envs/torch.yaml"
    threads: 1
    resources:
        mem_mb=4000,
        runtime=30,
    params:
        ted=PIVOT_TED_ROOT,
        out=lambda w: PIVOT_MT_DIR / w.language / "data",
    shell:
        "mlmm pivot-mt-data --config {input.record:q} --ted-root {params.ted:q}"
        " --language {wildcards.language} --out {params.out:q} > {log:q} 2>&1"


# The trainer of rule train_nmt (same flags), X -> en on the Z2 sentence pairs.
rule pivot_train_nmt:
    input:
        PIVOT_MT_DATA,
        record=lambda w: write_record(
            RECORDS / f"pivot/{w.language}/train_nmt.json",
            train_record(PIVOT_MT[w.language]),
        ),
    output:
        model=PIVOT_MT_DIR / "{language}/nmt/model.pt",
        history=PIVOT_MT_DIR / "{language}/nmt/history.csv",
        metrics=PIVOT_MT_DIR / "{language}/nmt/metrics.json",
    log:
        LOGS / "pivot/train_nmt_{language}.log",
    benchmark:
        BENCHMARKS / "pivot/train_nmt_{language}.tsv"
    conda:
        "../../envs/torch.yaml"
    threads: PIVOT["threads"]
    resources:
        mem_mb=8000,
        runtime=1440,
        gpu=gpu_need("pivot_train_nmt", lambda w: PIVOT["device"]),
        torch_device=PIVOT["device"],
    params:
        data=lambda w: PIVOT_MT_DIR / w.language / "data",
        talks=PIVOT_TALKS_DATA,
    shell:
        "mlmm train-nmt --config {input.record:q} --data {params.data:q}"
        " --device {resources.torch_device} --threads {threads} --out {output.model:q}"
        " --history {output.history:q} --metrics {output.metrics:q} --dataset {params.talks}"
        " > {log:q} 2>&1"


rule pivot_translate:
    input:
        model=PIVOT_MT_DIR / "{language}/nmt/model.pt",
        coco=COCO_MARKER,
        record=lambda w: write_record(
            PIVOT_RECORDS / "translate.json", record_of("pivot-translate", PIVOT)
        ),
    output:
        PIVOT_MT_TRANSLATIONS,
        stats=PIVOT_MT_DIR / "{language}/translations/stats.json",
    log:
        LOGS / "pivot/translate_{language}.log",
    benchmark:
        BENCHMARKS / "pivot/translate_{language}.tsv"
    conda:
        "../../envs/torch.yaml"
    threads: PIVOT["threads"]
    resources:
        mem_mb=4000,
        runtime=240,
        gpu=gpu_need("pivot_translate", lambda w: PIVOT["device"]),
    params:
        coco=COCO_ROOT,
        talks=PIVOT_TALKS_DATA,
        out=lambda w: PIVOT_MT_DIR / w.language / "translations",
    shell:
        "mlmm pivot-translate --config {input.record:q} --model {input.model:q}"
        " --coco-root {params.coco:q} --language {wildcards.language} --threads {threads}"
        " --dataset coco --dataset {params.talks} --out {params.out:q} > {log:q} 2>&1"


rule pivot_mt:
    input:
        direct=PIVOT_DIR / "direct_lambda{mt_lambda}/metrics.json",
        translations=PIVOT_MT_DIR / "{language}/translations/stats.json",
        features=PIVOT_FEATURES,
        record=lambda w: write_record(
            PIVOT_RECORDS / "mt.json", record_of("pivot-mt", PIVOT)
        ),
    output:
        metrics=PIVOT_MT_DIR / "{language}/lambda{mt_lambda}/metrics.json",
        queries=PIVOT_MT_DIR / "{language}/lambda{mt_lambda}/queries.npz",
    log:
        LOGS / "pivot/mt_{language}_lambda{mt_lambda}.log",
    benchmark:
        BENCHMARKS / "pivot/mt_{language}_lambda{mt_lambda}.tsv"
    conda:
        "../../envs/torch.yaml"
    threads: 1
    resources:
        mem_mb=4000,
        runtime=30,
    params:
        coco=COCO_ROOT,
        features=PIVOT_FEATURE_DIR,
        direct=lambda w: PIVOT_DIR / f"direct_lambda{w.mt_lambda}",
        translations=lambda w: PIVOT_MT_DIR / w.language / "translations",
        talks=PIVOT_TALKS_DATA,
        out=lambda w: PIVOT_MT_DIR / w.language / f"lambda{w.mt_lambda}",
    shell:
        "mlmm pivot-mt --config {input.record:q} --direct-run {params.direct:q}"
        " --translations {params.translations:q} --coco-root {params.coco:q}"
        " --features {params.features:q}"
        " --language {wildcards.language} --dataset coco --dataset {params.talks}"
        " --out {params.out:q} > {log:q} 2>&1"


rule pivot_table:
    input:
        runs=PIVOT_RUN_FILES,
        queries=[path.with_name("queries.npz") for path in PIVOT_RUN_FILES],
        paper=PAPER_CSVS.get("rajendran2016", []),
    output:
        reported(PIVOT_TABLES),
    log:
        LOGS / "pivot/table.log",
    conda:
        "../../envs/core.yaml"
    threads: 1
    resources:
        mem_mb=1000,
        runtime=10,
    params:
        stem=RESULTS / "tables/rajendran2016_table5",
    shell:
        (
            "mlmm pivot-table --runs {input.runs:q}"
            + PAPER_OPTION
            + "--out {params.stem:q} > {log:q} 2>&1"
        )


rule pivot_examples:
    input:
        runs=expand(
            PIVOT_DIR / "{pivot_job}/metrics.json", pivot_job=PIVOT_EXAMPLE_RUNS
        ),
        rankings=expand(
            PIVOT_DIR / "{pivot_job}/test_ranking.npz", pivot_job=PIVOT_EXAMPLE_RUNS
        ),
        images=COCO_IMAGES_INPUT,
        local=local_data_input(["coco.images"]),
        record=lambda w: write_record(
            PIVOT_RECORDS / "examples.json", record_of("pivot-examples", PIVOT)
        ),
    output:
        reported(PIVOT_EXAMPLE_FILES),
    log:
        LOGS / "pivot/examples.log",
    benchmark:
        BENCHMARKS / "pivot/examples.tsv"
    # ranks with mlmm.pivot.models (torch) (tests/test_envs.py)
    conda:
        "../../envs/torch.yaml"
    threads: 1
    resources:
        mem_mb=2000,
        runtime=10,
    params:
        coco=COCO_ROOT,
        images=COCO_IMAGES,
        figures=RESULTS / "figures",
        tables=RESULTS / "tables",
    shell:
        "mlmm pivot-examples --config {input.record:q} --runs {input.runs:q}"
        " --coco-root {params.coco:q} --images {params.images:q}"
        " --figures {params.figures:q} --tables {params.tables:q} > {log:q} 2>&1"
