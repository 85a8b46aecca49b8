"""Variables and input functions of retrieval.smk (kept apart: Snakemake's linter wants rules
and functions in different files)."""

import json
import re

from mlmm.retrieval.config import (
    merge_config,
    resolve_variant,
    rotation_options,
    run_names,
    seeds,
    variant_defaults,
)

RETRIEVAL = config["retrieval"]
RETRIEVAL_DIR = RESULTS / "retrieval"
RETRIEVAL_RECORDS = {
    name: resolve_variant(RETRIEVAL, name) for name in RETRIEVAL["run"]
}
RETRIEVAL_VECTORS = RETRIEVAL["vectors"]
# The MUSE split the demo vectors are rotated on: the variants' alignment.train_fraction.
ALIGN_TRAIN_FRACTION = merge_config(
    variant_defaults()["alignment"], RETRIEVAL["defaults"].get("alignment") or {}
)["train_fraction"]
VECTORS_OPTIONS = (
    f"--dim {RETRIEVAL_VECTORS['dim']} --train-fraction {ALIGN_TRAIN_FRACTION}"
)
if RETRIEVAL_VECTORS["source"] == "path":
    VECTORS_DIR = Path(RETRIEVAL_VECTORS["path"])
elif RETRIEVAL_VECTORS["source"] == "url":
    VECTORS_DIR = DOWNLOADS / "fasttext"  # kept by `make clean`
else:
    VECTORS_DIR = RETRIEVAL_DIR / "vectors"
# MUSE dictionaries and STS sets: configured directories, or the demo worlds' (en-ja is in the
# COCO demo world). Vectors of languages fastText has no aligned vectors of (ja) are rotated
# onto the English ones (rule retrieval_vectors_rotated).
RETRIEVAL_STS = RETRIEVAL["sts"] or DEMO_WORLD / "sts"
if RETRIEVAL["sts"] and any(record["sts"] for record in RETRIEVAL_RECORDS.values()):
    require_local_data(
        "retrieval.sts", RETRIEVAL["sts"], "the SemEval image STS sets", local_data.STS
    )
DEMO_MARKERS = {
    "multi30k": DEMO_WORLD / "MANIFEST.sha256",
    "coco": DEMO_COCO / "MANIFEST.sha256",
}
ROTATED_VECTORS = RETRIEVAL_VECTORS["rotated"]
# A rotated language's own vectors given by URL are downloaded on the submitting host (rule
# fetch_rotated_vectors, to <downloads>/fasttext/<name>); the rotation (RCSLS on 200K words)
# is a compute job that reads the local copy.
ROTATED_SOURCES = {
    lang: (
        DOWNLOADS / "fasttext" / Path(str(location)).name
        if str(location).startswith(("http://", "https://"))
        else Path(location)
    )
    for lang, location in ROTATED_VECTORS.items()
    if RETRIEVAL_VECTORS["source"] != "demo"
}
ROTATED_DOWNLOADS = {
    path.name: ROTATED_VECTORS[lang]
    for lang, path in ROTATED_SOURCES.items()
    if str(ROTATED_VECTORS[lang]).startswith(("http://", "https://"))
}
# Procrustes, or fastText's RCSLS (AME: Japanese with the MS-COCO k and lr) on the named MUSE
# sections
ROTATION = RETRIEVAL_VECTORS["rotation"]
ROTATION_OPTIONS = rotation_options(ROTATION)
# retrieval.muse may be the URL of MUSE's dictionaries (file:// too, copied as downloads are):
# en-<lang>.txt of every aligned language
# is then downloaded (rule fetch_muse).
MUSE_URL = (RETRIEVAL["muse"] or "").startswith(("http://", "https://", "file://"))
MUSE_DOWNLOADS = DOWNLOADS / "muse"
MUSE_LANGUAGES = sorted(
    {lang for lang in RETRIEVAL_VECTORS["languages"] if lang != "en"}
    | set(ROTATED_VECTORS)
)
MUSE_SECTIONS = ["full", "0-5000", "5000-6500"]
# alignment.mappings: two (AME-CMR's R_deen) also trains on MUSE's <lang>-en dictionaries
MUSE_REVERSE = any(
    record["word_embeddings"] == "ame" and record["alignment"]["mappings"] == "two"
    for record in RETRIEVAL_RECORDS.values()
)
if RETRIEVAL["muse"] and not MUSE_URL and MUSE_REVERSE:
    require_local_data(
        "retrieval.muse",
        RETRIEVAL["muse"],
        "MUSE's <lang>-en dictionaries (alignment.mappings: two)",
        local_data.muse_reverse_expected(MUSE_LANGUAGES),
    )
