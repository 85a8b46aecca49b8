"""Image features: one array per (dataset, split, backbone).

results/<dataset>/features/<backbone>/<split>.npy (dataset multi30k or coco; row i = image i
of the split list) with <split>.json (backbone, dim, dtype, preprocessing, skipped rows,
provenance, timings) and <split>.txt (the list); see docs/features.md.
"""

from mlmm.local_data import tree_identity

FEATURES = config["features"]
FEATURE_DIR = RESULTS / "multi30k/features"
# split lists per data set: <root>/data/task1/image_splits/<split>.txt
FEATURE_SPLITS = {
    "multi30k": ["train", "val", "test_2016_flickr"],
    "coco": ["train", "val", "test", "mic"],
}
FEATURE_BACKBONES = [
    "resnet50",
    "vgg19",
    "vgg19_bn",
    "resnet152",
    "efficientnet_lite0",
    "alexnet_fc6",
]


# feature_file(backbone, split[, dataset]): the .npy consumers depend on; the .json and .txt
# beside it are made by the same job. FEATURE_FILES: the configured backbone's. (Lambdas:
# `snakemake --lint` wants no function definitions beside rules.)
feature_file = (
    lambda backbone, split, dataset="multi30k": RESULTS
    / dataset
    / "features"
    / backbone
    / f"{split}.npy"
)
coco_feature_file = lambda backbone, split: feature_file(backbone, split, "coco")
FEATURE_FILES = [
    feature_file(FEATURES["backbone"], split) for split in FEATURE_SPLITS["multi30k"]
]

# The images: multi30k.images if set, else the demo world's when the source is the demo (its
# rule is then the input). Otherwise the rule's input names the missing setting, so only runs
# that need image features stop, with that message. The same for coco.images.
# A user's image directory is a parameter, not an input, so that a dry run of the paper config
# lists every job without the images; `mlmm features` names any missing image when it runs.
if MULTI30K["images"]:
    require_local_data(
        "multi30k.images",
        MULTI30K["images"],
        "the Flickr30K images",
        local_data.MULTI30K_IMAGES,
    )
    FEATURE_IMAGES, FEATURE_IMAGES_INPUT = MULTI30K["images"], []
elif MULTI30K["source"] == "demo":
    FEATURE_IMAGES = DEMO_WORLD / "images"
    FEATURE_IMAGES_INPUT = DEMO_WORLD / "MANIFEST.sha256"
else:
    FEATURE_IMAGES = FEATURE_IMAGES_INPUT = (
        "<config multi30k.images: set it to the directory of the Flickr30K images>"
    )
# The Multi30K release's published ResNet-50 average-pool features, when configured, instead of
# extracting them from the images (rule published_features; docs/data.md).
PUBLISHED_FEATURES = FEATURES["published"]
if PUBLISHED_FEATURES:
    require_local_data(
        "features.published",
        PUBLISHED_FEATURES,
        "the Multi30K release's ResNet-50 average-pool features (docs/data.md)",
        [f"{split}-resnet50-avgpool.npy" for split in FEATURE_SPLITS["multi30k"]],
    )
FEATURE_SOURCES = {  # data set -> (split lists marker, image directory, its input)
    "multi30k": (MULTI30K_MARKER, FEATURE_IMAGES, FEATURE_IMAGES_INPUT),
    "coco": (COCO_MARKER, COCO_IMAGES, COCO_IMAGES_INPUT),
}
# A user's image directory (no input): the names, sizes and contents of its files, a param of
# extract_features, so that an image replaced, edited, added or removed reruns the extraction
# and a copy with new mtimes does not (mlmm.local_data.tree_identity: each file's digest is
# kept under its size and mtime in the working directory's .snakemake/, so planning reads an
# image only when it changed).
IMAGES_IDENTITY = {
    dataset: (
        tree_identity(images, Path(".snakemake/mlmm/image_digests") / f"{dataset}.json")
        if images_input == []
        else ""
    )
    for dataset, (_, images, images_input) in FEATURE_SOURCES.items()
}
# Unset batch size / workers keep the command's device-aware defaults.
FEATURE_OPTIONS = " ".join(
    f"--{key.replace('_', '-')} {FEATURES[key]}"
    for key in ("batch_size", "workers")
    if FEATURES[key] is not None
)


