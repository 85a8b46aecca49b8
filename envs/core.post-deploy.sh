#!/usr/bin/env bash
# Snakemake runs this once, inside the new environment, right after creating it from the
# .yaml beside it, from a copy under .snakemake/conda/ (so not from this directory): the
# Snakefile exports MLMM_ROOT, the directory of the workflow's own Snakefile (also when it is
# used as a module or with `-d`). Installs the mlmm package of that source tree, without
# dependencies (the .yaml pins them from conda-forge; pip must not pull torch from PyPI), and
# not editable: the env holds its own copy, so it works after that tree moves or is deleted,
# and no build files are written into the (perhaps read-only) tree. The jobs still run the
# source tree's code: the Snakefile puts its src/ first on PYTHONPATH (docs/workflow.md).
set -euo pipefail
root="${MLMM_ROOT:?set by the Snakefile: the workflow source tree to install}"
build="$(mktemp -d)"
trap 'rm -rf "$build"' EXIT
cp -R "$root/pyproject.toml" "$root/setup.py" "$root/README.md" "$root/LICENSE" "$root/src" "$build/"
python -m pip install --no-deps --no-build-isolation --no-cache-dir "$build"
