"""The package's import structure: no import cycle between modules of src/mlmm (imports inside
functions included), and no module importing one of a higher layer. ``LAYERS`` below is the one
declaration of the layering, lowest first; a module belongs to the layer of its longest
matching pattern ("mlmm.ted.*" matches the package mlmm.ted and every module under it)."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

SRC = Path(__file__).resolve().parents[1] / "src"

LAYERS: list[tuple[str, tuple[str, ...]]] = [
    # reading, writing, records, configuration, table formatting: no stage knowledge
    ("core", ("mlmm", "mlmm.errors", "mlmm.io", "mlmm.logs", "mlmm.degenerate", "mlmm.arrays",
              "mlmm.fingerprint", "mlmm.provenance", "mlmm.origin", "mlmm.catalogue",
              "mlmm.config", "mlmm.schema", "mlmm.slurm", "mlmm.local_data", "mlmm.shipped",
              "mlmm.deployment", "mlmm.records", "mlmm.cells", "mlmm.tables", "mlmm.latex",
              "mlmm.figures")),  # fmt: skip
    # the metrics and classifiers that per-query outcomes are scored with, and the outcomes
    ("measures", ("mlmm.rank_metrics", "mlmm.evaluation", "mlmm.nmt.metrics", "mlmm.ted.classify",
                  "mlmm.uncertainty", "mlmm.outcomes")),  # fmt: skip
    # the stages: data, demo world, features, models, their experiments
    ("stages", ("mlmm.data.*", "mlmm.demo.*", "mlmm.features.*", "mlmm.retrieval.*",
                "mlmm.nmt.*", "mlmm.ted.*", "mlmm.pivot.*", "mlmm.nbest",
                "mlmm.rerank")),  # fmt: skip
    # tables, intervals, claims and figures built from the stages' results; nothing below imports
    # them, and they import no stage module but those of RESULTS_READ_FROM_STAGES
    ("results", ("mlmm.results.*",)),
    # what a user runs: the command line and the fidelity registry's report
    ("entry", ("mlmm.cli.*", "mlmm.__main__", "mlmm.fidelity.*")),
]

# The stage modules the results package may import (source -> stage module -> why). Everything
# else it reads is the stages' files, through core and measures; a new entry needs a reason here.
RESULTS_READ_FROM_STAGES: dict[str, dict[str, str]] = {
    "mlmm.results.corpus_table": {
        "mlmm.data.prepare": "Table 1 is counted on the Multi30K copy itself (corpus_statistics)",
    },
    "mlmm.results.pivot_examples": {
        "mlmm.data.coco": "MIC caption tokenisation, to find the paper's query captions",
        "mlmm.data.multi30k": "the image list of the COCO-layout copy the figure shows",
        "mlmm.pivot.data": "the MIC test captions the rankings index",
        "mlmm.pivot.experiment": "the name of the ranking file a pivot run writes",
        "mlmm.pivot.models": "the distance the stored codes are ranked by",
    },
    "mlmm.results.pivot_table": {"mlmm.pivot": "the recall cut-offs of Table 5 (KS)"},
    "mlmm.results.protocol_notes": {
        "mlmm.retrieval.config": "a variant's record keys, their defaults and their readings",
    },
    "mlmm.results.retrieval_tables": {
        "mlmm.retrieval.config": "a run's variant record, resolved from the configuration",
    },
    "mlmm.results.ted_tables": {
        "mlmm.ted": "the pivot language (PIVOT)",
        "mlmm.ted.bow": "Table 4 reads the bag-of-words vocabulary",
        "mlmm.ted.corrnet": "Table 4's neighbours are the trained model's word vectors",
    },
}


def modules(src: Path) -> dict[str, Path]:
    """Every module under ``src`` by dotted name (a package by its own name)."""
    found = {}
    for path in sorted(src.rglob("*.py")):
        parts = list(path.relative_to(src).with_suffix("").parts)
        if parts[-1] == "__init__":
            parts.pop()
        found[".".join(parts)] = path
    return found


def import_graph(src: Path, root: str = "mlmm") -> dict[str, set[str]]:
    """Module -> the modules of ``root`` it imports anywhere in its file (at the top, inside
    functions, under TYPE_CHECKING): ``from a import b`` is an import of ``a.b`` when that is a
    module, of ``a`` otherwise."""
    mods = modules(src)

    def owner(name: str) -> str:
        while name and name not in mods:
            name = name.rpartition(".")[0]
        return name

    graph: dict[str, set[str]] = {}
    for name, path in mods.items():
        package = name if path.name == "__init__.py" else name.rpartition(".")[0]
        targets: set[str] = set()
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.Import):
                names = [alias.name for alias in node.names]
            elif isinstance(node, ast.ImportFrom):
                base = node.module or ""
                if node.level:
                    parts = package.split(".")
                    parts = parts[: len(parts) - node.level + 1]
                    base = ".".join(parts + ([node.module] if node.module else []))
                names = [f"{base}.{a.name}" if f"{base}.{a.name}" in mods else base
                         for a in node.names]  # fmt: skip
            else:
                continue
            targets |= {owner(n) for n in names if n.split(".")[0] == root}
        graph[name] = {t for t in targets if t and t != name}
    return graph


def cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """One import cycle (a closed path of module names) per strongly connected group of more
    than one module (Tarjan)."""
    return [_closed_path(graph, group) for group in tangles(graph)]


def tangles(graph: dict[str, set[str]]) -> list[set[str]]:
    """The strongly connected groups of more than one module: each member imports every other
    one through the group (Tarjan)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    groups: list[set[str]] = []

    def visit(node: str) -> None:
        index[node] = low[node] = len(index)
        stack.append(node)
        on_stack.add(node)
        for target in sorted(graph.get(node, ())):
            if target not in index:
                visit(target)
                low[node] = min(low[node], low[target])
            elif target in on_stack:
                low[node] = min(low[node], index[target])
        if low[node] == index[node]:
            group = set()
            while True:
                member = stack.pop()
                on_stack.discard(member)
                group.add(member)
                if member == node:
                    break
            if len(group) > 1:
                groups.append(group)

    for node in sorted(graph):
        if node not in index:
            visit(node)
    return groups


