"""Same seed, same numbers (docs/reproducibility.md).

The small demo (.test/config/config.yaml) runs once per session (conftest.small_demo_run,
shared with the whole-workflow test). A second run in a fresh copy makes a representative
subset of its targets, one per kind of computation, and every result must equal the first
run's byte for byte (tables, translations) or exactly (numbers in JSON, model tensors; clock
fields skipped):

- Rajendran Tables 1, 3 and 4: the whole TED stage (corpus, bag-of-words, three Bridge
  CorrNet trainings, lambda tuning, 12 perceptron jobs run side by side, Naive Bayes);
- Kádár Table 1: the Multi30K demo world and its vocabularies;
- one NMT system (nmt_rerank): training, 20-best beam search, n-best features, MIRA tuning
  and reranking with multimodal features, and the retrieval runs whose models those features
  come from (image features by EfficientNet on the CPU, GRU encoders trained with the
  contrastive loss and early stopping; the demo: 5 runs), metrics and every model tensor.

About 40 of the demo's 136 jobs (no pivot runs, 5 of 44 retrieval runs).

Tables built from many such runs (the other retrieval variants, the NMT and pivot tables) are
assembled by deterministic code from runs made by these same trainers, so a difference there
would show in the runs compared here first.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import torch
from helpers.compare import assert_same
from helpers.workflow import (
    DEMO_RUN_GROUP,
    LOCAL_RUN,
    SMALL_DEMO_CONFIG,
    copy_workflow,
    run_snakemake,
)


def subset(first: Path) -> dict[str, list[str]]:
    """Targets of the second run, by kind, chosen among what the first run made."""
    results = first / "results"
    systems = sorted(results.glob("nmt/systems/*/metrics.json"))
    assert systems, "the demo run made no NMT system"
    system = next((p for p in systems if p.parent.name == "nmt_rerank"), systems[0]).parent
    return {
        "tables": [
            p.relative_to(first).as_posix()
            for stem in ("rajendran2016_table1", "rajendran2016_table3", "rajendran2016_table4",
                         "kadar2018_table1")  # fmt: skip
            for p in sorted(results.glob(f"tables/{stem}.*"))  # every file: each is declared
        ],
        "runs": [(system / "metrics.json").relative_to(first).as_posix()],
        "bytes": [p.relative_to(first).as_posix() for p in sorted(system.glob("*.1best"))],
    }


def retrieval_runs(root: Path) -> list[str]:
    return [p.parent.relative_to(root).as_posix()
            for p in sorted(root.glob("results/retrieval/*/seed*/metrics.json"))]  # fmt: skip


@pytest.mark.slow
@pytest.mark.xdist_group(DEMO_RUN_GROUP)
def test_same_seed_same_numbers(small_demo_run, tmp_path):
    first, proc = small_demo_run
    assert proc.returncode == 0, proc.stdout[-4000:]
    targets = subset(first)
    second = copy_workflow(tmp_path / "workflow")
    wanted = [t for kind in ("tables", "runs", "bytes") for t in targets[kind]]
    small = ("--configfile", SMALL_DEMO_CONFIG)  # the first run's sizes
    again = run_snakemake(second, *wanted, *LOCAL_RUN, *small, timeout=3600)
    assert again.returncode == 0, again.stdout[-4000:]
    if not retrieval_runs(second):  # the reranker's image features need none: train one
        run = f"{retrieval_runs(first)[0]}/metrics.json"
        again = run_snakemake(second, run, *LOCAL_RUN, *small)
        assert again.returncode == 0, again.stdout[-4000:]
    # every file the second run wrote under results/tables, the LaTeX companions and notes
    # included (all declared outputs of the table rules), equals the first run's (not the
    # write layer's hidden records beside them, which hold mtimes)
    made = sorted(p.relative_to(second).as_posix() for p in (second / "results/tables").rglob("*")
                  if p.is_file() and not p.name.startswith("."))  # fmt: skip
    assert set(targets["tables"]) <= set(made), sorted(set(targets["tables"]) - set(made))
    for name in [*made, *targets["bytes"]]:
        assert (first / name).read_bytes() == (second / name).read_bytes(), name
    runs = retrieval_runs(second)  # those the NMT reranker's features were made with
    for name in [*targets["runs"], *(f"{run}/metrics.json" for run in runs)]:
        # paths inside name the copy they were made in
        a, b = (json.loads((root / name).read_text(encoding="utf-8").replace(str(root), "WORK"))
                for root in (first, second))  # fmt: skip
        assert_same(a, b, name)
    for name in (f"{run}/model.pt" for run in runs):
        a, b = (tensors(torch.load(root / name, map_location="cpu", weights_only=False))
                for root in (first, second))  # fmt: skip
        assert a and a.keys() == b.keys(), name
        assert_same(a, b, name)


def tensors(obj, prefix: str = "") -> dict[str, torch.Tensor]:
    """Every tensor of a saved object by its key path (the weights, whatever else it holds)."""
    if isinstance(obj, torch.Tensor):
        return {prefix: obj}
    if isinstance(obj, dict):
        items = obj.items()
    elif isinstance(obj, list | tuple):
        items = enumerate(obj)
    else:
        return {}
    return {k: v for key, value in items for k, v in tensors(value, f"{prefix}/{key}").items()}
