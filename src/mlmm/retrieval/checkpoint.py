"""Resumable checkpoints of a training run: every part's state in one ``checkpoint.pt``.

Written atomically every ``checkpoint_every`` steps with the run's fingerprint (its config,
seed and the contents of its features, captions, word vectors and lexicons: ``Run``); a run
resumes only its own checkpoint, ending as an uninterrupted run ends on CPU. A checkpoint made
from other inputs (say, features fixed after a crash), or written by other code (another
version of mlmm, an edited source file: ``mlmm.provenance.code_version``), is deleted and
training starts over, with one line saying why.
"""

from __future__ import annotations

import sys
from pathlib import Path

import torch

from mlmm.errors import InputError
from mlmm.fingerprint import stale
from mlmm.io import atomic_path, discard, read_torch
from mlmm.provenance import code_version


def save(run, path: Path) -> None:
    state = {
        "fingerprint": run.fingerprint,
        "code": code_version(),
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
    """Load ``path`` into ``run``; False when there is none, or it was made from other inputs
    (then it is deleted, and one line says which inputs changed)."""
    if not path.is_file():
        return False
    try:
        state = read_torch(path, map_location=run.device, weights_only=False)
    except InputError as exc:  # a damaged checkpoint: train afresh
        state = {}
        print(f"{path.name}: unreadable ({exc.found}), starting over", file=sys.stderr)
    if state and state.get("code") != code_version():
        print(f"{path.name}: written by other code ({state.get('code') or 'not recorded'}; "
              f"this is {code_version()}), starting over", file=sys.stderr)  # fmt: skip
        discard(path)
        return False
    if stale(path.name, state.get("fingerprint"), run.fingerprint):
        discard(path)
        return False
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
