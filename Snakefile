"""Regenerates the tables and figures of four papers on multilingual multimodal embeddings.

Stages (one rules file each): data -> features -> models -> evaluation -> tables/figures.
Every rule is a thin call into the `mlmm` package; see README.md.
"""

import os
import sys
from pathlib import Path

from snakemake.utils import min_version

# This workflow's own directory: the Snakefile being parsed, not `workflow.basedir` (used as a
# module, `module mlmm: snakefile: ...`, that is the importing workflow's). Every repository
# file (schema, config.yaml, manifests, paper tables, captions, src/) is found from here.
WORKFLOW_ROOT = Path(workflow.current_basedir.get_path_or_uri(secret_free=True))
# This source tree's mlmm, ahead of any other installed copy (another checkout, an env built
# by another copy of the workflow): first on sys.path for the parsing (the rules files read
# its standard-library modules and mlmm.config), and on PYTHONPATH for every job, so that the
# `mlmm` of a conda env, the container or the PATH runs this code (docs/workflow.md).
sys.path.insert(0, str(WORKFLOW_ROOT / "src"))
os.environ.update(
    PYTHONPATH=os.pathsep.join(
        dict.fromkeys(  # once, also when a cluster job parses the Snakefile again
            [
                str(WORKFLOW_ROOT / "src"),
                *os.environ.get("PYTHONPATH", "").split(os.pathsep),
            ]
        )
    ).rstrip(os.pathsep)
)
# envs/*.post-deploy.sh install this source tree's package into each new conda env; Snakemake
# runs them from a copy under .snakemake/conda/, so they find the tree through the environment.
os.environ.update(MLMM_ROOT=str(WORKFLOW_ROOT))

import mlmm
from mlmm.config import validate_or_exit
from mlmm.origin import environment as origin_environment

# (a tree without src/, e.g. the tests' copies of the workflow files: the installed mlmm)
OWN_PACKAGE = WORKFLOW_ROOT / "src/mlmm"
if OWN_PACKAGE.is_dir() and Path(mlmm.__file__).parent != OWN_PACKAGE:
    sys.exit(
        f"mlmm: the workflow at {WORKFLOW_ROOT} imported another mlmm package,"
        f" {Path(mlmm.__file__).parent}: remove it from sys.path or import this one first"
    )

min_version("8.20")


# config.yaml of this checkout, wherever the working directory is (`snakemake -d DIR`); used
# as a module with `config: config`, Snakemake skips it and the importing workflow's config
# (defaults filled in below) is the configuration.
configfile: str(WORKFLOW_ROOT / "config.yaml")


# The config files that made the configuration, base first, then each --configfile.
CONFIG_FILES = [
    *(f for f in workflow.configfiles if f not in workflow.overwrite_configfiles),
    *workflow.overwrite_configfiles,
]
# One line naming the failing key and what set it (config.yaml, each --configfile, --config)
validate_or_exit(
    config,
    WORKFLOW_ROOT / "workflow/schemas/config.schema.yaml",
    CONFIG_FILES,
    dict(workflow.config_settings.config),
)

# What produces the outputs (src/mlmm/origin.py): each data set's source and the config files;
# every metrics.json records them and every table and figure says them (demo or real data).
os.environ.update(
    origin_environment(
        config,
        str(WORKFLOW_ROOT),
        CONFIG_FILES,
        bool(workflow.config_settings.config),
    )
)


# The image of the Dockerfile (the env files' pins and this source tree's package) for
# `--software-deployment-method apptainer`; config `container` names it (docs/workflow.md).
container: config["container"]


report: "workflow/report/workflow.rst"


include: "workflow/rules/common.smk"
include: "workflow/rules/data.smk"
include: "workflow/rules/coco.smk"
include: "workflow/rules/features.smk"
include: "workflow/rules/retrieval.smk"
include: "workflow/rules/nmt.smk"
include: "workflow/rules/ted.smk"
include: "workflow/rules/pivot.smk"
include: "workflow/rules/report.smk"


rule all:
    default_target: True
    input:
        FINAL_TARGETS,


onstart:
    # Under a cluster executor (SLURM or any other that submits jobs), before the first
    # submission: every job of a GPU rule (the rules whose resources call gpu_need) requests a
    # GPU, whatever profile (a site-wide one, profiles/default) or --set-resources set its
    # resources; its stage is not configured `device: cpu`; and under SLURM it goes to a
    # partition with GPUs (sinfo). src/mlmm/slurm.py.
    if not workflow.local_exec:
        from mlmm.slurm import GpuJob, check_gpu_jobs, requested_gpus

        problems = check_gpu_jobs(
            [
                GpuJob(
                    job.rule.name,
                    job.resources.get("slurm_partition"),
                    GPU_RULES[job.rule.name](job.wildcards),
                    requested_gpus(job.resources),
                )
                for job in workflow.dag.needrun_jobs()
                if job.rule.name in GPU_RULES
            ],
            sinfo=workflow.executor_plugin.name == "slurm",
        )
        if problems:
            sys.exit("GPU rules: " + "\n".join(problems))
