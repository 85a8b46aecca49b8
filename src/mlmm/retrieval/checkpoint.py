"""Resumable checkpoints of a training run: every part's state in one ``checkpoint.pt``.

Written atomically every ``checkpoint_every`` steps; a run finds its own checkpoint (same
record and seed) and resumes where it stopped, ending as an uninterrupted run ends on CPU.
"""

from __future__ import annotations

from pathlib import Path

import torch

from mlmm.io import atomic_path


def save(run, path: Path) -> None:
    state = {
        "record": run.record,
        "seed": run.seed,
        "step": run.step,
        "history": run.history,
        "losses": run.losses,
        "model": run.model.state_dict(),
        "optimizer": run.optimizer.state_dict(),
        "streams": run.streams.state(),
        "torch_rng": torch.get_rng_state(),
        "cuda_rng": torch.cuda.get_rng_state_all() if torch.cuda.is_available() else None,
        "selector": run.selector.state(),
        "best_state": run.best_state,
        "best_mapping": run.best_mapping,
        "alignment": None if run.alignment is None else run.alignment.state(),
    }
    with atomic_path(path) as tmp:
        torch.save(state, tmp)


def restore(run, path: Path) -> bool:
    """Load ``path`` into ``run``; False when there is none, or it belongs to another record."""
    if not path.is_file():
        return False
    state = torch.load(path, map_location=run.device, weights_only=False)
    if state["record"] != run.record or state["seed"] != run.seed:
        return False  # a checkpoint of another configuration: start afresh
    run.step, run.history, run.losses = state["step"], state["history"], state["losses"]
    run.model.load_state_dict(state["model"])
    run.optimizer.load_state_dict(state["optimizer"])
    run.streams.load(state["streams"])
    torch.set_rng_state(state["torch_rng"])
    if state["cuda_rng"] is not None and torch.cuda.is_available():
        torch.cuda.set_rng_state_all(state["cuda_rng"])
    run.selector.load(state["selector"])
    run.best_state, run.best_mapping = state["best_state"], state["best_mapping"]
    if run.alignment is not None:
        run.alignment.load(state["alignment"])
    return True
