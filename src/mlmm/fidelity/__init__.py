"""The fidelity registry: per protocol key of the paper configuration, where its value comes from.

The registry is one YAML file per paper beside this module (``shared.yaml`` holds the retrieval
conventions every paper shares, and the preamble of docs/fidelity.md). Each file has sections (one
table of docs/fidelity.md each) of rows; a row names one protocol point, what the paper or its
authors' code does (``paper``: section with a short quote, or file:line at the commit), what we do
(``ours``), the tests that show the code honours it (``held_by``, or ``untested``: why no
behaviour can be observed), and the keys of the resolved paper configuration it is about
(``keys``: dotted patterns; a segment may be a glob or ``{a,b}`` alternatives, an exact segment
beats a glob). The registry never copies a value: the configuration holds the values, and
docs/fidelity.md prints them, read from the resolved configuration, beside their row's source.
``readings`` name record keys whose values are the paper's or the authors' code's reading
(``readings.yaml``, which the table notes print from).

``check`` holds every leaf of the resolved paper configuration (``protocol_leaves``, the code's
protocol constants included) against the registry: a leaf without a row, a leaf two rows claim
equally and an entry that decides no leaf are each a problem. Only the leaves of
``not_protocol.yaml`` are outside the registry, each group with its reason. docs/fidelity.md is
generated (``render``; ``python -m mlmm.fidelity``), so a changed value shows in its diff.
"""

from __future__ import annotations

import copy
import dataclasses
import fnmatch
import functools
import importlib
import re
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml

from mlmm.io import read_yaml
from mlmm.retrieval.config import reading, readings, resolve_variant

HERE = Path(__file__).resolve().parent
PAPERS = ("shared", "kadar2018", "calixto2017", "ame2019", "rajendran2016")
NOT_PROTOCOL = HERE / "not_protocol.yaml"
VARIANT_PREFIX = "retrieval.variants."

__all__ = ["check", "entry_for", "protocol_leaves", "reading", "readings", "render", "rows"]


@dataclass(frozen=True, eq=False)
class Pattern:
    """One registered key: its segments (globs or ``{a,b}`` alternatives), its row, where it is."""

    text: str
    segments: tuple[tuple[str, ...], ...]
    row: tuple[str, str, str]  # (paper file, section heading, point)
    where: str  # file and row, for messages

    @property
    def specificity(self) -> tuple[int, int]:
        """The most specific matching entry applies: first the segments that name one key
        exactly (``{a,b}`` lists of exact names count), then the literal text of the globs."""
        exact = sum(not any(_is_glob(alt) for alt in alts) for alts in self.segments)
        literal = sum(
            len(re.sub(r"[*?]|\[[^]]*\]", "", alt))
            for alts in self.segments
            for alt in alts
            if _is_glob(alt)
        )
        return exact, literal

    def matches(self, parts: tuple[str, ...]) -> bool:
        if len(parts) != len(self.segments):
            return False
        return all(
            any(fnmatch.fnmatchcase(part, alt) for alt in alts)
            for part, alts in zip(parts, self.segments, strict=True)
        )


def _is_glob(text: str) -> bool:
    return any(ch in text for ch in "*?[")


def _segments(key: str) -> tuple[tuple[str, ...], ...]:
    """``a.{b,c}.d*`` -> (("a",), ("b", "c"), ("d*",)); dots inside braces do not split."""
    parts = re.findall(r"\{[^}]*\}|[^.]+", key)
    return tuple(
        tuple(p.strip() for p in part[1:-1].split(",")) if part.startswith("{") else (part,)
        for part in parts
    )


def _split(key: str) -> tuple[str, ...]:
    return tuple(key.split("."))


@functools.lru_cache(maxsize=1)
def registry() -> dict[str, dict]:
    """Every registry file, by paper name, as written."""
    return {name: read_yaml(HERE / f"{name}.yaml", "a fidelity registry file") for name in PAPERS}


