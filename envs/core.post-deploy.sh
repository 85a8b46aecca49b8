#!/usr/bin/env bash
# Snakemake runs this once, inside the new environment, right after creating it from the
# .yaml beside it, in the workflow's working directory (the repository root, where the
# Snakefile is). Installs this repository's mlmm package editable and without dependencies:
# the .yaml pins them from conda-forge, and pip must not pull torch from PyPI into the env.
set -euo pipefail
python -m pip install --no-deps --no-build-isolation --editable "${MLMM_ROOT:-.}"
