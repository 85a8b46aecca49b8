#!/usr/bin/env bash
# Snakemake runs this once, inside the new environment, right after creating it from the
# .yaml beside it, in the workflow's working directory (anywhere, with `-d`), from a copy under
# .snakemake/conda/: the Snakefile exports MLMM_ROOT, the checkout it belongs to. Installs that
# checkout's mlmm package editable and without dependencies:
# the .yaml pins them from conda-forge, and pip must not pull torch from PyPI into the env.
set -euo pipefail
python -m pip install --no-deps --no-build-isolation --editable "${MLMM_ROOT:?set by the Snakefile: the mlmm checkout to install}"
