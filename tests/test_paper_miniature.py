"""The paper configuration in miniature (issue 19 deliverable 2): config/paper.yaml, run by
Snakemake on the demo worlds written into every real layout it reads (``mlmm
demo-paper-layouts``), with config/paper_miniature.yaml changing sizes only and the generated
locations.yaml changing location keys only. Every rule of the paper DAG runs, every paper table
and figure is written.

The backbones load torchvision's IMAGENET1K_V1 file names from a temporary TORCH_HOME holding
random weights (``write_random_backbone_weights``): offline there are no pretrained weights, and
the paper's ``features.weights`` stays as it is.
"""

from __future__ import annotations

import fnmatch
import re
import subprocess
import time
from pathlib import Path

import pandas as pd
import pytest
import yaml
from conftest import BIN, LOCAL_RUN, REPO, tool_env
from paper_config import paper_variant
from test_bad_inputs import PAPER_LOCAL_DATA, provide_local_data

from mlmm.catalogue import ALL_FIGURES, ALL_TABLES, CLAIM_PAPERS
from mlmm.demo.paper_layouts import LOCATION_KEYS, flattened_keys

PAPER = REPO / "config" / "paper.yaml"
MINIATURE = REPO / "config" / "paper_miniature.yaml"
# The only keys config/paper_miniature.yaml may set: sizes (dimensions, epochs and step counts,
# seeds, beam, n-best size, iterations, patience counts), never the protocol (loss, batching,
# selection, data portions, splits, decoder, features/backbone, reranking features).
SIZE_KEYS = (
    "retrieval.defaults.epochs",
    "retrieval.defaults.seeds",
    "retrieval.defaults.embed_dim",
    "retrieval.defaults.hidden",
    "retrieval.defaults.joint",
    "retrieval.defaults.checkpoint_every",
    "retrieval.defaults.early_stopping.every",
    "retrieval.defaults.early_stopping.patience",
    "retrieval.defaults.alignment.every",
    "retrieval.variants.*.epochs",
    "retrieval.variants.*.seeds",
    "retrieval.variants.*.embed_dim",
    "retrieval.variants.*.hidden",
    "retrieval.variants.*.joint",
    "retrieval.variants.*.early_stopping.every",
    "retrieval.variants.*.alignment.every",
    # Calixto cuts Multi30K's val split at image 500 into validation and test: the cut, scaled
    # to the miniature's val split (test_calixto_cut_is_only_scaled holds its shape)
    "retrieval.variants.calixto_*.validation.images",
    "retrieval.variants.calixto_*.test.images",
    "retrieval.vectors.dim",
    "nmt.model.embedding",
    "nmt.model.hidden",
    "nmt.model.attention",
    "nmt.train.max_epochs",
    "nmt.train.patience",
    "nmt.beam",
    "nmt.mira.iters",
    "ted.hidden",
    "ted.epochs",
    "ted.perceptron_epochs",
    "pivot.hidden",
    "pivot.epochs",
)


def not_sizes(record: dict) -> list[str]:
    """Flattened keys of an override record that are not size keys."""
    return [
        key
        for key in flattened_keys(record)
        if not any(fnmatch.fnmatchcase(key, pattern) for pattern in SIZE_KEYS)
    ]


def not_locations(record: dict) -> list[str]:
    return [key for key in flattened_keys(record) if key not in LOCATION_KEYS]


def test_the_miniature_override_changes_sizes_only():
    record = yaml.safe_load(MINIATURE.read_text(encoding="utf-8"))
    assert record and not_sizes(record) == []
    variants = yaml.safe_load(PAPER.read_text(encoding="utf-8"))["retrieval"]["variants"]
    named = set(record.get("retrieval", {}).get("variants", {}))
    assert named <= set(variants), named - set(variants)  # no variant is added


def test_calixto_cut_is_only_scaled():
    """The override moves Calixto's cut of the val split (images [0, 500) validation, [500, end)
    test), never the split, the portion or the two parts' order."""
    record = yaml.safe_load(MINIATURE.read_text(encoding="utf-8"))["retrieval"]["variants"]
    for name, override in record.items():
        if "validation" not in override and "test" not in override:
            continue
        paper = paper_variant(name)
        assert (paper["validation"]["split"], paper["test"]["split"]) == ("val", "val"), name
        cut = paper["validation"]["images"][1]
        assert paper["validation"]["images"] == [0, cut] and paper["test"]["images"] == [cut, None]
        small = override["validation"]["images"][1]
        assert override["validation"] == {"images": [0, small]}, name
        assert override["test"] == {"images": [small, None]}, name
        assert 0 < small < cut


@pytest.mark.parametrize(
    "override",
    [
        {"retrieval": {"defaults": {"loss": "sum"}}},
        {"retrieval": {"variants": {"kadar_bi": {"select_language": "en"}}}},
        {"retrieval": {"defaults": {"validation": {"portion": "translation"}}}},
        {"retrieval": {"variants": {"kadar_bi": {"test": {"images": [0, 10]}}}}},
        {"retrieval": {"variants": {"calixto_vse_en": {"test": {"split": "test_2016_flickr"}}}}},
        {"retrieval": {"defaults": {"backbone": "efficientnet_lite0"}}},
        {"features": {"weights": "DEFAULT"}},
        {"nmt": {"model": {"decoder": "bahdanau"}}},
        {"nmt": {"systems": {"vse": {"features": ["NMT", "WordPenalty"]}}}},
        {"coco": {"pivot_split": "karpathy"}},
        {"retrieval": {"run": ["kadar_mono_en"]}},
        {"multi30k": {"url": "file:///elsewhere"}},  # a location, not a size
    ],
)
def test_a_protocol_key_in_the_override_is_caught(override):
    assert not_sizes(override)


