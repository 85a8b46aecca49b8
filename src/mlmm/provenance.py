"""Provenance stamped into every metrics file: config, seed, the code and versions, timings."""

from __future__ import annotations

import functools
import hashlib
import platform
import sys
import time
from collections.abc import Iterable
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import mlmm
from mlmm.origin import Origin


@functools.cache
def code_version() -> str:
    """The version of the code that runs: mlmm's version and a sha256 over the relative path
    and bytes of every source file of the package (*.py, *.c), so that an edit, a checkout of
    another commit or another installed copy reads as other code (a commit hash would miss
    uncommitted edits and change with every commit of docs)."""
    root = Path(mlmm.__file__).resolve().parent
    digest = hashlib.sha256()
    for path in sorted([*root.rglob("*.py"), *root.rglob("*.c")]):
        digest.update(path.relative_to(root).as_posix().encode() + b"\0" + path.read_bytes())
    return f"{mlmm.__version__}+{digest.hexdigest()[:16]}"


def package_versions() -> dict[str, str]:
    versions = {"mlmm": mlmm.__version__, "python": sys.version.split()[0]}
    for name in ("numpy", "torch", "pandas", "sklearn", "sacrebleu"):
        module = sys.modules.get(name)
        if module is not None:
            versions[name] = getattr(module, "__version__", "unknown")
    return versions


def provenance(
    config: dict[str, Any] | None = None, seed: int | None = None, *, data: Iterable[str]
) -> dict[str, Any]:
    """The provenance of one result. ``data`` names the data sets it was made from
    (``mlmm.origin.RECORDED``: multi30k, coco, ted, features for the published image
    features); its `origin` records their sources only, so that a table says demo or real data
    from the runs it reads, not from every source the workflow configured. Required: no
    caller can leave it out."""
    return {
        "config": config or {},
        "seed": seed,
        "versions": package_versions(),
        "code": code_version(),
        "host": platform.node(),
        "created": time.strftime("%Y-%m-%dT%H:%M:%S%z"),
        # demo or real data, the config files (from the Snakefile): tables and figures say it
        "origin": Origin.current(data).as_dict(),
    }


class Timer:
    """Named wall-clock timings, collected into a dict for the metrics file."""

    def __init__(self) -> None:
        self.seconds: dict[str, float] = {}

    @contextmanager
    def __call__(self, name: str):
        start = time.perf_counter()
        try:
            yield
        finally:
            self.seconds[name] = self.seconds.get(name, 0.0) + time.perf_counter() - start