def rows() -> Iterable[tuple[str, dict, dict]]:
    """(paper file, section, row) of every row of the registry."""
    for name, doc in registry().items():
        for section in doc["sections"]:
            for row in section["rows"]:
                yield name, section, row


def _row_id(name: str, section: dict, row: dict) -> tuple[str, str, str]:
    return name, section["heading"], row["point"]


@functools.lru_cache(maxsize=1)
def patterns() -> tuple[Pattern, ...]:
    out = []
    for name, section, row in rows():
        for key in row.get("keys") or []:
            where = f"{name}.yaml, {section['heading']!r} row {row['point']!r}"
            out.append(Pattern(key, _segments(key), _row_id(name, section, row), where))
    return tuple(out)


@functools.lru_cache(maxsize=1)
def excluded() -> tuple[Pattern, ...]:
    """The non-protocol leaves (not_protocol.yaml), each group with its reason."""
    doc = read_yaml(NOT_PROTOCOL, "the registry's list of non-protocol leaves")
    return tuple(
        Pattern(key, _segments(key), ("not_protocol", "", group["why"]), "not_protocol.yaml")
        for group in doc["groups"]
        for key in group["keys"]
    )


# Protocol values that are constants of the code, not config keys: registered as ``code.<name>``
# leaves beside the configuration's, read from (module, attribute path); a dataclass is read as
# its fields.
CODE_CONSTANTS = {
    "code.features.backbones": ("mlmm.features.backbones", "BACKBONES"),
    "code.nmt.bleu": ("mlmm.nmt.metrics", "BLEU_SETTINGS"),
    "code.nmt.ter": ("mlmm.nmt.metrics", "TER_SETTINGS"),
    "code.nmt.adadelta": ("mlmm.nmt.train", "ADADELTA"),
    "code.nmt.clip": ("mlmm.nmt.train", "TrainConfig.clip"),
    "code.nmt.length_limit": ("mlmm.nmt.search", "LENGTH_LIMIT"),
    "code.nmt.mira.initial_weight": ("mlmm.rerank", "INITIAL_WEIGHT"),
    "code.nmt.mira.shuffle": ("mlmm.rerank", "SHUFFLE"),
    "code.pivot.mt.length_normalised": ("mlmm.pivot.mt", "LENGTH_NORMALISED"),
    "code.pivot.models": ("mlmm.pivot", "MODELS"),
}


def code_constant(module: str, attribute: str) -> Any:
    """The value of a code constant (``CODE_CONSTANTS``), dataclasses as dicts of their fields."""
    value: Any = importlib.import_module(module)
    for part in attribute.split("."):
        value = getattr(value, part)

    def plain(node: Any) -> Any:
        if dataclasses.is_dataclass(node) and not isinstance(node, type):
            return {f.name: plain(getattr(node, f.name)) for f in dataclasses.fields(node)}
        if isinstance(node, dict):
            return {k: plain(v) for k, v in node.items()}
        if isinstance(node, tuple):
            return [plain(v) for v in node]
        return node

    return plain(value)


def protocol_leaves(config: dict) -> dict[str, Any]:
    """Every leaf of the merged, validated configuration with each run variant resolved
    (``retrieval.variants.<name>.<key>``; ``retrieval.defaults`` only reaches a run through
    its variants). Lists are single leaves (a list of sources is one protocol value). The code's
    protocol constants (``CODE_CONSTANTS``) are leaves too, as ``code.<name>.<key>``."""
    config = copy.deepcopy(config)
    section = config.get("retrieval") or {}
    resolved = {name: resolve_variant(section, name) for name in section.get("run") or []}
    for record in resolved.values():
        record.pop("name", None)
    section.pop("defaults", None)
    section["variants"] = resolved
    out: dict[str, Any] = {}

    def walk(node: Any, path: str) -> None:
        if isinstance(node, dict) and node:
            for key, value in node.items():
                walk(value, f"{path}.{key}" if path else str(key))
        else:
            out[path] = node

    walk(config, "")
    for name, (module, attribute) in CODE_CONSTANTS.items():
        walk(copy.deepcopy(code_constant(module, attribute)), name)
    return out


