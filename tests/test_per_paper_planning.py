"""Each paper, and each stage, plans with its own data only: the paper configuration's tables
of one paper as targets, with only that paper's local data sets present (generated in the real
layouts by ``mlmm demo-paper-layouts``), make a dry run; one of its sets missing, the dry run
stops with one line naming that set's config key; lint and list-rules need no data at all.
Dry runs only (``snakemake -n``): nothing is trained."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest
from helpers.workflow import BIN, REPO, tool_env

from mlmm.catalogue import ALL_FIGURES, ALL_TABLES

# dry runs of the paper configuration on generated layouts: the second tier
pytestmark = [pytest.mark.slow, pytest.mark.full]

PAPER = REPO / "config" / "paper.yaml"
# The local data sets config/paper.yaml reads (at its default paths, relative to the working
# directory) by config key
LOCAL = {
    "multi30k.images": "flickr30k-images",
    "retrieval.sts": "semeval-sts",
    "nmt.meteor_jar": "meteor-1.5",
    "coco.mic.location": "mic-test",
    "ted.path": "ted-cldc",
}
# What each paper's tables and figures read (docs/data.md, "What to download for each paper")
PAPER_DATA = {
    "kadar2018": ["multi30k.images"],
    "calixto2017": ["multi30k.images", "retrieval.sts", "nmt.meteor_jar"],
    "ame2019": ["multi30k.images", "coco.mic.location"],
    "rajendran2016": ["ted.path", "coco.mic.location"],
}
# Each stage's own products: what they read
STAGE_TARGETS = {
    "results/tables/kadar2018_table1.md": [],  # data: Multi30K's text only
    "results/multi30k/features/resnet50/train.npy": ["multi30k.images"],
    "results/ted/corpus/index.json": ["ted.path"],
    "results/coco/MANIFEST.sha256": ["coco.mic.location"],
}


def _targets(paper: str) -> list[str]:
    return [f"results/tables/{stem}.md" for stem in ALL_TABLES if stem.startswith(paper)] + [
        f"results/figures/{stem}.png" for stem in ALL_FIGURES if stem.startswith(paper)
    ]


@pytest.fixture(scope="module")
def layouts(tmp_path_factory) -> Path:
    """Every local data set and download of the paper configuration, generated small."""
    from mlmm.demo.paper_layouts import write_paper_layouts

    out = tmp_path_factory.mktemp("layouts") / "data"
    write_paper_layouts(
        out, images=30, coco_images=60, coco_test_images=10, ted_train=4, ted_test=2
    )
    return out


def _workdir(root: Path, layouts: Path, keys: list[str]) -> Path:
    """A working directory holding (links to) the local data sets ``keys`` only."""
    root.mkdir()
    for key in keys:
        (root / LOCAL[key]).symlink_to(layouts / LOCAL[key], target_is_directory=True)
    return root


def _snakemake(workdir: Path, layouts: Path, *args: str) -> subprocess.CompletedProcess:
    configs = ["--configfile", str(PAPER), str(layouts / "locations.yaml")]
    return subprocess.run(
        [str(BIN / "snakemake"), "-s", str(REPO / "Snakefile"), "-d", str(workdir), *configs,
         *args],
        env=tool_env(), stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, timeout=600,
    )  # fmt: skip


def _message(output: str) -> list[str]:
    return output[output.index("config error") :].splitlines()


@pytest.mark.parametrize("paper", sorted(PAPER_DATA))
def test_a_papers_tables_plan_with_its_data_only(paper, layouts, tmp_path):
    workdir = _workdir(tmp_path / "all", layouts, PAPER_DATA[paper])
    targets = _targets(paper)
    assert targets
    proc = _snakemake(workdir, layouts, "-n", "-q", "--", *targets)
    assert proc.returncode == 0, proc.stdout[-3000:]
    # one of its sets missing: one line naming that set (the last one: the first is named
    # also when the planning meets the others first)
    missing = PAPER_DATA[paper][-1]
    kept = [key for key in PAPER_DATA[paper] if key != missing]
    workdir = _workdir(tmp_path / "one_missing", layouts, kept)
    proc = _snakemake(workdir, layouts, "-n", "-q", "--", *targets)
    assert proc.returncode != 0 and "Traceback" not in proc.stdout, proc.stdout[-3000:]
    message = _message(proc.stdout)
    assert message[0].startswith("config error: 1 local data set(s) missing"), message
    assert f"key '{missing}'" in message[1] and "found nothing there" in message[1], message


@pytest.mark.parametrize("target", sorted(STAGE_TARGETS))
def test_a_stages_products_plan_with_their_data_only(target, layouts, tmp_path):
    workdir = _workdir(tmp_path / "w", layouts, STAGE_TARGETS[target])
    proc = _snakemake(workdir, layouts, "-n", "-q", "--", target)
    assert proc.returncode == 0, proc.stdout[-3000:]


def test_lint_and_list_rules_need_no_local_data(layouts, tmp_path):
    workdir = _workdir(tmp_path / "w", layouts, [])
    listed = _snakemake(workdir, layouts, "--list-rules")
    assert listed.returncode == 0 and "train_retrieval" in listed.stdout, listed.stdout[-3000:]
    linted = _snakemake(workdir, layouts, "--lint")
    assert "config error" not in linted.stdout, linted.stdout[-3000:]
    # the whole configuration still names every missing set at once
    proc = _snakemake(workdir, layouts, "-n", "-q")
    assert proc.returncode != 0
    message = _message(proc.stdout)
    assert message[0].startswith(f"config error: {len(LOCAL)} local data set(s)"), message
    assert {line.split("'")[1] for line in message[1:]} == set(LOCAL)


def test_kadars_tables_plan_from_published_features_with_no_images(layouts, tmp_path):
    """features.published: the release's <split>-resnet50-avgpool.npy stand in for the
    Flickr30K images; Kádár's tables plan with no image directory, from those arrays."""
    import numpy as np

    published = tmp_path / "imgfeats"
    published.mkdir()
    for split in ("train", "val", "test_2016_flickr"):
        np.save(published / f"{split}-resnet50-avgpool.npy", np.ones((3, 2048), np.float16))
    workdir = _workdir(tmp_path / "w", layouts, [])
    proc = _snakemake(workdir, layouts, "-n", "--config", f"features={{published: {published}}}",
                      "--", *_targets("kadar2018"))  # fmt: skip
    assert proc.returncode == 0, proc.stdout[-3000:]
    jobs = proc.stdout.split("Job stats:", 1)[1].split("total", 1)[0]
    assert "published_features" in jobs and "extract_features" not in jobs, jobs
    # an array missing: the one line naming the key
    (published / "val-resnet50-avgpool.npy").unlink()
    setting = f"features={{published: {published}}}"
    proc = _snakemake(workdir, layouts, "-n", "-q", "--config", setting, "--",
                      *_targets("kadar2018"))  # fmt: skip
    message = _message(proc.stdout)
    assert proc.returncode != 0 and "key 'features.published'" in message[1], message
    assert "val-resnet50-avgpool.npy" in message[1], message
