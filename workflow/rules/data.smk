"""Data stage: demo world, Multi30K fetch (sha256-verified), vocabularies, Kadar Table 1."""

from snakemake.exceptions import WorkflowError

MULTI30K = config["multi30k"]
DEMO_WORLD = RESULTS / "demo/world"
MULTI30K_ROOT = RESULTS / "multi30k"
MULTI30K_MARKER = MULTI30K_ROOT / "MANIFEST.sha256"
VOCAB_DIR = MULTI30K_ROOT / "vocab"
VOCAB_FILES = [
    VOCAB_DIR / f"{portion}.{name}.tsv"
    for portion, names in (
        ("translation", ["en", "de", "fr", "cs", "union"]),
        ("comparable", ["en", "de", "union"]),
        ("all", ["union"]),
    )
    for name in names
]


if MULTI30K["source"] == "mirror" and not MULTI30K["mirror"]:
    raise WorkflowError(
        "config multi30k.mirror: a directory is needed when source is mirror"
    )
# The demo world is fetched like a mirror, against its own manifest; the upstream files (mirror
# or url) against the committed manifest.
if MULTI30K["source"] == "demo":
    MULTI30K_MANIFEST = DEMO_WORLD / "MANIFEST.sha256"
    MULTI30K_SOURCE = f"--mirror {quote(str(DEMO_WORLD))}"
elif MULTI30K["source"] == "mirror":
    MULTI30K_MANIFEST = repository_path(MULTI30K["manifest"])
    MULTI30K_SOURCE = f"--mirror {quote(str(MULTI30K['mirror']))}"
else:
    MULTI30K_MANIFEST = repository_path(MULTI30K["manifest"])
    MULTI30K_SOURCE = f"--url {quote(str(MULTI30K['url']))}"


# mlmm.demo.generate_world writes a temporary directory and renames it: no partial world.
rule demo_world:
    output:
        DEMO_WORLD / "MANIFEST.sha256",
    log:
        LOGS / "data/demo_world.log",
    benchmark:
        BENCHMARKS / "data/demo_world.tsv"
    conda:
        "../../envs/core.yaml"
    threads: 1
    resources:
        mem_mb=2000,
        runtime=30,
    params:
        world=DEMO_WORLD,
        seed=config["demo_world"]["seed"],
        images=config["demo_world"]["images"],
    shell:
        "mlmm demo-world {params.world:q} --seed {params.seed} --images {params.images} > {log:q} 2>&1"


rule fetch_multi30k:
    input:
        manifest=MULTI30K_MANIFEST,
    output:
        MULTI30K_MARKER,
    log:
        LOGS / "data/fetch_multi30k.log",
    benchmark:
        BENCHMARKS / "data/fetch_multi30k.tsv"
    # reaches the network: runs on the submitting host, never a compute node
    localrule: True
    conda:
        "../../envs/core.yaml"
    threads: 1
    resources:
        mem_mb=1000,
        runtime=30,
    params:
        source=MULTI30K_SOURCE,
        out=MULTI30K_ROOT,
        retries=MULTI30K["retries"],
    shell:
        "mlmm fetch-multi30k --manifest {input.manifest:q} {params.source} --out {params.out:q}"
        " --retries {params.retries} > {log:q} 2>&1"


rule vocabularies:
    input:
        MULTI30K_MARKER,
    output:
        VOCAB_FILES,
        VOCAB_DIR / "vocab.json",
    log:
        LOGS / "data/vocabularies.log",
    conda:
        "../../envs/core.yaml"
    threads: 1
    resources:
        mem_mb=2000,
        runtime=10,
    params:
        root=MULTI30K_ROOT,
        out=VOCAB_DIR,
        min_count=config["vocab"]["min_count"],
    shell:
        "mlmm multi30k-vocab --root {params.root:q} --out {params.out:q}"
        " --min-count {params.min_count} > {log:q} 2>&1"


rule kadar_table1:
    input:
        MULTI30K_MARKER,
        paper=PAPER_CSVS.get("kadar2018", []),
    output:
        reported(table_files(RESULTS / "tables/kadar2018_table1")),
    log:
        LOGS / "data/kadar_table1.log",
    conda:
        "../../envs/core.yaml"
    threads: 1
    resources:
        mem_mb=2000,
        runtime=10,
    params:
        root=MULTI30K_ROOT,
        stem=RESULTS / "tables/kadar2018_table1",
        min_count=config["vocab"]["min_count"],
        demo="--demo" if MULTI30K["source"] == "demo" else "",
    shell:
        (
            "mlmm kadar-table1 --root {params.root:q} --min-count {params.min_count}"
            + PAPER_OPTION
            + "--out {params.stem:q} {params.demo} > {log:q} 2>&1"
        )


FINAL_TARGETS += [*VOCAB_FILES, *table_files(RESULTS / "tables/kadar2018_table1")]
