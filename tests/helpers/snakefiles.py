"""Small Snakefiles the workflow tests run in place of the real one: a toy workflow whose rules
are named and state their needs as the workflow's do (for the SLURM profile and plugin), and
a user's deployment importing the workflow as a Snakemake module (as snakedeploy writes it)."""

from __future__ import annotations

from pathlib import Path

_TOY_RULES = """
rule demo_world:
    output: "world.txt"
    log: "world.log"
    threads: 2
    shell: "echo world > {{output}} 2> {{log}}"

rule extract_features:
    input: "world.txt"
    output: "features.txt"
    log: "features.log"
    resources: gpu=1, mem_mb=8000, runtime=720
    shell: "{wait}cat {{input}} > {{output}} 2> {{log}}"

rule broken:
    output: "broken.txt"
    log: "broken.log"
    shell: "echo failing > {{log}}; exit 3"
"""


def toy_snakefile(targets: tuple[str, ...] = ("features.txt",), features_seconds: int = 0) -> str:
    """Rules demo_world (two threads), extract_features (a GPU rule with its memory and
    runtime; taking ``features_seconds``) and broken (exits 3), with `rule all` asking for
    ``targets`` (of world.txt, features.txt, broken.txt)."""
    wanted = ", ".join(f'"{target}"' for target in targets)
    wait = f"sleep {features_seconds}; " if features_seconds else ""
    return f"\nrule all:\n    input: {wanted}\n" + _TOY_RULES.format(wait=wait)


_MODULE = """\
configfile: "config/config.yaml"


module mlmm:
    snakefile:
        {snakefile!r}
    config:
        config


use rule * from mlmm
"""


def module_snakefile(snakefile: str | Path, rules: str = "") -> str:
    """A deployment's Snakefile: its config/config.yaml, the workflow at ``snakefile`` as the
    module `mlmm` with every rule used, then the deployment's own ``rules`` (Snakefile text)."""
    return _MODULE.format(snakefile=str(snakefile)) + rules