def _best(candidates: list[Pattern]) -> list[Pattern]:
    if not candidates:
        return []
    top = max(p.specificity for p in candidates)
    return [p for p in candidates if p.specificity == top]


@functools.lru_cache(maxsize=1)
def _index() -> dict[tuple[int, str | None], list[Pattern]]:
    """Entries by (segment count, last segment when it is one exact name, else None)."""
    out: dict[tuple[int, str | None], list[Pattern]] = {}
    for p in patterns():
        last = p.segments[-1]
        exact = last[0] if len(last) == 1 and not _is_glob(last[0]) else None
        out.setdefault((len(p.segments), exact), []).append(p)
    return out


def decide(key: str, entries: Iterable[Pattern]) -> tuple[str, Pattern | None, list[Pattern]]:
    """("registered" | "missing" | "conflict", the entry, the rival entries) of ``key`` among
    ``entries``: the most specific matching entries decide; two rows that claim it equally
    conflict."""
    parts = _split(key)
    best = _best([p for p in entries if p.matches(parts)])
    if not best:
        return "missing", None, []
    rivals = [p for p in best[1:] if p.row != best[0].row]
    return ("conflict" if rivals else "registered"), best[0], rivals


@functools.cache
def entry_for(key: str) -> tuple[str, Pattern | None, list[Pattern]]:
    """``decide`` over the registry, after the non-protocol leaves ("excluded")."""
    parts = _split(key)
    for p in excluded():
        if p.matches(parts):
            return "excluded", p, []
    index = _index()
    return decide(key, index.get((len(parts), parts[-1]), []) + index.get((len(parts), None), []))


def check(leaves: dict[str, Any]) -> list[str]:
    """One line per problem: a protocol leaf without a row, a leaf two rows claim equally, an
    entry that decides no leaf, a row's reading key that readings.yaml lacks, a row with keys
    that names neither the tests holding it (``held_by``) nor why none can (``untested``)."""
    problems = []
    used = set()
    for key, value in leaves.items():
        status, entry, rivals = entry_for(key)
        if status == "missing":
            problems.append(f"{key} = {value!r}: no registry entry (src/mlmm/fidelity/*.yaml)")
        elif status == "conflict":
            problems.append(
                f"{key}: rows claim it equally: {entry.text} ({entry.where}) vs "
                + ", ".join(f"{r.text} ({r.where})" for r in rivals)
            )
        if status == "registered":
            used.add(id(entry))
    for pattern in patterns():
        if id(pattern) not in used:
            problems.append(
                f"{pattern.text}: decides no leaf of the configuration (none matches, or more "
                f"specific entries decide every one) ({pattern.where})"
            )
    for name, section, row in rows():
        where = f"{name}.yaml, {section['heading']!r} row {row['point']!r}"
        for key in row.get("readings") or []:
            if key not in readings():
                problems.append(f"{where}: reading {key!r} is not in readings.yaml")
        if not names_a_test(row) and not _cell(row.get("untested")):
            problems.append(f"{where}: held_by names no test and untested says not why")
    return problems


def names_a_test(row: dict) -> bool:
    """Whether the row's ``held_by`` names a test function or a test file."""
    return bool(re.search(r"\btest_\w+|tests/", str(row.get("held_by") or "")))


def paper_config(repo: Path) -> dict:
    """``config.yaml`` with ``config/paper.yaml`` merged on top (as Snakemake merges
    ``--configfile``), validated against the schema with its defaults filled."""
    from mlmm.config import read_sources, validate_config
    from mlmm.retrieval.config import merge_config

    sources = [repo / "config.yaml", repo / "config" / "paper.yaml"]
    (_, base), (_, paper) = read_sources(sources)
    schema = repo / "workflow" / "schemas" / "config.schema.yaml"
    return validate_config(merge_config(base, paper), schema, sources)


