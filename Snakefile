"""Regenerates the tables and figures of four papers on multilingual multimodal embeddings.

Stages (one rules file each): data -> features -> models -> evaluation -> tables/figures.
Every rule is a thin call into the `mlmm` package; see README.md.
"""

import os
import sys

from snakemake.utils import min_version

# The workflow imports the installed mlmm package while it is parsed (the configuration's
# schema check, the catalogue of data sets and variants) and its jobs run the `mlmm` command of
# their environment: the Python that runs Snakemake needs the package (docs/workflow.md).
try:
    import mlmm
except ImportError as error:
    sys.exit(
        f"mlmm: the workflow needs the mlmm package in the Python that runs Snakemake"
        f" ({error}): pip install the workflow's source (docs/workflow.md, 'Installing')"
    )
from mlmm.config import validate_or_exit
from mlmm.deployment import ENV_SOURCE, pip_source
from mlmm.origin import environment as origin_environment
from mlmm.slurm import ENV_REQUIRE_GPU, gpu_requirement, nvidia_present

# Every file of the workflow's own source (schema, config.yaml, manifests, paper tables,
# captions, claims registries, envs) is found with Snakemake's source-path API
# (`workflow.source_path`, relative to the file that calls it): a local path, an HTTP URL or
# github(...) alike, also when the workflow is a module of another one.
WORKFLOW_SOURCE = workflow.current_basedir.get_path_or_uri(secret_free=True)
# The envs' post-deploy scripts install mlmm from this workflow's own source (a pip requirement
# from where the workflow came from), unless MLMM_SOURCE is set already (mlmm.deployment).
if not os.environ.get(ENV_SOURCE):
    os.environ[ENV_SOURCE] = pip_source(workflow.current_basedir) or ""

# A GPU rule's job that sees no GPU stops at its start with one line (device `auto`:
# mlmm.slurm.auto_device; `cuda`: always), under any executor, as a module, whatever resources
# a profile or --set-resources gave it; `device: cpu` in the config runs it on the CPU. Only the
# local executor on a machine without an NVIDIA device runs `auto` on the CPU (saying so).
_GPU_REQUIRED = gpu_requirement(
    workflow.local_exec, workflow.remote_exec, nvidia_present()
)
if _GPU_REQUIRED and not os.environ.get(ENV_REQUIRE_GPU):
    os.environ[ENV_REQUIRE_GPU] = _GPU_REQUIRED

min_version("8.20")


# config.yaml of this checkout, wherever the working directory is (`snakemake -d DIR`); used
# as a module with `config: config`, Snakemake skips it and the importing workflow's config
# (defaults filled in below) is the configuration. Snakemake reads it from its source cache,
# whose path is this process's own: outputs name it "config.yaml" (OWN_CONFIG below).
OWN_CONFIG = workflow.source_path("config.yaml")


configfile: OWN_CONFIG


# The config files that made the configuration, base first, then each --configfile.
CONFIG_FILES = [
    *(f for f in workflow.configfiles if f not in workflow.overwrite_configfiles),
    *workflow.overwrite_configfiles,
]
# One line naming the failing key and what set it (config.yaml, each --configfile, --config)
validate_or_exit(
    config,
    workflow.source_path("workflow/schemas/config.schema.yaml"),
    CONFIG_FILES,
    dict(workflow.config_settings.config),
)

# What produces the outputs (src/mlmm/origin.py): each data set's source and the config files;
# every metrics.json records them and every table and figure says them (demo or real data).
os.environ.update(
    origin_environment(
        config,
        WORKFLOW_SOURCE,
        ["config.yaml" if path == OWN_CONFIG else path for path in CONFIG_FILES],
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
    # (The guard that holds everywhere is in each GPU job: MLMM_REQUIRE_GPU above. This one, run
    # only for the main Snakefile, refuses early, before anything is submitted.)
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
            # partitions are checked with sinfo unless the plugin picks them itself from a
            # partition file (--slurm-partition-config, $SNAKEMAKE_SLURM_PARTITIONS)
            sinfo=workflow.executor_plugin.name == "slurm"
            and not getattr(workflow.executor_settings, "partition_config", None)
            and not os.environ.get("SNAKEMAKE_SLURM_PARTITIONS"),
        )
        if problems:
            sys.exit("GPU rules: " + "\n".join(problems))
