"""Regenerates the tables and figures of four papers on multilingual multimodal embeddings.

Stages (one rules file each): data -> features -> models -> evaluation -> tables/figures.
Every rule is a thin call into the `mlmm` package; see README.md.
"""

from snakemake.utils import min_version

from mlmm.config import validate_or_exit

min_version("8.20")


# config.yaml of this checkout, wherever the working directory is (`snakemake -d DIR`)
configfile: f"{workflow.basedir}/config.yaml"


# One line naming the failing key and the file that set it (config.yaml, then each --configfile)
validate_or_exit(
    config,
    f"{workflow.basedir}/workflow/schemas/config.schema.yaml",
    [f"{workflow.basedir}/config.yaml", *workflow.overwrite_configfiles],
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


rule all:
    default_target: True
    input:
        FINAL_TARGETS,
