"""Pivot image-caption retrieval (Rajendran et al. 2016, Table 5).

One job per (model, caption language, lambda), all independent: En-Image CorrNet (direct, per
lambda), Bridge CorrNet and 2-CorrNet (per language and lambda), Bridge MAE (per language, no
lambda), Random (one). The table job picks lambda per direction on validation data. Needs the
prepared COCO (COCO_MARKER), its image features (coco_feature_file) and a ted-cldc root
(PIVOT_TED_ROOT, complete when PIVOT_TED_INPUT exists); see src/mlmm/pivot.
"""

import json
import re

PIVOT = config["pivot"]
PIVOT_DIR = RESULTS / "pivot"
# Z2: the COCO demo world's TED-like talks, or the TED stage's corpus (its index.json names the
# corpus root, which `pivot-train --ted-root` accepts).
if PIVOT["ted"] == "demo":
    PIVOT_TED_ROOT = DEMO_COCO / "ted"
    PIVOT_TED_INPUT = DEMO_COCO / "MANIFEST.sha256"
else:
    PIVOT_TED_ROOT = PIVOT_TED_INPUT = TED_DIR / "corpus/index.json"
PIVOT_TABLES = table_files(RESULTS / "tables/rajendran2016_table5")
PIVOT_PAPER = f"--paper-tables {quote(str(PAPER_TABLES))}" if PAPER_TABLES else ""
PIVOT_SETTINGS = " ".join(
    f"--{key.replace('_', '-')} {PIVOT[key]}"
    for key in ("backbone", "device", "hidden", "epochs", "batch_size", "learning_rate", "input",
                "reconstruction", "min_count", "validation_fraction", "validation_max", "seed")
) + (" --standardise-images" if PIVOT["standardise_images"] else " --no-standardise-images")  # fmt: skip

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
PIVOT_EXAMPLES = PIVOT["examples"]
PIVOT_EXAMPLE_RUNS = [job for job in PIVOT_JOBS if job.startswith("bridge_")]
PIVOT_EXAMPLE_FILES = [
    RESULTS / f"figures/rajendran2016_table{table}.{suffix}"
    for table in (6, 7)
    for suffix in ("png", "pdf")
] + [RESULTS / f"tables/rajendran2016_table{table}.csv" for table in (6, 7)]

FINAL_TARGETS += PIVOT_TABLES + PIVOT_EXAMPLE_FILES


wildcard_constraints:
    pivot_job="|".join(re.escape(job) for job in PIVOT_JOBS),


rule pivot_train:
    input:
        coco=COCO_MARKER,
        features=lambda w: [] if w.pivot_job == "random" else PIVOT_FEATURES,
        ted=lambda w: PIVOT_TED_INPUT if PIVOT_JOBS[w.pivot_job][1] else [],
    output:
        metrics=PIVOT_DIR / "{pivot_job}/metrics.json",
        # what ranks the MIC test set (codes or scores), read by pivot_examples
        ranking=PIVOT_DIR / "{pivot_job}/test_ranking.npz",
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
        runtime=720,
    params:
        job=lambda w: PIVOT_JOBS[w.pivot_job][0],
        ted=lambda w: (
            f"--ted-root {quote(str(PIVOT_TED_ROOT))}"
            if PIVOT_JOBS[w.pivot_job][1]
            else ""
        ),
        settings=PIVOT_SETTINGS,
        coco=COCO_ROOT,
        features=PIVOT_FEATURE_DIR,
        out_dir=lambda w: PIVOT_DIR / w.pivot_job,
    shell:
        "mlmm pivot-train --coco-root {params.coco:q} --features {params.features:q} {params.job}"
        " {params.ted} {params.settings} --threads {threads} --out {params.out_dir:q} > {log:q} 2>&1"


rule pivot_table:
    input:
        expand(PIVOT_DIR / "{pivot_job}/metrics.json", pivot_job=PIVOT_JOBS),
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
        paper=PIVOT_PAPER,
        stem=RESULTS / "tables/rajendran2016_table5",
    shell:
        "mlmm pivot-table --runs {input:q} {params.paper} --out {params.stem:q} > {log:q} 2>&1"


rule pivot_examples:
    input:
        runs=expand(
            PIVOT_DIR / "{pivot_job}/metrics.json", pivot_job=PIVOT_EXAMPLE_RUNS
        ),
        rankings=expand(
            PIVOT_DIR / "{pivot_job}/test_ranking.npz", pivot_job=PIVOT_EXAMPLE_RUNS
        ),
        images=COCO_IMAGES_INPUT,
    output:
        reported(PIVOT_EXAMPLE_FILES),
    log:
        LOGS / "pivot/examples.log",
    benchmark:
        BENCHMARKS / "pivot/examples.tsv"
    conda:
        "../../envs/core.yaml"
    threads: 1
    resources:
        mem_mb=2000,
        runtime=10,
    params:
        coco=COCO_ROOT,
        images=COCO_IMAGES,
        per_language=PIVOT_EXAMPLES["per_language"],
        seed=PIVOT_EXAMPLES["seed"],
        queries=json.dumps(PIVOT_EXAMPLES["paper_queries"]),
        figures=RESULTS / "figures",
        tables=RESULTS / "tables",
    shell:
        "mlmm pivot-examples --runs {input.runs:q} --coco-root {params.coco:q}"
        " --images {params.images:q} --per-language {params.per_language}"
        " --seed {params.seed} --paper-queries {params.queries:q}"
        " --figures {params.figures:q} --tables {params.tables:q} > {log:q} 2>&1"
