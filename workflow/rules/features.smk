"""Image features: one array per (dataset, split, backbone).

results/multi30k/features/<backbone>/<split>.npy (row i = image i of the split list) with
<split>.json (backbone, dim, dtype, preprocessing, skipped rows, provenance, timings) and
<split>.txt (the list). Consumers depend on `feature_file(backbone, split)`; the configured
backbone's files are FEATURE_FILES.
"""

from snakemake.exceptions import WorkflowError

FEATURES = config["features"]
FEATURE_DIR = RESULTS / "multi30k/features"
FEATURE_SPLITS = ["train", "val", "test_2016_flickr"]
FEATURE_BACKBONES = ["resnet50", "vgg19", "resnet152", "efficientnet_lite0"]


def feature_file(backbone, split):
    """The .npy of one split; its .json and .txt lie beside it and are made with it."""
    return FEATURE_DIR / backbone / f"{split}.npy"


FEATURE_FILES = [feature_file(FEATURES["backbone"], split) for split in FEATURE_SPLITS]


def split_list(split):
    """The verified copy's image list of a split (made by fetch_multi30k)."""
    return MULTI30K_ROOT / f"data/task1/image_splits/{split}.txt"


def features_images_dir(wildcards=None):
    """multi30k.images if set, else the demo world's images when the source is the demo."""
    if MULTI30K["images"]:
        return MULTI30K["images"]
    if MULTI30K["source"] == "demo":
        return DEMO_WORLD / "images"
    raise WorkflowError(
        "config multi30k.images: the directory of the Flickr30K images is needed for image "
        f"features when multi30k.source is {MULTI30K['source']!r}"
    )


def features_images_input(wildcards):
    """What the images come from: the demo world rule, or the user's directory itself."""
    if not MULTI30K["images"] and MULTI30K["source"] == "demo":
        return DEMO_WORLD / "MANIFEST.sha256"
    return features_images_dir()


def features_options(wildcards):
    """Optional command-line settings; unset ones keep the command's device-aware defaults."""
    options = {
        "--batch-size": FEATURES["batch_size"],
        "--workers": FEATURES["workers"],
    }
    return " ".join(
        f"{flag} {value}" for flag, value in options.items() if value is not None
    )


rule extract_features:
    input:
        multi30k=MULTI30K_MARKER,
        images=features_images_input,
    output:
        features=FEATURE_DIR / "{backbone}/{split}.npy",
        sidecar=FEATURE_DIR / "{backbone}/{split}.json",
        image_list=FEATURE_DIR / "{backbone}/{split}.txt",
    log:
        LOGS / "features/{backbone}_{split}.log",
    benchmark:
        BENCHMARKS / "features/{backbone}_{split}.tsv"
    wildcard_constraints:
        backbone="|".join(FEATURE_BACKBONES),
        split="|".join(FEATURE_SPLITS),
    conda:
        "../../envs/torch.yaml"
    threads: FEATURES["threads"]
    # Minutes: one GPU needs a few for the 29k training images; a CPU node hours for resnet152.
    resources:
        mem_mb=8000,
        runtime=360,
    params:
        images=features_images_dir,
        split=lambda wildcards: split_list(wildcards.split),
        options=features_options,
        device=FEATURES["device"],
        dtype=FEATURES["dtype"],
        weights=FEATURES["weights"],
        shard_size=FEATURES["shard_size"],
        on_bad_image=FEATURES["on_bad_image"],
    shell:
        "mlmm features --backbone {wildcards.backbone} --images {params.images}"
        " --split {params.split} --out {output.features} --device {params.device}"
        " --dtype {params.dtype} --weights {params.weights} --threads {threads}"
        " --shard-size {params.shard_size} --on-bad-image {params.on_bad_image}"
        " {params.options} > {log} 2>&1"
