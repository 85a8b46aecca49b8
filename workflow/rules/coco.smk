"""MS-COCO data stage: the Karpathy split with English captions, Japanese captions (STAIR
Captions) and the MIC test set of Rajendran et al., prepared into the Multi30K-style layout the
retrieval and pivot stages read (results/coco; docs/coco.md). The demo source generates a
COCO-layout demo world in the upstream formats and prepares it with the same command.
"""

import re

COCO = config["coco"]
COCO_ROOT = RESULTS / "coco"
COCO_MARKER = COCO_ROOT / "MANIFEST.sha256"
DEMO_COCO = RESULTS / "demo/coco"

if COCO["source"] == "demo":
    COCO_FILES = {
        "karpathy": [{"location": DEMO_COCO / "annotations/dataset_coco.json"}],
        "japanese": [
            {"location": DEMO_COCO / f"annotations/stair_captions_v1.2_{split}.json"}
            for split in ("train", "val")
        ],
        "mic": [{"location": DEMO_COCO / "mic"}],
    }
    COCO_INPUT = DEMO_COCO / "MANIFEST.sha256"
    COCO_IMAGES, COCO_IMAGES_INPUT = DEMO_COCO / "images", COCO_INPUT
else:
    COCO_FILES = {
        "karpathy": [COCO["karpathy"]],
        "japanese": COCO["japanese"],
        "mic": [COCO["mic"]],
    }
    COCO_INPUT = []
    if not str(COCO["mic"]["location"]).startswith(("http://", "https://")):
        require_local_data(
            "coco.mic.location",
            COCO["mic"]["location"],
            "the MIC test set (docs/coco.md)",
            local_data.MIC,
        )
    # a user's image directory is a parameter, not an input (as multi30k.images, features.smk);
    # without one, COCO's image archives are fetched and unpacked (rule fetch_coco_images)
    if COCO["images"]:
        require_local_data(
            "coco.images", COCO["images"], "COCO's 2014 images", local_data.COCO_IMAGES
        )
        COCO_IMAGES, COCO_IMAGES_INPUT = COCO["images"], []
    else:
        COCO_IMAGES = RESULTS / "coco_images"
        COCO_IMAGES_INPUT = COCO_IMAGES / "MANIFEST.sha256"
# --karpathy LOC --japanese LOC LOC --mic LOC --sha256 KEY=HASH ...: a location is a path or
# URL; a hash is keyed by its file's location, the MIC set's by file name.
COCO_OPTIONS = " ".join(
    f"--{kind} " + " ".join(quote(str(item["location"])) for item in items)
    for kind, items in COCO_FILES.items()
)
COCO_OPTIONS += "".join(
    f" --sha256 {quote('{}={}'.format(item['location'], item['sha256']))}"
    for kind in ("karpathy", "japanese")
    for item in COCO_FILES[kind]
    if item.get("sha256")
)
COCO_OPTIONS += "".join(
    f" --sha256 {quote('{}={}'.format(name, value))}"
    for name, value in (COCO_FILES["mic"][0].get("sha256") or {}).items()
)
COCO_OPTIONS += f" --pivot-split {COCO['pivot_split']}"


rule demo_coco:
    output:
        DEMO_COCO / "MANIFEST.sha256",
    log:
        LOGS / "data/demo_coco.log",
    benchmark:
        BENCHMARKS / "data/demo_coco.tsv"
    conda:
        "../../envs/core.yaml"
    threads: 1
    resources:
        mem_mb=2000,
        runtime=30,
    params:
        out=DEMO_COCO,
        seed=COCO["demo"]["seed"],
        images=COCO["demo"]["images"],
    shell:
        "mlmm demo-coco {params.out:q} --seed {params.seed} --images {params.images} > {log:q} 2>&1"


rule prepare_coco:
    input:
        COCO_INPUT,
        local=local_data_input(["coco.mic.location"]),
    output:
        COCO_MARKER,
    log:
        LOGS / "data/prepare_coco.log",
    benchmark:
        BENCHMARKS / "data/prepare_coco.tsv"
    # reaches the network: runs on the submitting host, never a compute node
    localrule: True
    conda:
        "../../envs/core.yaml"
    threads: 1
    resources:
        mem_mb=8000,
        runtime=60,
    params:
        options=COCO_OPTIONS,
        out=COCO_ROOT,
    shell:
        "mlmm prepare-coco {params.options} --out {params.out:q} > {log:q} 2>&1"


if COCO["source"] == "files" and not COCO["images"]:
    # Download (the submitting host, which reaches the internet) apart from unpacking 19 GB
    # (a compute job): each archive given by URL lands in <downloads>/coco/<name>, kept by
    # `make clean`; an archive given by path is read where it is.
    COCO_ARCHIVE_URLS = {
        DOWNLOADS / "coco" / Path(str(a["location"])).name: a
        for a in COCO["image_archives"]
        if str(a["location"]).startswith(("http://", "https://"))
    }
    COCO_ARCHIVES = [
        next((p for p, u in COCO_ARCHIVE_URLS.items() if u is a), a["location"])
        for a in COCO["image_archives"]
    ]

    rule fetch_coco_images:
        output:
            protected(DOWNLOADS / "coco" / "{archive}"),
        log:
            LOGS / "data/fetch_coco_images_{archive}.log",
        wildcard_constraints:
            archive="|".join(re.escape(p.name) for p in COCO_ARCHIVE_URLS) or "none",
        # reaches the network: runs on the submitting host, never a compute node
        localrule: True
        conda:
            "../../envs/core.yaml"
        threads: 1
        resources:
            mem_mb=1000,
            runtime=600,
        params:
            url=lambda w: COCO_ARCHIVE_URLS[DOWNLOADS / "coco" / w.archive]["location"],
            sha256=lambda w: (
                f"--sha256 {COCO_ARCHIVE_URLS[DOWNLOADS / 'coco' / w.archive]['sha256']}"
                if COCO_ARCHIVE_URLS[DOWNLOADS / "coco" / w.archive].get("sha256")
                else ""
            ),
        shell:
            "mlmm download {params.url:q} {params.sha256} --out {output:q} > {log:q} 2>&1"

    rule unpack_coco_images:
        input:
            COCO_ARCHIVES,
        output:
            COCO_IMAGES_INPUT,
        log:
            LOGS / "data/unpack_coco_images.log",
        benchmark:
            BENCHMARKS / "data/unpack_coco_images.tsv"
        conda:
            "../../envs/core.yaml"
        threads: 1
        resources:
            mem_mb=2000,
            runtime=600,
        params:
            # sha256 keyed by file name: the archives are now local copies
            sha256="".join(
                f" --sha256 {quote('{}={}'.format(Path(str(a['location'])).name, a['sha256']))}"
                for a in COCO["image_archives"]
                if a.get("sha256")
            ),
            out=COCO_IMAGES,
        shell:
            "mlmm fetch-coco-images --archives {input:q}{params.sha256}"
            " --out {params.out:q} > {log:q} 2>&1"
