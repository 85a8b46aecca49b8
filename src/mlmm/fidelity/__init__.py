"""The fidelity registry: one entry per protocol value of the paper configuration, with its source.

The registry is one YAML file per paper beside this module (``shared.yaml`` holds the retrieval
conventions every paper shares, and the preamble of docs/fidelity.md). Each file has sections (one
table of docs/fidelity.md each) of rows; a row names one protocol point, what the paper or its
authors' code does (``paper``, with section or file and commit), what we do (``ours``) and the
tests of its behaviour (``held_by``), and pins the values of the resolved paper configuration it
is about (``values``: dotted key -> value; a key segment may be a glob or ``{a,b}`` alternatives,
an exact segment beats a glob). Where the paper and the code differ, ``readings`` names for a key
which value is whose, with the note the result tables print when that value ran.

``check`` compares every leaf of the resolved paper configuration (``protocol_leaves``) with the
registry: a leaf without an entry, a value that differs and an entry that matches nothing are
each a problem, so no protocol value changes, or appears, without its registry entry. Only the
leaves of ``not_protocol.yaml`` (locations, resources, labels) are outside the registry.
docs/fidelity.md is generated from the registry (``render``; ``python -m mlmm.fidelity``).
"""

from __future__ import annotations

import copy
import fnmatch
import functools
import re
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from mlmm.io import parse_yaml, read_yaml

HERE = Path(__file__).resolve().parent
PAPERS = ("shared", "kadar2018", "calixto2017", "ame2019", "rajendran2016")
NOT_PROTOCOL = HERE / "not_protocol.yaml"
VARIANT_PREFIX = "retrieval.variants."


@dataclass(frozen=True, eq=False)
class Pattern:
    """One registered key: its segments (globs or ``{a,b}`` alternatives) and where it is."""

    text: str
    segments: tuple[tuple[str, ...], ...]
    value: Any
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


@functools.lru_cache(maxsize=1)
def patterns() -> tuple[Pattern, ...]:
    out = []
    for name, section, row in rows():
        for key, value in (row.get("values") or {}).items():
            where = f"{name}.yaml, {section['heading']!r} row {row['point']!r}"
            out.append(Pattern(key, _segments(key), value, where))
    return tuple(out)


@functools.lru_cache(maxsize=1)
def excluded() -> tuple[Pattern, ...]:
    """The non-protocol leaves (not_protocol.yaml), each group with its reason."""
    doc = read_yaml(NOT_PROTOCOL, "the registry's list of non-protocol leaves")
    return tuple(
        Pattern(key, _segments(key), None, f"not_protocol.yaml: {group['why']}")
        for group in doc["groups"]
        for key in group["keys"]
    )


# Protocol values that are constants of the code, not config keys: registered as ``code.<name>``
# leaves beside the configuration's (module, attribute).
CODE_CONSTANTS = {"code.nmt.bleu": ("mlmm.nmt.metrics", "BLEU_SETTINGS")}


def protocol_leaves(config: dict) -> dict[str, Any]:
    """Every leaf of the merged, validated configuration with each run variant resolved
    (``retrieval.variants.<name>.<key>``; ``retrieval.defaults`` only reaches a run through
    its variants). Lists are single leaves (a list of sources is one protocol value). The code's
    protocol constants (``CODE_CONSTANTS``) are leaves too, as ``code.<name>.<key>``."""
    from mlmm.retrieval.config import resolve_variant

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
    import importlib

    for name, (module, attribute) in CODE_CONSTANTS.items():
        walk(copy.deepcopy(getattr(importlib.import_module(module), attribute)), name)
    return out


def _best(candidates: list[Pattern]) -> list[Pattern]:
    if not candidates:
        return []
    top = max(p.specificity for p in candidates)
    return [p for p in candidates if p.specificity == top]


def same(a: Any, b: Any) -> bool:
    """Equal values of equal kinds (``True`` is not ``1``; ``1`` and ``1.0`` are one number)."""
    if isinstance(a, bool) or isinstance(b, bool):
        return type(a) is type(b) and a == b
    if isinstance(a, list) and isinstance(b, list):
        return len(a) == len(b) and all(same(x, y) for x, y in zip(a, b, strict=True))
    if isinstance(a, dict) and isinstance(b, dict):
        return a.keys() == b.keys() and all(same(a[k], b[k]) for k in a)
    if isinstance(a, int | float) and isinstance(b, int | float):
        return a == b
    return type(a) is type(b) and a == b


@functools.lru_cache(maxsize=1)
def _index() -> dict[tuple[int, str | None], list[Pattern]]:
    """Entries by (segment count, last segment when it is one exact name, else None)."""
    out: dict[tuple[int, str | None], list[Pattern]] = {}
    for p in patterns():
        last = p.segments[-1]
        exact = last[0] if len(last) == 1 and not _is_glob(last[0]) else None
        out.setdefault((len(p.segments), exact), []).append(p)
    return out


@functools.cache
def entry_for(key: str) -> tuple[str, Pattern | None, list[Pattern]]:
    """("registered" | "excluded" | "missing" | "conflict", the entry, the rival entries)."""
    parts = _split(key)
    if any(p.matches(parts) for p in excluded()):
        return "excluded", None, []
    index = _index()
    candidates = index.get((len(parts), parts[-1]), []) + index.get((len(parts), None), [])
    best = _best([p for p in candidates if p.matches(parts)])
    if not best:
        return "missing", None, []
    if any(not same(p.value, best[0].value) for p in best[1:]):
        return "conflict", best[0], best[1:]
    return "registered", best[0], []


