"""Stand-ins for the local data sets config/paper.yaml reads, so that the paper configuration
plans without them."""

from __future__ import annotations

from pathlib import Path

import yaml

REPO = Path(__file__).resolve().parents[2]

# The local data sets config/paper.yaml reads, relative to the working directory: the planning
# stops naming the first one that is missing.
PAPER_LOCAL_DATA = {
    "coco.mic.location": "mic-test",
    "multi30k.images": "flickr30k-images",
    "nmt.meteor_jar": "meteor-1.5/meteor-1.5.jar",
    "retrieval.sts": "semeval-sts",
    "ted.path": "ted-cldc",
}


def provide_local_data(root: Path, name: str) -> None:
    """A stand-in for one local data set of PAPER_LOCAL_DATA: an empty file for each file the
    planning expects there (mlmm.local_data), so that the paper config plans."""
    directory, patterns = _local_data_expected()[name]
    for pattern in patterns:
        path = root / directory / pattern.removeprefix("**/").replace("*", "x")
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(b"")


def _local_data_expected() -> dict[str, tuple[str, tuple[str, ...]]]:
    """Each PAPER_LOCAL_DATA name: its directory and the files expected inside."""
    from mlmm import local_data

    ted = yaml.safe_load((REPO / "config.yaml").read_text(encoding="utf-8"))["ted"]
    jar = PAPER_LOCAL_DATA["nmt.meteor_jar"]
    return {
        "mic-test": ("mic-test", local_data.MIC),
        "flickr30k-images": ("flickr30k-images", local_data.MULTI30K_IMAGES),
        "semeval-sts": ("semeval-sts", local_data.STS),
        "ted-cldc": ("ted-cldc", local_data.ted_expected(ted["languages"], ted["corpus_codes"])),
        jar: (str(Path(jar).parent), local_data.meteor_expected(jar, "de", True)),
    }