MUSE_SUFFIXES = {"full": "", "0-5000": ".0-5000", "5000-6500": ".5000-6500"}
MUSE_FILES = [
    MUSE_DOWNLOADS / f"{pair}{MUSE_SUFFIXES[section]}.txt"
    for lang in MUSE_LANGUAGES
    for pair in ([f"en-{lang}", f"{lang}-en"] if MUSE_REVERSE else [f"en-{lang}"])
    for section in MUSE_SECTIONS
]
RETRIEVAL_RUN_FILES = [
    RETRIEVAL_DIR / name / f"seed{seed}" / "metrics.json"
    for name, record in RETRIEVAL_RECORDS.items()
    for seed in seeds(record)
]


def vectors_file(lang):
    return VECTORS_DIR / f"wiki.{lang}.align.vec"


def muse_dir(dataset):
    if MUSE_URL:
        return MUSE_DOWNLOADS
    return RETRIEVAL["muse"] or DEMO_MARKERS[dataset].parent / "muse"


def demo_inputs(dataset):
    """The demo world(s) or downloads whose MUSE lists / STS sets a run of ``dataset`` reads."""
    needed = set()
    if MUSE_URL:
        needed |= set(MUSE_FILES)
    elif not RETRIEVAL["muse"]:
        needed.add(DEMO_MARKERS[dataset])
    if not RETRIEVAL["sts"]:
        needed.add(DEMO_MARKERS["multi30k"])
    return sorted(needed)


# data set of a variant -> its prepared root and the file that marks it complete
DATASETS = {
    "multi30k": (MULTI30K_ROOT, MULTI30K_MARKER),
    "coco": (COCO_ROOT, COCO_MARKER),
}


def retrieval_inputs(wildcards):
    """The variant's data set, features of its backbone for its train/validation/test splits,
    and vectors."""
    record = RETRIEVAL_RECORDS[wildcards.variant]
    dataset = record["dataset"]
    splits = {"train", record["validation"]["split"], record["test"]["split"]}
    files = {
        f"features_{s}": feature_file(record["backbone"], s, dataset)
        for s in sorted(splits)
    }
    files["data"] = DATASETS[dataset][1]
    files["demo"] = demo_inputs(dataset)
    if record["word_embeddings"] != "random":
        langs = {lang for src in record["train_data"] for lang in src["languages"]}
        files |= {f"vectors_{lang}": vectors_file(lang) for lang in sorted(langs)}
    return files


def retrieval_local_data(wildcards):
    """The local data sets a run reads: the STS sets (evaluated on STS), MUSE's <lang>-en
    dictionaries (AME's two mappings)."""
    record = RETRIEVAL_RECORDS[wildcards.variant]
    keys = ["retrieval.sts"] if record["sts"] else []
    if record["word_embeddings"] == "ame" and record["alignment"]["mappings"] == "two":
        keys.append("retrieval.muse")
    return keys


# Keys of a record that change no result of its training: the tables' labels (paper_rows) and
# the device (a throughput setting, passed as a resource)
NOT_RESULTS = ("paper_rows", "device")


def without_throughput(record):
    """A record without its device (a throughput setting)."""
    return {k: v for k, v in record.items() if k != "device"}


def retrieval_section(wildcards):
    """The defaults and this one variant, without the keys that change no result: editing
    another variant, a table label or the device does not rerun this one."""
    name = wildcards.variant

    def results_only(record):
        return {k: v for k, v in record.items() if k not in NOT_RESULTS}

    return json.dumps(
        {
            "defaults": results_only(RETRIEVAL["defaults"]),
            "variants": {name: results_only(RETRIEVAL["variants"][name])},
        }
    )


def retrieval_options(wildcards):
    record = RETRIEVAL_RECORDS[wildcards.variant]
    root = DATASETS[record["dataset"]][0]
    options = f"--data-root {quote(str(root))} --features-root {quote(str(root / 'features'))}"
    options += f" --muse {quote(str(muse_dir(record['dataset'])))} --sts {quote(str(RETRIEVAL_STS))}"
    if record["word_embeddings"] != "random":
        options += f" --vectors {quote(str(VECTORS_DIR))}"
    return options
