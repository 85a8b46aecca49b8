"""Image-sentence ranking variants: one `train_retrieval` job per variant x seed (training,
model selection and test evaluation), plus the aligned word vectors FME/AME start from.
Tables and figures from the runs' metrics.json: report.smk."""


include: "retrieval_common.smk"


rule train_retrieval:
    input:
        unpack(retrieval_inputs),
        local=local_data_input(retrieval_local_data),
        record=lambda w: write_record(
            RECORDS / f"retrieval/{w.variant}.json",
            {"retrieval": json.loads(retrieval_section(w))},
        ),
    output:
        model=RETRIEVAL_DIR / "{variant}/seed{seed}/model.pt",
        metrics=RETRIEVAL_DIR / "{variant}/seed{seed}/metrics.json",
        history=RETRIEVAL_DIR / "{variant}/seed{seed}/history.csv",
        queries=RETRIEVAL_DIR / "{variant}/seed{seed}/queries.npz",
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
        gpu=gpu_need(
            "train_retrieval",
            lambda w: RETRIEVAL_RECORDS[w.variant]["device"],
            shared=True,
        ),
        gpu_slots=gpu_slots(lambda w: RETRIEVAL_RECORDS[w.variant]["device"]),
        # the device is a throughput setting, not a result: a resource, not a param
        torch_device=lambda w: RETRIEVAL_RECORDS[w.variant]["device"],
    params:
        section=retrieval_section,
        out=lambda wildcards, output: Path(output.metrics).parent,
        options=retrieval_options,
    shell:
        "mlmm train-retrieval --config {input.record:q} --variant {wildcards.variant}"
        " --seed {wildcards.seed} --out {params.out:q} {params.options} --threads {threads}"
        " --device {resources.torch_device}"
        " > {log:q} 2>&1"


if MUSE_URL:

    rule fetch_muse:
        output:
            [protected(path) for path in MUSE_FILES],
        log:
            LOGS / "retrieval/fetch_muse.log",
        # reaches the network: runs on the submitting host, never a compute node
        localrule: True
        # mlmm.retrieval.word_vector_files (and RCSLS) imports torch (tests/test_envs.py)
        conda:
            "../../envs/torch.yaml"
        threads: 1
        resources:
            mem_mb=1000,
            runtime=30,
        params:
            url=RETRIEVAL["muse"],
            languages=" ".join(MUSE_LANGUAGES),
            sections=" ".join(MUSE_SECTIONS),
            out=MUSE_DOWNLOADS,
            both_directions="--reverse" if MUSE_REVERSE else "",
        shell:
            "mlmm fetch-muse --url {params.url} --languages {params.languages}"
            " --sections {params.sections} {params.both_directions} --out {params.out:q} > {log:q} 2>&1"


if RETRIEVAL_VECTORS["source"] != "path":

    rule retrieval_vectors:
        input:
            multi30k=MULTI30K_MARKER,
            demo=demo_inputs("multi30k"),
        output:
            [
                (
                    protected(vectors_file(lang))
                    if RETRIEVAL_VECTORS["source"] == "url"
                    else vectors_file(lang)
                )
                for lang in RETRIEVAL_VECTORS["languages"]
            ],
        log:
            LOGS / "retrieval/vectors.log",
        # reaches the network: runs on the submitting host, never a compute node
        localrule: True
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
                f"--url {quote(str(RETRIEVAL_VECTORS['url']))}"
                if RETRIEVAL_VECTORS["source"] == "url"
                else f"--data-root {quote(str(MULTI30K_ROOT))} --muse {quote(str(muse_dir('multi30k')))}"
            ),
            options=VECTORS_OPTIONS,
        shell:
            "mlmm retrieval-vectors --out {params.out:q} --languages {params.languages}"
            " {params.source} {params.options} > {log:q} 2>&1"

    # A language fastText has no aligned vectors of (AME: Japanese): its own vectors (demo:
    # derived from the COCO training captions; otherwise fastText's crawl vectors from the
    # configured URL) rotated onto the English aligned vectors on the MUSE training pairs.
    rule retrieval_vectors_rotated:
        input:
            english=vectors_file("en"),
            coco=COCO_MARKER,
            demo=demo_inputs("coco"),
            own=lambda wildcards: ROTATED_SOURCES.get(wildcards.rotated_lang, []),
        output:
            VECTORS_DIR / "wiki.{rotated_lang}.align.vec",
        log:
            LOGS / "retrieval/vectors_{rotated_lang}.log",
        wildcard_constraints:
            rotated_lang="|".join(ROTATED_VECTORS) or "none",
        conda:
            "../../envs/torch.yaml"
        threads: 1
        resources:
            mem_mb=16000,
            runtime=120,
        params:
            out=VECTORS_DIR,
            muse=muse_dir("coco"),
            source=lambda wildcards: (
                f"--data-root {quote(str(COCO_ROOT))}"
                if RETRIEVAL_VECTORS["source"] == "demo"
                else f"--vec {quote(str(ROTATED_SOURCES[wildcards.rotated_lang]))}"
                f" --limit {ROTATION['limit']}"
            ),
            rotation=ROTATION_OPTIONS,
            options=VECTORS_OPTIONS,
        shell:
            "mlmm retrieval-vectors --out {params.out:q} --languages {wildcards.rotated_lang}"
            " --onto {input.english:q} --muse {params.muse:q} {params.source} {params.options}"
            " {params.rotation} > {log:q} 2>&1"

    rule fetch_rotated_vectors:
        output:
            protected(DOWNLOADS / "fasttext" / "{crawl_file}"),
        log:
            LOGS / "retrieval/fetch_{crawl_file}.log",
        wildcard_constraints:
            crawl_file="|".join(re.escape(name) for name in ROTATED_DOWNLOADS) or "none",
        # reaches the network: runs on the submitting host, never a compute node
        localrule: True
        conda:
            "../../envs/core.yaml"
        threads: 1
        resources:
            mem_mb=1000,
            runtime=120,
        params:
            url=lambda w: ROTATED_DOWNLOADS[w.crawl_file],
        shell:
            "mlmm download {params.url:q} --out {output:q} > {log:q} 2>&1"


FINAL_TARGETS += RETRIEVAL_RUN_FILES