def test_location_keys_are_locations_only():
    """What locations.yaml may set: URLs and paths of data, nothing that changes a run."""
    for key in LOCATION_KEYS:
        assert key.rsplit(".", 1)[-1] in ("url", "manifest", "location", "muse", "ja"), key
    assert not_locations({"coco": {"karpathy": {"location": "x", "sha256": "0" * 64}}}) == [
        "coco.karpathy.sha256"
    ]


# ------------------------------------------------------------------------------- the run


def _snakemake(workdir: Path, *args: str, env: dict, timeout: int = 3600):
    return subprocess.run(
        [str(BIN / "snakemake"), "-s", str(REPO / "Snakefile"), "-d", str(workdir), *args],
        env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, timeout=timeout,
    )  # fmt: skip


def _planned_rules(output: str) -> set[str]:
    """Rule names of a Snakemake 'Job stats' table."""
    table = output.split("Job stats:", 1)[1].split("total", 1)[0]
    return {m.group(1) for m in re.finditer(r"^(\w+)\s+\d+$", table, flags=re.MULTILINE)}


def _executed_rules(output: str) -> set[str]:
    return set(re.findall(r"^(?:local)?rule (\w+):$", output, flags=re.MULTILINE))


@pytest.fixture(scope="module")
def paper_rules(tmp_path_factory) -> set[str]:
    """The rules of the real paper DAG (config/paper.yaml alone, its local data sets present)."""
    workdir = tmp_path_factory.mktemp("paper_dag")
    for name in PAPER_LOCAL_DATA.values():
        provide_local_data(workdir, name)
    proc = _snakemake(workdir, "-n", "--configfile", str(PAPER), env=tool_env(), timeout=600)
    assert proc.returncode == 0, proc.stdout[-3000:]
    return _planned_rules(proc.stdout)


@pytest.mark.slow
def test_the_paper_configuration_runs_every_rule_in_miniature(tmp_path, paper_rules):
    from mlmm.demo.paper_layouts import write_paper_layouts, write_random_backbone_weights

    workdir = tmp_path / "run"
    write_paper_layouts(workdir)
    locations = workdir / "locations.yaml"
    assert not_locations(yaml.safe_load(locations.read_text(encoding="utf-8"))) == []
    env = tool_env()
    env["TORCH_HOME"] = str(tmp_path / "torch")
    write_random_backbone_weights(env["TORCH_HOME"])
    configs = ["--configfile", str(PAPER), str(MINIATURE), str(locations)]
    start = time.perf_counter()
    proc = _snakemake(workdir, *LOCAL_RUN, *configs, env=env)
    minutes = (time.perf_counter() - start) / 60
    assert proc.returncode == 0, proc.stdout[-6000:]
    executed = _executed_rules(proc.stdout)
    assert paper_rules - {"all"} <= executed, sorted(paper_rules - executed)
    for stem in ALL_TABLES:
        for suffix in ("csv", "md", "tex", "html"):
            assert (workdir / "results" / "tables" / f"{stem}.{suffix}").is_file(), stem
    for stem in ALL_FIGURES:
        for suffix in ("png", "pdf"):
            assert (workdir / "results" / "figures" / f"{stem}.{suffix}").is_file(), stem
    for paper in CLAIM_PAPERS:  # every paper's claims table and figure (rule claims)
        claims = pd.read_csv(workdir / "results" / "tables" / f"{paper}_claims.csv")
        assert claims.verdict.isin(["holds", "reversed", "not significant", "not run"]).all()
        assert (workdir / "results" / "figures" / f"{paper}_claims.png").is_file(), paper
    again = _snakemake(workdir, "-n", *configs, env=env, timeout=600)
    assert "Nothing to be done" in again.stdout, again.stdout[-3000:]
    print(f"paper miniature: {len(executed)} rules in {minutes:.1f} min")


def test_layouts_refuse_a_directory_with_files(tmp_path):
    from mlmm.demo.paper_layouts import write_paper_layouts
    from mlmm.errors import InputError

    (tmp_path / "mine.txt").write_text("a user's file")
    with pytest.raises(InputError, match="a new or empty directory"):
        write_paper_layouts(tmp_path)
    assert [p.name for p in tmp_path.iterdir()] == ["mine.txt"]


def test_random_weights_never_replace_a_cached_file(tmp_path):
    import torchvision

    from mlmm.demo.paper_layouts import write_random_backbone_weights
    from mlmm.errors import InputError

    url = torchvision.models.ResNet50_Weights.IMAGENET1K_V1.url
    cached = tmp_path / "hub" / "checkpoints" / url.rsplit("/", 1)[-1]
    cached.parent.mkdir(parents=True)
    cached.write_bytes(b"real weights")
    with pytest.raises(InputError, match="never replace"):
        write_random_backbone_weights(tmp_path)
    assert cached.read_bytes() == b"real weights"


def test_muse_sections_split_by_source_word(tmp_path):
    from mlmm.demo.paper_layouts import _muse_sections

    full = tmp_path / "en-de.txt"
    pairs = [f"w{i} x{i}" for i in range(10)] + ["w0 y0"]  # w0 twice: one source word
    full.write_text("\n".join(pairs) + "\n", encoding="utf-8")
    _muse_sections(full, tmp_path / "muse", "de")
    read = lambda name: (tmp_path / "muse" / name).read_text(encoding="utf-8").split("\n")[:-1]  # noqa: E731
    assert read("en-de.txt") == pairs
    assert read("en-de.0-5000.txt") == [*pairs[:8], "w0 y0"]  # 8 of 10 source words
    assert read("en-de.5000-6500.txt") == pairs[8:10]
