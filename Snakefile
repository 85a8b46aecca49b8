"""Regenerates the tables and figures of four papers on multilingual multimodal embeddings.

Stages (one rules file each): data -> features -> models -> evaluation -> tables/figures.
Every rule is a thin call into the `mlmm` package; see README.md.
"""

import os
import sys

from snakemake.utils import min_version

# This checkout's src/ first: a Snakemake installed by conda, mamba or pipx has no mlmm of its
# own, and the Snakefile and rules files read only its standard-library modules and
# mlmm.config (jsonschema and PyYAML, which Snakemake itself requires) while they are parsed.
sys.path.insert(0, f"{workflow.basedir}/src")
# envs/*.post-deploy.sh install this checkout into each conda env; Snakemake runs them in the
# working directory (`-d` anywhere), so they find the checkout through the environment.
os.environ.update(MLMM_ROOT=workflow.basedir)

from mlmm.config import validate_or_exit
from mlmm.origin import environment as origin_environment

min_version("8.20")


# config.yaml of this checkout, wherever the working directory is (`snakemake -d DIR`)
configfile: f"{workflow.basedir}/config.yaml"


# One line naming the failing key and what set it (config.yaml, each --configfile, --config)
validate_or_exit(
    config,
    f"{workflow.basedir}/workflow/schemas/config.schema.yaml",
    [f"{workflow.basedir}/config.yaml", *workflow.overwrite_configfiles],
    dict(workflow.config_settings.config),
)

# What produces the outputs (src/mlmm/origin.py): each data set's source and the config files;
# every metrics.json records them and every table and figure says them (demo or real data).
os.environ.update(
    origin_environment(
        config,
        workflow.basedir,
        [f"{workflow.basedir}/config.yaml", *workflow.overwrite_configfiles],
        bool(workflow.config_settings.config),
    )
)


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


# Every local data set the rules files declared, checked at once (one message naming them all)
local_data.check_local_data(LOCAL_DATA)


rule all:
    default_target: True
    input:
        FINAL_TARGETS,


# The device each GPU rule's job is configured to use.
GPU_RULE_DEVICES = {
    "extract_features": lambda job: FEATURES["device"],
    "train_retrieval": lambda job: RETRIEVAL_RECORDS[job.wildcards.variant]["device"],
    "train_nmt": lambda job: NMT["device"],
    "nbest_lists": lambda job: NMT["device"],
    "ted_train": lambda job: TED["device"],
    "pivot_train": lambda job: PIVOT["device"],
}


onstart:
    # Under the SLURM executor, before the first sbatch: every job that requests a GPU goes to
    # a partition with GPUs (sinfo) and its stage is not configured `device: cpu`, whatever
    # --config said (src/mlmm/slurm.py).
    if workflow.executor_plugin.name == "slurm":
        from mlmm.slurm import GpuJob, check_gpu_jobs

        problems = check_gpu_jobs(
            [
                GpuJob(
                    job.rule.name,
                    job.resources.get("slurm_partition"),
                    GPU_RULE_DEVICES.get(job.rule.name, lambda job: "auto")(job),
                )
                for job in workflow.dag.needrun_jobs()
                if int(job.resources.get("gpu", 0) or 0) >= 1
            ]
        )
        if problems:
            sys.exit("profiles/slurm: " + "\n".join(problems))
