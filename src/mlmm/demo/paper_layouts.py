"""The demo worlds written into every real layout config/paper.yaml reads: a miniature of the
real data, so that the paper configuration runs end to end offline (tests/test_paper_miniature.py,
docs/workflow.md).

``write_paper_layouts(out)`` makes ``out`` a working directory for
``snakemake -d OUT --configfile config/paper.yaml config/paper_miniature.yaml OUT/locations.yaml``:

- the paper config's local data sets at its default relative paths: ``flickr30k-images/`` (the
  Multi30K demo world's JPEGs), ``semeval-sts/<year>/STS.{input,gs}.images.txt``, ``mic-test/``
  (the COCO demo world's MIC set), ``ted-cldc/`` (the TED demo corpus, every language pair)
  and ``meteor-1.5/`` (the METEOR 1.5 jar pycocoevalcap ships, with a German paraphrase table
  made from the demo world's words);
- what the paper config downloads, under ``sources/``: the upstream Multi30K tree with its
  manifest, MUSE dictionaries (full, 0-5000, 5000-6500 sections), fastText-style aligned
  ``wiki.<lang>.align.vec`` and ``cc.ja.300.vec.gz``, Karpathy's ``caption_datasets.zip``, STAIR
  Captions' ``stair_captions_v1.2.tar.gz`` and COCO's ``train2014.zip`` / ``val2014.zip``;
- ``locations.yaml``: the location keys pointing at ``sources/`` (file:// URLs and absolute
  paths, which the fetch helpers copy as they download); only ``LOCATION_KEYS`` appear there.

The data are generated: ``OUT/GENERATED_DATA`` (``GENERATED_MARKER``) says so, and the Snakefile
labels every table and figure made in OUT "generated data in the real layouts" (mlmm.origin), never
"real data". The MIC copy holds the paper's query captions of Rajendran et al. Tables 6-7
(``pivot.examples.paper_queries`` of config/paper.yaml) in place of generated ones, so that the
paper-query path of those tables runs.

``write_paper_layouts``'s default sizes are the miniature's (tests/test_paper_miniature.py):
260 Multi30K-world images (216 train, 22 val, 22 test: Calixto's VSE and MLMME then validate
at 100 and 1132 updates, and the test sets pass K = 10) and 180 COCO-world images, 130 of them
test images (5 folds of 26 > K = 10; MIC 52 > K = 50) and the other 50 the fewest the COCO
world allows, because every image costs ResNet-152 ten-crop features (AME; 3 CPU-seconds an
image at one thread) besides VGG-19 (0.8 s) and ResNet-50 (0.2 s): what needs more images is
listed, with its cost, in the test's NOT_REACHED.

``write_random_backbone_weights(torch_home)`` puts randomly initialised ResNet-50, VGG-19,
ResNet-152 and AlexNet state dicts under torchvision's cache names, so that the paper's
``features.weights: IMAGENET1K_V1`` loads offline. For tests only: the features mean nothing.
"""

from __future__ import annotations

import shutil
import tarfile
import zipfile
from pathlib import Path

import yaml

from mlmm.errors import InputError
from mlmm.io import (
    atomic_path,
    copy_file,
    discard,
    read_json,
    read_yaml,
    temp_dir_beside,
    write_bytes,
    write_text,
)
from mlmm.origin import GENERATED_MARKER

# The keys locations.yaml may set: where data come from, never what is done with them.
LOCATION_KEYS = (
    "multi30k.url",
    "multi30k.manifest",
    "coco.karpathy.location",
    "coco.japanese.location",
    "coco.image_archives.location",
    "retrieval.muse",
    "retrieval.vectors.url",
    "retrieval.vectors.rotated.ja",
)
# MUSE's sections of each dictionary, scaled: 0-5000 (train) the first 80 % of the source
# words, 5000-6500 (test) the rest; full = both.
MUSE_TRAIN_FRACTION = 0.8
# The torchvision architectures behind the paper backbones (resnet50, vgg19, resnet152,
# alexnet_fc6) and the weights the paper config names.
PAPER_ARCHITECTURES = ("resnet50", "vgg19", "resnet152", "alexnet")
# The paper configuration, for the query captions of Rajendran et al. Tables 6-7
PAPER_CONFIG = Path(__file__).resolve().parents[3] / "config" / "paper.yaml"
MIC_CAPTIONS_PER_IMAGE = 5


