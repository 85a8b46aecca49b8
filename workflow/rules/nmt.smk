"""NMT 20-best lists and k-best MIRA reranking (Calixto Table 3).

train_nmt -> nbest_lists (val, test) -> nbest_features (embedding similarities) -> mira (on val,
one per system) -> rerank (test) -> mt_score -> nmt_table. See docs/nmt.md.
"""


include: "nmt_common.smk"


rule train_nmt:
    input:
        multi30k=MULTI30K_MARKER,
        record=lambda w: write_record(RECORDS / "nmt/train.json", train_record(NMT)),
    output:
        model=NMT_DIR / "model.pt",
        history=NMT_DIR / "history.csv",
        metrics=NMT_DIR / "metrics.json",
    log:
        LOGS / "nmt/train_nmt.log",
    benchmark:
        BENCHMARKS / "nmt/train_nmt.tsv"
    conda:
        "../../envs/torch.yaml"
    threads: NMT["threads"]
    resources:
        mem_mb=4000,
        runtime=1440,
        gpu=gpu_need("train_nmt", lambda w: NMT["device"]),
        # a throughput setting, not a result: a resource, not a param
        torch_device=NMT["device"],
    params:
        data=NMT_TOK,
    shell:
        "mlmm train-nmt --config {input.record:q} --data {params.data:q}"
        " --device {resources.torch_device} --threads {threads} --out {output.model:q}"
        " --history {output.history:q} --metrics {output.metrics:q} --dataset multi30k"
        " > {log:q} 2>&1"


rule nbest_lists:
    input:
        model=NMT_DIR / "model.pt",
        multi30k=MULTI30K_MARKER,
        record=lambda w: write_record(RECORDS / "nmt/nbest.json", nbest_record(NMT)),
    output:
        nbest=NMT_DIR / "nbest/{split}.base.nbest",
        stats=NMT_DIR / "nbest/{split}.beam.json",
    log:
        LOGS / "nmt/nbest_{split}.log",
    benchmark:
        BENCHMARKS / "nmt/nbest_{split}.tsv"
    wildcard_constraints:
        split="|".join(NMT_SPLITS),
    conda:
        "../../envs/torch.yaml"
    threads: NMT["threads"]
    resources:
        mem_mb=4000,
        runtime=240,
        gpu=gpu_need("nbest_lists", lambda w: NMT["device"]),
        # a throughput setting, not a result: a resource, not a param
        torch_device=NMT["device"],
    params:
        source=lambda w: nmt_text(w.split, NMT["src"]),
    shell:
        "mlmm nbest --config {input.record:q} --model {input.model:q} --source {params.source:q}"
        " --device {resources.torch_device} --threads {threads} --out {output.nbest:q} --stats {output.stats:q} > {log:q} 2>&1"


rule nbest_features:
    input:
        unpack(nmt_feature_inputs),
        nbest=NMT_DIR / "nbest/{split}.base.nbest",
    output:
        NMT_DIR / "nbest/{split}.nbest",
    log:
        LOGS / "nmt/nbest_features_{split}.log",
    benchmark:
        BENCHMARKS / "nmt/nbest_features_{split}.tsv"
    wildcard_constraints:
        split="|".join(NMT_SPLITS),
    conda:
        "../../envs/torch.yaml"
    threads: NMT["threads"]
    resources:
        mem_mb=4000,
        runtime=60,
    params:
        options=nmt_feature_options,
        source=lambda w: nmt_text(w.split, NMT["src"]),
        src=NMT["src"],
        tgt=NMT["tgt"],
    shell:
        "mlmm nbest-features --nbest {input.nbest:q} --source {params.source:q}"
        " --src {params.src} --tgt {params.tgt} {params.options} --out {output:q} > {log:q} 2>&1"


