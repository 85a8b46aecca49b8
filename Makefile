# Two entry points (see README): `make demo` and `make test`. Both create .venv first.
PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin
CORES ?= all
# Rules call the `mlmm` command: put the venv's bin first on PATH.
export PATH := $(abspath $(BIN)):$(PATH)

.PHONY: setup demo test check lint clean

setup: $(VENV)/.installed

$(VENV)/.installed: pyproject.toml setup.py src/mlmm/_mira_epoch.c constraints.txt
	test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install -c constraints.txt -e '.[dev,meteor]'
	touch $@

demo: setup
	$(BIN)/snakemake --cores $(CORES)

test: setup
	$(BIN)/python -m pytest -n 2 --dist loadgroup

# The fast tier: every test but those that run whole processes (-m "not slow"; docs/workflow.md).
check: setup
	$(BIN)/python -m pytest -n 2 -m "not slow"

lint: setup
	$(BIN)/ruff check .
	$(BIN)/snakefmt --check Snakefile workflow
	$(BIN)/snakemake --lint

# Keeps resources/downloads (config `downloads`: COCO archives, fastText vectors, MUSE) and the
# conda environments of --use-conda (.snakemake/conda: several GB, slow to build again).
clean:
	rm -rf results
	find .snakemake -mindepth 1 -maxdepth 1 ! -name conda -exec rm -rf {} + 2>/dev/null || true
