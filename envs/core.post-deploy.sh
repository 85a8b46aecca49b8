#!/usr/bin/env bash
# Snakemake runs this once, inside the new environment, right after creating it from the .yaml
# beside it. Installs the mlmm package of the workflow's own source, without dependencies (the
# .yaml pins them from conda-forge; pip must not pull torch from PyPI), with the C compiler of
# the environment, so the compiled MIRA loop is built (mlmm.rerank; without a compiler pip
# still installs it, with the numpy loop). MLMM_SOURCE is a pip requirement the Snakefile
# exports from where the workflow came from (mlmm.deployment: a local checkout, github(...),
# gitlab(...), a local git repository), or one the user set (a wheel, a git URL, an index
# version): docs/workflow.md, "Software environments".
set -euo pipefail
source="${MLMM_SOURCE:?no source of the mlmm package for this environment: set MLMM_SOURCE to a pip requirement (a wheel, mlmm @ git+https://...), see docs/workflow.md}"
if [ -d "$source" ]; then
    # a local checkout: built from a temporary copy, so no build files are written into the
    # (perhaps read-only) tree, and the env keeps working after the tree moves
    build="$(mktemp -d)"
    trap 'rm -rf "$build"' EXIT
    mkdir "$build/workflow"
    cp -R "$source/pyproject.toml" "$source/setup.py" "$source/README.md" "$source/LICENSE" "$source/src" "$source/resources" "$build/"
    cp -R "$source/workflow/schemas" "$build/workflow/"
    source="$build"
fi
python -m pip install --no-deps --no-build-isolation --no-cache-dir "$source"