def _closed_path(graph: dict[str, set[str]], group: set[str]) -> list[str]:
    """A shortest cycle through the group's first module, for the message."""
    start = min(group)
    paths = {start: [start]}
    frontier = [start]
    while frontier:
        following = []
        for node in frontier:
            for target in sorted(graph[node] & group):
                if target == start:
                    return paths[node] + [start]
                if target not in paths:
                    paths[target] = paths[node] + [target]
                    following.append(target)
        frontier = following
    return sorted(group)


def layer_of(module: str) -> int | None:
    """The index in ``LAYERS`` of the longest pattern matching ``module``."""
    best: tuple[int, int] | None = None
    for number, (_, patterns) in enumerate(LAYERS):
        for pattern in patterns:
            if pattern.endswith(".*"):
                stem = pattern[:-2]
                hit = module == stem or module.startswith(stem + ".")
            else:
                hit = module == pattern
            if hit and (best is None or len(pattern) > best[0]):
                best = (len(pattern), number)
    return None if best is None else best[1]


GRAPH = import_graph(SRC)


def test_every_module_has_a_layer():
    assert [m for m in sorted(GRAPH) if layer_of(m) is None] == []


def test_no_import_cycles():
    found = [
        " -> ".join(_closed_path(GRAPH, group)) + f" (tangled: {', '.join(sorted(group))})"
        for group in tangles(GRAPH)
    ]
    assert found == [], "import cycles:\n" + "\n".join(found)


def upward_imports(graph: dict[str, set[str]]) -> list[str]:
    """Every import of a module of a higher layer than the importer's."""
    return [
        f"{source} ({LAYERS[layer_of(source)][0]}) imports {target} "
        f"({LAYERS[layer_of(target)][0]})"
        for source, targets in sorted(graph.items())
        for target in sorted(targets)
        if layer_of(source) is not None
        and layer_of(target) is not None
        and layer_of(target) > layer_of(source)
    ]


def test_no_module_imports_a_higher_layer():
    upward = upward_imports(GRAPH)
    assert upward == [], "\n".join(upward)


def stage_imports_of_results(graph: dict[str, set[str]]) -> dict[str, set[str]]:
    """Results module -> the stage modules it imports."""
    found = {}
    for source, targets in graph.items():
        if layer_of(source) is not None and LAYERS[layer_of(source)][0] == "results":
            stages = {
                t
                for t in targets
                if layer_of(t) is not None and LAYERS[layer_of(t)][0] == "stages"
            }
            if stages:
                found[source] = stages
    return found