rule extract_features:
    input:
        split_lists=lambda wildcards: FEATURE_SOURCES[wildcards.dataset][0],
        images=lambda wildcards: FEATURE_SOURCES[wildcards.dataset][2],
        # (none for the features that rule published_features makes: Snakemake plans a job of
        # each rule that could make a file before choosing by ruleorder)
        local=local_data_input(
            lambda w: (
                []
                if PUBLISHED_FEATURES
                and (w.dataset, w.backbone) == ("multi30k", "resnet50")
                else [f"{w.dataset}.images"]
            )
        ),
    output:
        features=RESULTS / "{dataset}/features/{backbone}/{split}.npy",
        sidecar=RESULTS / "{dataset}/features/{backbone}/{split}.json",
        image_list=RESULTS / "{dataset}/features/{backbone}/{split}.txt",
    log:
        LOGS / "features/{dataset}_{backbone}_{split}.log",
    benchmark:
        BENCHMARKS / "features/{dataset}_{backbone}_{split}.tsv"
    wildcard_constraints:
        dataset="|".join(FEATURE_SPLITS),
        backbone="|".join(FEATURE_BACKBONES),
        split="|".join(
            sorted({s for splits in FEATURE_SPLITS.values() for s in splits})
        ),
    conda:
        "../../envs/torch.yaml"
    threads: FEATURES["threads"]
    # Minutes: one GPU needs a few for the 29k training images; a CPU node hours for resnet152.
    resources:
        mem_mb=8000,
        runtime=720,
        gpu=gpu_need("extract_features", lambda w: FEATURES["device"]),
        # throughput settings (device, batch size, loader workers), not results: a resource,
        # not a param, so that changing one reruns nothing
        feature_throughput=f"--device {FEATURES['device']} {FEATURE_OPTIONS}".strip(),
    params:
        images=lambda wildcards: FEATURE_SOURCES[wildcards.dataset][1],
        images_identity=lambda wildcards: IMAGES_IDENTITY[wildcards.dataset],
        split=lambda wildcards: RESULTS
        / wildcards.dataset
        / f"data/task1/image_splits/{wildcards.split}.txt",
        dtype=FEATURES["dtype"],
        precision=FEATURES["precision"],
        decode=FEATURES["decode"],
        weights=FEATURES["weights"],
        shard_size=FEATURES["shard_size"],
        on_bad_image=FEATURES["on_bad_image"],
    shell:
        "mlmm features --backbone {wildcards.backbone} --images {params.images:q}"
        " --dataset {wildcards.dataset}"
        " --split {params.split:q} --out {output.features:q} {resources.feature_throughput}"
        " --dtype {params.dtype} --precision {params.precision} --decode {params.decode}"
        " --weights {params.weights} --threads {threads}"
        " --shard-size {params.shard_size} --on-bad-image {params.on_bad_image}"
        " > {log:q} 2>&1"


if PUBLISHED_FEATURES:

    ruleorder: published_features > extract_features

    rule published_features:
        input:
            split_lists=MULTI30K_MARKER,
            local=local_data_input(["features.published"]),
            published=lambda w: Path(PUBLISHED_FEATURES)
            / f"{w.split}-resnet50-avgpool.npy",
        output:
            features=RESULTS / "multi30k/features/resnet50/{split}.npy",
            sidecar=RESULTS / "multi30k/features/resnet50/{split}.json",
            image_list=RESULTS / "multi30k/features/resnet50/{split}.txt",
        log:
            LOGS / "features/multi30k_resnet50_{split}.log",
        wildcard_constraints:
            split="|".join(FEATURE_SPLITS["multi30k"]),
        conda:
            "../../envs/torch.yaml"
        threads: 1
        resources:
            mem_mb=4000,
            runtime=30,
        params:
            published=PUBLISHED_FEATURES,
            split=lambda w: RESULTS / f"multi30k/data/task1/image_splits/{w.split}.txt",
        shell:
            "mlmm published-features --backbone resnet50 --published {params.published:q}"
            " --split {params.split:q} --out {output.features:q} > {log:q} 2>&1"
