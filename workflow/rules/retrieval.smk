"""Image-sentence ranking variants: one `train_retrieval` job per variant x seed (training,
model selection and test evaluation), plus the aligned word vectors FME/AME start from.
Tables and figures from the runs' metrics.json: report.smk."""


include: "retrieval_common.smk"


rule train_retrieval:
    input:
        unpack(retrieval_inputs),
        multi30k=MULTI30K_MARKER,
        demo=RETRIEVAL_DEMO_INPUTS,
    output:
        model=RETRIEVAL_DIR / "{variant}/seed{seed}/model.pt",
        metrics=RETRIEVAL_DIR / "{variant}/seed{seed}/metrics.json",
        history=RETRIEVAL_DIR / "{variant}/seed{seed}/history.csv",
    log:
        LOGS / "retrieval/{variant}_seed{seed}.log",
    benchmark:
        BENCHMARKS / "retrieval/{variant}_seed{seed}.tsv"
    wildcard_constraints:
        variant="|".join(RETRIEVAL_RECORDS) or "none",
        seed=r"\d+",
    conda:
        "../../envs/torch.yaml"
    threads: RETRIEVAL["threads"]
    # Paper sizes on 29K images: about an hour per run on one GPU, a day or more on a CPU node.
    resources:
        mem_mb=12000,
        runtime=1440,
    params:
        section=retrieval_section,
        root=MULTI30K_ROOT,
        features=FEATURE_DIR,
        out=lambda wildcards, output: Path(output.metrics).parent,
        options=retrieval_options,
    shell:
        "mlmm train-retrieval --record-json {params.section:q} --variant {wildcards.variant}"
        " --seed {wildcards.seed} --out {params.out} --data-root {params.root}"
        " --features-root {params.features} {params.options} --threads {threads}"
        " > {log} 2>&1"


if RETRIEVAL_VECTORS["source"] != "path":

    rule retrieval_vectors:
        input:
            multi30k=MULTI30K_MARKER,
            demo=RETRIEVAL_DEMO_INPUTS,
        output:
            [vectors_file(lang) for lang in RETRIEVAL_VECTORS["languages"]],
        log:
            LOGS / "retrieval/vectors.log",
        conda:
            "../../envs/torch.yaml"
        threads: 1
        resources:
            mem_mb=8000,
            runtime=120,
        params:
            out=VECTORS_DIR,
            languages=" ".join(RETRIEVAL_VECTORS["languages"]),
            source=(
                f"--url {RETRIEVAL_VECTORS['url']}"
                if RETRIEVAL_VECTORS["source"] == "url"
                else f"--data-root {MULTI30K_ROOT} --muse {RETRIEVAL_MUSE}"
                f" --dim {RETRIEVAL_VECTORS['dim']}"
            ),
        shell:
            "mlmm retrieval-vectors --out {params.out} --languages {params.languages}"
            " {params.source} > {log} 2>&1"


FINAL_TARGETS += RETRIEVAL_RUN_FILES