def test_results_import_only_the_listed_stage_modules():
    found = stage_imports_of_results(GRAPH)
    unlisted = [
        f"{source} imports {target}"
        for source, targets in sorted(found.items())
        for target in sorted(targets - set(RESULTS_READ_FROM_STAGES.get(source, {})))
    ]
    assert unlisted == [], "results importing stage internals:\n" + "\n".join(unlisted)
    # an entry no longer used goes, so that the list only shrinks
    stale = [
        f"{source}: {target}"
        for source, listed in sorted(RESULTS_READ_FROM_STAGES.items())
        for target in sorted(set(listed) - found.get(source, set()))
    ]
    assert stale == [], "listed but not imported:\n" + "\n".join(stale)


def test_stage_to_results_and_results_to_stage_imports_are_seen():
    for low in ("mlmm.ted.corpus", "mlmm.uncertainty", "mlmm.tables"):
        graph = {**GRAPH, low: GRAPH[low] | {"mlmm.results.claims"}}
        assert [line.split(" (")[0] for line in upward_imports(graph)] == [low], low
    extra = {**GRAPH, "mlmm.results.claims": GRAPH["mlmm.results.claims"] | {"mlmm.ted.demo"}}
    assert stage_imports_of_results(extra)["mlmm.results.claims"] == {"mlmm.ted.demo"}


def _called(path: Path) -> set[str]:
    """The names a module calls (``f(...)`` and ``m.f(...)`` alike)."""
    names = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Call):
            func = node.func
            names.add(func.attr if isinstance(func, ast.Attribute) else getattr(func, "id", ""))
    return names


def test_every_paper_table_takes_the_one_path():
    """Our cells beside the paper's with their intervals: only mlmm.results.build puts them
    together (paper_table), every table builder calls it, and no module outside the results
    package (and mlmm.tables, which defines them) summarises runs or writes a table."""
    steps = {"summarise_runs", "beside_paper", "add_intervals"}
    mods = modules(SRC)
    tables = ("retrieval_tables", "corpus_table", "nmt_table", "ted_tables", "pivot_table")
    builders = ["mlmm.results." + name for name in tables]
    assert [b for b in builders if "paper_table" not in _called(mods[b])] == []
    by_hand = [n for n in mods if n != "mlmm.results.build" and _called(mods[n]) & steps]
    assert by_hand == []
    writers = [
        name
        for name in mods
        if "write_table" in _called(mods[name])
        and layer_of(name) is not None
        and LAYERS[layer_of(name)][0] != "results"
        and name != "mlmm.tables"
    ]
    assert writers == []


def _package(tmp_path: Path, files: dict[str, str]) -> Path:
    for name, text in files.items():
        path = tmp_path / "pkg" / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text, encoding="utf-8")
    return tmp_path


@pytest.mark.parametrize(
    "files, expected",
    [
        # an import inside a function closes a cycle as much as one at the top
        ({"__init__.py": "", "a.py": "from pkg import b\n",
          "b.py": "def f():\n    from pkg.a import g\n"}, [["pkg.a", "pkg.b", "pkg.a"]]),
        ({"__init__.py": "", "sub/__init__.py": "", "sub/x.py": "from . import y\n",
          "sub/y.py": "import pkg.sub.z\n", "sub/z.py": "from ..sub.x import q\n"},
         [["pkg.sub.x", "pkg.sub.y", "pkg.sub.z", "pkg.sub.x"]]),
        ({"__init__.py": "", "a.py": "from pkg import b\n", "b.py": "import os\n"}, []),
    ],
)  # fmt: skip
def test_the_graph_sees_every_kind_of_import(tmp_path, files, expected):
    assert cycles(import_graph(_package(tmp_path, files), root="pkg")) == expected


def test_layers_are_matched_by_the_longest_pattern():
    assert LAYERS[layer_of("mlmm.results.ted_tables")][0] == "results"
    assert LAYERS[layer_of("mlmm.ted.corpus")][0] == "stages"
    assert LAYERS[layer_of("mlmm.ted")][0] == "stages"
    assert layer_of("mlmm_other") is None