def write_paper_layouts(
    out: str | Path,
    seed: int = 1,
    images: int = 260,
    coco_images: int = 180,
    coco_test_images: int | None = 130,
    ted_train: int = 30,
    ted_test: int = 10,
    vector_dim: int = 16,
    paper_queries: dict | None = None,
) -> dict:
    """Write the miniature under ``out`` (a new or empty directory); returns the locations.

    ``coco_test_images``: the COCO world's test split (None: a sixth, as ``mlmm demo-coco``);
    ``paper_queries``: the Tables 6-7 query captions to put into the MIC copy (default: those
    of config/paper.yaml)."""
    from mlmm.demo import generate_coco_world, generate_world
    from mlmm.ted.demo import generate as generate_ted

    out = Path(out).resolve()
    if out.exists() and any(out.iterdir()):
        raise InputError(out, "a new or empty directory", "a directory with files")
    out.mkdir(parents=True, exist_ok=True)
    tmp = temp_dir_beside(out)
    try:
        sources = tmp / "sources"
        world = sources / "multi30k"
        generate_world(world, seed=seed, images=images)
        (world / "images").rename(tmp / "flickr30k-images")
        (world / "sts").rename(tmp / "semeval-sts")
        coco = tmp / "coco-world"
        generate_coco_world(
            coco, seed=seed, images=coco_images, ted_train=1, ted_test=1,
            test_images=coco_test_images,
        )  # fmt: skip
        (coco / "mic").rename(tmp / "mic-test")
        if paper_queries is None:
            paper_queries = _paper_queries()
        _plant_paper_queries(tmp / "mic-test", paper_queries)
        generate_ted(tmp / "ted-cldc", seed=seed, train_docs=ted_train, test_docs=ted_test)
        muse = sources / "muse"
        _muse_sections(world / "muse" / "en-de.txt", muse, "de")
        _muse_sections(coco / "muse" / "en-ja.txt", muse, "ja")
        _vectors(world, coco, muse, sources, vector_dim)
        _coco_archives(coco, sources)
        _meteor(world, tmp / "meteor-1.5")
        discard(coco)
        discard(world / "muse")
        write_text(
            tmp / GENERATED_MARKER,
            "Generated by `mlmm demo-paper-layouts`: synthetic data in the real layouts, not the\n"
            "papers' data (mlmm.origin labels every table and figure made here so).\n",
        )
        for path in tmp.iterdir():
            path.rename(out / path.name)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    sources = out / "sources"
    locations = {
        "multi30k": {
            "url": (sources / "multi30k").as_uri(),
            "manifest": str(sources / "multi30k" / "MANIFEST.sha256"),
        },
        "coco": {
            "karpathy": {"location": str(sources / "caption_datasets.zip")},
            "japanese": [{"location": str(sources / "stair_captions_v1.2.tar.gz")}],
            "image_archives": [
                {"location": str(sources / f"{split}.zip")} for split in ("train2014", "val2014")
            ],
        },
        "retrieval": {
            "muse": (sources / "muse").as_uri(),
            "vectors": {
                "url": (sources / "fasttext").as_uri(),
                "rotated": {"ja": str(sources / "cc.ja.300.vec.gz")},
            },
        },
    }
    text = (
        "# Written by `mlmm demo-paper-layouts`: where the miniature's copies of the paper\n"
        "# configuration's downloads are (location keys only; docs/workflow.md).\n"
    )
    write_text(out / "locations.yaml", text + yaml.safe_dump(locations, sort_keys=False))
    return locations


def _paper_queries() -> dict:
    """``pivot.examples.paper_queries`` of config/paper.yaml ({} without the file)."""
    if not PAPER_CONFIG.is_file():
        return {}
    config = read_yaml(PAPER_CONFIG, "the paper configuration") or {}
    return config.get("pivot", {}).get("examples", {}).get("paper_queries") or {}


def _plant_paper_queries(mic: Path, paper_queries: dict) -> None:
    """Each query caption of Tables 6-7 replaces the first caption of its own MIC image (the
    images taken in order per language), so that the paper-query path finds them."""
    for lang in sorted({lang for table in paper_queries.values() for lang in table}):
        wanted = [
            text for table in sorted(paper_queries) for text in paper_queries[table].get(lang, [])
        ]
        path = mic / f"captions.{lang}"
        lines = path.read_text(encoding="utf-8").splitlines()
        if len(wanted) * MIC_CAPTIONS_PER_IMAGE > len(lines):
            raise InputError(
                path, f"captions of at least {len(wanted)} MIC images", str(len(lines))
            )
        for k, text in enumerate(wanted):
            lines[k * MIC_CAPTIONS_PER_IMAGE] = text
        write_text(path, "".join(f"{line}\n" for line in lines))


def _muse_sections(full: Path, muse: Path, lang: str) -> None:
    """en-<lang>.txt and <lang>-en.txt (AME's second mapping trains on the reverse direction),
    each with its two scaled sections, split by source word."""
    forward = full.read_text(encoding="utf-8").splitlines()
    reverse = [" ".join(reversed(line.split())) for line in forward]
    muse.mkdir(parents=True, exist_ok=True)
    for pair, lines in ((f"en-{lang}", forward), (f"{lang}-en", reverse)):
        sources = list(dict.fromkeys(line.split()[0] for line in lines))
        train = set(sources[: max(1, int(len(sources) * MUSE_TRAIN_FRACTION))])
        sections = {
            "": lines,
            ".0-5000": [line for line in lines if line.split()[0] in train],
            ".5000-6500": [line for line in lines if line.split()[0] not in train],
        }
        for suffix, kept in sections.items():
            write_text(muse / f"{pair}{suffix}.txt", "\n".join(kept) + "\n")