def _cell(text: Any) -> str:
    return " ".join(str(text or "").split()).replace("|", "\\|")


def _value(value: Any) -> str:
    text = yaml.safe_dump(value, default_flow_style=True, allow_unicode=True, width=10**6)
    text = text.strip().removesuffix("...").strip()
    return f"`{text}`".replace("|", "\\|")


def row_values(row_id: tuple[str, str, str], leaves: dict[str, Any]) -> list[str]:
    """The values of the configuration a row decides, per key pattern: one value, or each
    value with the records (or the number of records) that run it."""
    by_pattern: dict[str, dict[str, list[str]]] = {}
    for key, value in leaves.items():
        status, entry, _ = entry_for(key)
        if status != "registered" or entry.row != row_id:
            continue
        if key.startswith(VARIANT_PREFIX):
            name, rest = key[len(VARIANT_PREFIX) :].split(".", 1)
            label = VARIANT_PREFIX + "*." + rest
        else:
            name, label = key, key
        by_pattern.setdefault(label, {}).setdefault(_value(value), []).append(name)
    out = []
    for label, values in by_pattern.items():
        if len(values) == 1:
            out.append(f"`{label}` = {next(iter(values))}")
            continue
        parts = [
            f"{value} ({', '.join(names) if len(names) <= 4 else f'{len(names)} records'})"
            for value, names in sorted(values.items(), key=lambda kv: -len(kv[1]))
        ]
        out.append(f"`{label}` = " + "; ".join(parts))
    return out


def _readings_text(row: dict, leaves: dict[str, Any]) -> str:
    """Whose each value of the row's reading keys is."""
    parts = []
    for key in row["readings"]:
        whose = "; ".join(f"`{value}`: {record['by']}" for value, record in readings()[key].items())
        parts.append(f"`{key}`: {whose}")
    return "Readings: " + ". ".join(parts)


def render(leaves: dict[str, Any]) -> str:
    """docs/fidelity.md: per row its source, what we do, the values of the resolved paper
    configuration (``leaves``) it decides, and the tests that hold it (or why none can)."""
    shared = registry()["shared"]
    out = [f"# {shared['title']}", "", shared["preamble"].strip(), ""]
    out += [
        "This page is generated by `python -m mlmm.fidelity` from the registry "
        "`src/mlmm/fidelity/*.yaml` (per key pattern: the source and our reading, never a "
        "value) and the values of the resolved `config/paper.yaml` (with `config.yaml` and the "
        "schema's defaults beneath; `code.*` are constants of the code). "
        "`tests/test_fidelity_registry.py` fails when the page is stale, when a leaf of the "
        'resolved configuration has no row, and when a test named under "held by" does not '
        "exist. A key `retrieval.variants.*.k` lists each value with the records that run it "
        "(or their number).",
        "",
    ]
    untested = 0
    for name, doc in registry().items():
        for section in doc["sections"]:
            out += [f"## {section['heading']}", ""]
            if section.get("intro"):
                out += [section["intro"].strip(), ""]
            out += [
                "| point | paper / authors' code | what we do | values | held by |",
                "|---|---|---|---|---|",
            ]
            for row in section["rows"]:
                ours = _cell(row["ours"])
                if row.get("readings"):
                    ours += " " + _cell(_readings_text(row, leaves))
                values = "<br>".join(row_values(_row_id(name, section, row), leaves))
                held = _cell(row.get("held_by"))
                if not names_a_test(row):
                    untested += 1
                    held = f"{held}; no behaviour test: " if held else "no behaviour test: "
                    held += _cell(row.get("untested"))
                elif row.get("untested"):
                    held += "; not observed here: " + _cell(row.get("untested"))
                out.append(
                    f"| {_cell(row['point'])} | {_cell(row['paper'])} | {ours} | {values} "
                    f"| {held} |"
                )
            out.append("")
    out += [f"Rows without a behaviour test: {untested} (each says why).", ""]
    return "\n".join(out).rstrip("\n")
