"""Variables and input functions of retrieval.smk (kept apart: Snakemake's linter wants rules
and functions in different files)."""

import json

from mlmm.retrieval.config import resolve_variant, run_names, seeds

RETRIEVAL = config["retrieval"]
RETRIEVAL_DIR = RESULTS / "retrieval"
RETRIEVAL_RECORDS = {
    name: resolve_variant(RETRIEVAL, name) for name in RETRIEVAL["run"]
}
RETRIEVAL_VECTORS = RETRIEVAL["vectors"]
if RETRIEVAL_VECTORS["source"] == "path":
    VECTORS_DIR = Path(RETRIEVAL_VECTORS["path"])
else:
    VECTORS_DIR = RETRIEVAL_DIR / "vectors"
# MUSE dictionaries and STS sets: configured directories, or the demo world's.
RETRIEVAL_MUSE = RETRIEVAL["muse"] or DEMO_WORLD / "muse"
RETRIEVAL_STS = RETRIEVAL["sts"] or DEMO_WORLD / "sts"
RETRIEVAL_DEMO_INPUTS = (
    [DEMO_WORLD / "MANIFEST.sha256"]
    if not (RETRIEVAL["muse"] and RETRIEVAL["sts"])
    else []
)
RETRIEVAL_RUN_FILES = [
    RETRIEVAL_DIR / name / f"seed{seed}" / "metrics.json"
    for name, record in RETRIEVAL_RECORDS.items()
    for seed in seeds(record)
]


def vectors_file(lang):
    return VECTORS_DIR / f"wiki.{lang}.align.vec"


def retrieval_inputs(wildcards):
    """Features of the variant's backbone for its train/validation/test splits, and vectors."""
    record = RETRIEVAL_RECORDS[wildcards.variant]
    splits = {"train", record["validation"]["split"], record["test"]["split"]}
    files = {
        f"features_{s}": feature_file(record["backbone"], s) for s in sorted(splits)
    }
    if record["word_embeddings"] != "random":
        langs = {lang for src in record["train_data"] for lang in src["languages"]}
        files |= {f"vectors_{lang}": vectors_file(lang) for lang in sorted(langs)}
    return files


def retrieval_section(wildcards):
    """The defaults and this one variant: editing another variant does not rerun this one."""
    name = wildcards.variant
    return json.dumps(
        {
            "defaults": RETRIEVAL["defaults"],
            "variants": {name: RETRIEVAL["variants"][name]},
        }
    )


def retrieval_options(wildcards):
    record = RETRIEVAL_RECORDS[wildcards.variant]
    options = f"--muse {RETRIEVAL_MUSE} --sts {RETRIEVAL_STS}"
    if record["word_embeddings"] != "random":
        options += f" --vectors {VECTORS_DIR}"
    return options
