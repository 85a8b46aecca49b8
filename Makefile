# Entry points (see README): `make demo`, `make test` and `make test-full`. Each creates .venv first.
PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin
CORES ?= all
# Rules call the `mlmm` command: put the venv's bin first on PATH.
export PATH := $(abspath $(BIN)):$(PATH)

.PHONY: setup demo test test-full check lint clean

setup: $(VENV)/.installed

$(VENV)/.installed: pyproject.toml setup.py src/mlmm/_mira_epoch.c constraints.txt
	test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install -c constraints.txt -e '.[dev,meteor]'
	touch $@

demo: setup
	$(BIN)/snakemake --cores $(CORES)

# Two tiers (docs/workflow.md, "Tests"). test: the unit, CLI and contract tests and the demo
# workflow at test size (.test/config/config.yaml); test-full: the rest (-m full): the paper
# miniature, the default-size demo, the SLURM plugin runs, the module and portability checks.
test: setup
	$(BIN)/python -m pytest -n 2 --dist loadgroup -m "not full"

test-full: setup
	$(BIN)/python -m pytest -n 2 --dist loadgroup -m full

# Every test but those that run whole processes (-m "not slow"): a couple of minutes.
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
