"""Files the package ships beside its code: the papers' own tables (``paper_tables/``), the
claims registries (``claims/``) and the config schema (``config.schema.yaml``, which every
subcommand's options are checked against: mlmm.schema). In the repository they are links to
``resources/`` and ``workflow/schemas/``, their one copy; an installed package (wheel, sdist,
a conda env's pip install) holds the files themselves, so a workflow deployed from any source
finds them in the mlmm it imports.
Standard library only: the Snakefile reads these paths while it is parsed."""

from __future__ import annotations

from pathlib import Path

PACKAGE = Path(__file__).parent


def paper_tables() -> Path:
    """The directory of the papers' tables as tidy CSV, ``<paper>_table<N>.csv``."""
    return PACKAGE / "paper_tables"


def claims_registry(paper: str) -> Path:
    """The claims registry of ``paper`` (e.g. ``kadar2018``): ``claims/<paper>.yaml``."""
    return PACKAGE / "claims" / f"{paper}.yaml"