rule mira:
    input:
        nbest=NMT_DIR / "nbest/val.nbest",
    output:
        weights=NMT_DIR / "systems/{system}/weights.txt",
        history=NMT_DIR / "systems/{system}/mira.csv",
    log:
        LOGS / "nmt/mira_{system}.log",
    benchmark:
        BENCHMARKS / "nmt/mira_{system}.tsv"
    conda:
        "../../envs/core.yaml"
    threads: 1
    resources:
        mem_mb=2000,
        runtime=30,
    params:
        features=lambda w: " ".join(NMT["systems"][w.system]["features"]),
        mira=NMT["mira"],
        ref=nmt_text("val", NMT["tgt"]),
    shell:
        "mlmm mira --nbest {input.nbest:q} --ref {params.ref:q} --features {params.features}"
        " --iters {params.mira[iters]} --c {params.mira[c]} --decay {params.mira[decay]}"
        " --seed {params.mira[seed]} --out {output.weights:q} --history {output.history:q}"
        " > {log:q} 2>&1"


rule rerank:
    input:
        unpack(nmt_weights),
        nbest=NMT_DIR / "nbest/test_2016_flickr.nbest",
    output:
        NMT_DIR / "systems/{system}/test_2016_flickr.1best",
    log:
        LOGS / "nmt/rerank_{system}.log",
    conda:
        "../../envs/core.yaml"
    threads: 1
    resources:
        mem_mb=2000,
        runtime=10,
    params:
        weights=lambda w, input: (
            f"--weights {quote(str(input.weights))}"
            if "weights" in input.keys()
            else ""
        ),
    shell:
        "mlmm rerank --nbest {input.nbest:q} {params.weights} --out {output:q} > {log:q} 2>&1"


rule mt_score:
    input:
        hyp=NMT_DIR / "systems/{system}/test_2016_flickr.1best",
        local=local_data_input(["nmt.meteor_jar"]),
    output:
        metrics=NMT_DIR / "systems/{system}/metrics.json",
        sentences=NMT_DIR / "systems/{system}/sentences.npz",
    log:
        LOGS / "nmt/mt_score_{system}.log",
    conda:
        "../../envs/core.yaml"
    threads: 1
    resources:
        mem_mb=3000,
        runtime=10,
    params:
        ref=nmt_text("test_2016_flickr", NMT["tgt"]),
        system=lambda w: NMT["systems"][w.system]["system"],
        note=lambda w: NMT["systems"][w.system]["variant_note"],
        meteor=(
            f"--meteor-jar {quote(str(NMT['meteor_jar']))}"
            if NMT["meteor_jar"]
            else ""
        ),
        language=NMT["tgt"],
        seed=NMT["mira"]["seed"],
    shell:
        "mlmm mt-score --hyp {input.hyp:q} --ref {params.ref:q} --language {params.language}"
        " {params.meteor} --system {params.system:q} --variant-note {params.note:q}"
        " --seed {params.seed} --out {output.metrics:q} --dataset multi30k"
        " > {log:q} 2>&1"


rule nmt_table:
    input:
        metrics=NMT_SCORE_FILES,
        sentences=NMT_SENTENCE_FILES,
        paper=PAPER_CSVS.get("calixto2017", []),
        feature_runs=nmt_image_feature_runs,
    output:
        reported(table_files(NMT_TABLE)),
    log:
        LOGS / "nmt/nmt_table.log",
    conda:
        "../../envs/core.yaml"
    threads: 1
    resources:
        mem_mb=1000,
        runtime=5,
    params:
        stem=NMT_TABLE,
    shell:
        (
            "mlmm nmt-table --metrics {input.metrics:q} --feature-runs {input.feature_runs:q}"
            + PAPER_OPTION
            + "--out {params.stem:q} > {log:q} 2>&1"
        )


FINAL_TARGETS += [
    NMT_TABLE.with_suffix(".csv"),
    NMT_DIR / "nbest/val.beam.json",
    NMT_DIR / "nbest/test_2016_flickr.beam.json",
]