def leaf_problem(key: str, value: Any) -> str | None:
    """The problem of one leaf (``check`` applies it to each): no entry, entries that disagree,
    or a value other than its entry's; None when the registry holds it."""
    status, entry, rivals = entry_for(key)
    if status == "missing":
        return f"{key} = {value!r}: no registry entry (src/mlmm/fidelity/*.yaml)"
    if status == "conflict":
        return (
            f"{key}: entries disagree: {entry.text} = {entry.value!r} ({entry.where}) vs "
            + ", ".join(f"{r.text} = {r.value!r} ({r.where})" for r in rivals)
        )
    if status == "registered" and not same(value, entry.value):
        return f"{key} = {value!r}: the registry has {entry.value!r} ({entry.text}, {entry.where})"
    return None


def check(leaves: dict[str, Any]) -> list[str]:
    """One line per problem: a protocol leaf without an entry, one whose value differs from its
    entry, two equally specific entries that disagree, an entry that decides no leaf."""
    problems = [p for key, value in leaves.items() if (p := leaf_problem(key, value))]
    used = {id(entry_for(key)[1]) for key in leaves if entry_for(key)[0] == "registered"}
    for pattern in patterns():
        if id(pattern) not in used:
            problems.append(
                f"{pattern.text}: decides no leaf of the configuration (none matches, or more "
                f"specific entries decide every one) ({pattern.where})"
            )
    return problems


def paper_config(repo: Path) -> dict:
    """``config.yaml`` with ``config/paper.yaml`` merged on top (as Snakemake merges
    ``--configfile``), validated against the schema with its defaults filled."""
    from mlmm.config import read_sources, validate_config
    from mlmm.retrieval.config import merge_config

    sources = [repo / "config.yaml", repo / "config" / "paper.yaml"]
    (_, base), (_, paper) = read_sources(sources)
    schema = repo / "workflow" / "schemas" / "config.schema.yaml"
    return validate_config(merge_config(base, paper), schema, sources)


def reading(key: str, value: Any) -> dict:
    """The registry's reading of a variant key's value where the paper and the code differ:
    ``{"by": "paper" | <the code>, "note": <what the table notes print>}``."""
    for _, _, row in rows():
        values = (row.get("readings") or {}).get(key)
        if values is None:
            continue
        for candidate, record in values.items():
            if same(_yaml_value(candidate), value):
                return record
        raise KeyError(f"{key} = {value!r}: no reading in the registry")
    raise KeyError(f"{key}: no reading in the registry")


def _yaml_value(text: Any) -> Any:
    """Reading keys are YAML scalars written as mapping keys (``true``, ``2``, ``shared``)."""
    return parse_yaml(str(text), "a reading key of the registry") if isinstance(text, str) else text


def _cell(text: Any) -> str:
    return " ".join(str(text or "").split())


def _readings_text(row: dict, config_leaves: dict[str, Any]) -> str:
    """Whose each value of the row's reading keys is, and which ran: the values of the leaves
    this row's entries decide (or, without entries for the key, of every record)."""
    mine = set(row.get("values") or {})
    parts = []
    for key, values in row["readings"].items():
        leaves = {
            k: v
            for k, v in config_leaves.items()
            if k.startswith(VARIANT_PREFIX) and k.split(".", 3)[3] == key
        }
        decided = {
            k: v for k, v in leaves.items() if entry_for(k)[1] and entry_for(k)[1].text in mine
        }
        ran = sorted({str(v) for v in (decided or leaves).values()})
        whose = "; ".join(f"`{value}`: {record['by']}" for value, record in values.items())
        parts.append(f"`{key}`: {whose} (config/paper.yaml runs {', '.join(ran) or 'neither'})")
    return "Readings: " + ". ".join(parts)


def render(config_leaves: dict[str, Any]) -> str:
    """docs/fidelity.md from the registry; ``config_leaves`` (of the paper configuration) say
    which reading each row's keys ran."""
    shared = registry()["shared"]
    out = [f"# {shared['title']}", "", shared["preamble"].strip(), ""]
    out += [
        "This page is generated from the registry `src/mlmm/fidelity/*.yaml` by "
        "`python -m mlmm.fidelity`; `tests/test_fidelity_registry.py` fails when the two "
        "differ, when a protocol value of the resolved `config/paper.yaml` has no entry or "
        'another value, and when a test named under "held by" does not exist. "pinned" '
        "counts the registered values of a row (each leaf of the resolved paper "
        "configuration it covers is checked).",
        "",
    ]
    for doc in registry().values():
        for section in doc["sections"]:
            out += [f"## {section['heading']}", ""]
            if section.get("intro"):
                out += [section["intro"].strip(), ""]
            out += [
                "| point | paper / authors' code | what we do | held by |",
                "|---|---|---|---|",
            ]
            for row in section["rows"]:
                ours = _cell(row["ours"])
                if row.get("readings"):
                    ours += " " + _readings_text(row, config_leaves)
                held = _cell(row.get("held_by"))
                count = _leaf_count(row, config_leaves)
                if count:
                    held = f"{held}; pinned: {count} values" if held else f"pinned: {count} values"
                out.append(f"| {_cell(row['point'])} | {_cell(row['paper'])} | {ours} | {held} |")
            out.append("")
    return "\n".join(out)


def _leaf_count(row: dict, config_leaves: dict[str, Any]) -> int:
    mine = set(row.get("values") or {})
    return sum(
        1
        for key in config_leaves
        if entry_for(key)[0] == "registered" and entry_for(key)[1].text in mine
    )