def _meteor(world: Path, out: Path) -> None:
    """A METEOR 1.5 distribution in miniature at the paper config's nmt.meteor_jar: the METEOR
    1.5 jar pycocoevalcap ships, and a German paraphrase table in METEOR's format (probability,
    phrase, phrase) pairing the inflected forms of the demo world's German words that share
    their first five letters (the real table is Bannard & Callison-Burch pivot paraphrases)."""
    import gzip

    from pycocoevalcap.meteor import meteor as pycoco_meteor

    jar = Path(pycoco_meteor.__file__).parent / "meteor-1.5.jar"
    (out / "data").mkdir(parents=True)
    copy_file(jar, out / "meteor-1.5.jar")
    words = sorted(
        {
            word
            for path in (world / "data/task2/tok").glob("train.lc.norm.tok.*.de")
            for word in path.read_text(encoding="utf-8").split()
            if len(word) > 5 and word.isalpha()
        }
    )
    pairs = [(a, b) for a in words for b in words if a != b and a[:5] == b[:5]]
    table = "".join(f"0.5\n{a}\n{b}\n" for a, b in pairs)
    write_bytes(out / "data" / "paraphrase-de.gz", gzip.compress(table.encode("utf-8"), mtime=0))


def _vectors(world: Path, coco: Path, muse: Path, sources: Path, dim: int) -> None:
    """fastText-style aligned en/de vectors (the demo derivation) and Japanese crawl-style
    vectors of the STAIR captions' MeCab tokens (PPMI+SVD), gzipped as cc.ja.300.vec.gz is."""
    import gzip

    from mlmm.data.coco import tokenise_japanese
    from mlmm.demo.word_vectors import derive_demo, ppmi_svd

    derive_demo(world, muse, ["en", "de"], dim, MUSE_TRAIN_FRACTION, sources / "fasttext")
    sentences = []
    for name in sorted((coco / "annotations").glob("stair_captions_*.json")):
        document = read_json(name)
        sentences += [tokenise_japanese(a["caption"]) for a in document["annotations"]]
    vectors = ppmi_svd(sentences, dim)
    lines = [f"{len(vectors)} {dim}\n"]
    lines += [word + " " + " ".join(f"{x:.5f}" for x in v) + "\n" for word, v in vectors.items()]
    text = "".join(lines).encode("utf-8")
    write_bytes(sources / "cc.ja.300.vec.gz", gzip.compress(text, mtime=0))


def _coco_archives(coco: Path, sources: Path) -> None:
    """The COCO world's files packed as the real downloads are."""
    with zipfile.ZipFile(sources / "caption_datasets.zip", "w") as archive:
        archive.write(coco / "annotations" / "dataset_coco.json", "dataset_coco.json")
    with tarfile.open(sources / "stair_captions_v1.2.tar.gz", "w:gz") as archive:
        for name in sorted((coco / "annotations").glob("stair_captions_*.json")):
            archive.add(name, name.name)
    for split in ("train2014", "val2014"):
        with zipfile.ZipFile(sources / f"{split}.zip", "w", zipfile.ZIP_STORED) as archive:
            for image in sorted((coco / "images" / split).iterdir()):
                archive.write(image, f"{split}/{image.name}")


def write_random_backbone_weights(torch_home: str | Path, seed: int = 0) -> list[Path]:
    """Random-init state dicts of the paper backbones under ``torch_home/hub/checkpoints`` with
    the file names torchvision's IMAGENET1K_V1 weights download to (torch.hub loads a cached
    file without its network check). Refuses to replace a file: never into a real cache."""
    import torch
    import torchvision

    checkpoints = Path(torch_home) / "hub" / "checkpoints"
    checkpoints.mkdir(parents=True, exist_ok=True)
    written = []
    torch.manual_seed(seed)
    for arch in PAPER_ARCHITECTURES:
        weights = torchvision.models.get_model_weights(arch).IMAGENET1K_V1
        target = checkpoints / weights.url.rsplit("/", 1)[-1]
        if target.exists():
            raise InputError(target, "no file there (random weights never replace one)", "a file")
        state = torchvision.models.get_model(arch, weights=None).state_dict()
        with atomic_path(target) as tmp:
            torch.save({k: v.half() if v.is_floating_point() else v for k, v in state.items()}, tmp)
        written.append(target)
    return written


def flattened_keys(record: dict, prefix: str = "") -> list[str]:
    """Dotted key paths of every leaf of a config record; a list of records contributes its
    items' keys under the list's own key (coco.image_archives.location)."""
    keys = []
    for key, value in record.items():
        path = f"{prefix}{key}"
        if isinstance(value, dict) and value:
            keys += flattened_keys(value, path + ".")
        elif isinstance(value, list) and value and all(isinstance(v, dict) for v in value):
            keys += sorted({k for item in value for k in flattened_keys(item, path + ".")})
        else:
            keys.append(path)
    return keys
