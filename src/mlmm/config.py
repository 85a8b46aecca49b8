"""Validate the workflow configuration against its schema, with defaults filled in.

``snakemake.utils.validate`` prints the whole schema (thousands of lines) around the one useful
line, and cannot tell which of the merged files (``config.yaml``, each ``--configfile``) set the
failing key. ``validate_config`` fills defaults the same way (every ``default`` of a property
missing from the instance, recursively) and raises one InputError naming the source file, the
key, what the schema expects and what was found.
"""

from __future__ import annotations

import copy
import math
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import jsonschema
import yaml
from jsonschema import validators

from mlmm.errors import InputError
from mlmm.io import read_json, read_yaml


def _with_defaults(validator_class):
    """A validator class that fills in ``default`` values as it validates (Snakemake's rule)."""
    validate_properties = validator_class.VALIDATORS["properties"]

    def set_defaults(validator, properties, instance, schema):
        if isinstance(instance, dict):
            for name, subschema in properties.items():
                if isinstance(subschema, dict) and "default" in subschema:
                    instance.setdefault(name, copy.deepcopy(subschema["default"]))
        yield from validate_properties(validator, properties, instance, schema)

    return validators.extend(validator_class, {"properties": set_defaults})


def _dotted(path: Sequence[Any]) -> str:
    return ".".join(str(p) for p in path) or "(top level)"


def _expected(error: jsonschema.ValidationError) -> tuple[str, str, list[Any]]:
    """(expected, found, key path) of one schema error, in words."""
    path = list(error.absolute_path)
    value, kind = error.validator_value, error.validator
    found = repr(error.instance) if not isinstance(error.instance, dict | list) else None
    if kind == "additionalProperties" and isinstance(error.instance, dict):
        known = sorted(error.schema.get("properties", {}))
        extra = sorted(set(error.instance) - set(known))
        name = extra[0] if extra else "?"
        expected = f"one of the keys {known}" if known else "no such key"
        return expected, f"unknown key {name!r}", [*path, name]
    if kind == "propertyNames":
        name = error.instance
        return f"a name matching {value.get('pattern', value)}", repr(name), [*path, name]
    if kind == "required":
        return f"the keys {value}", error.message, path
    words = {
        "minimum": f"a number >= {value}",
        "maximum": f"a number <= {value}",
        "exclusiveMinimum": f"a number > {value}",
        "exclusiveMaximum": f"a number < {value}",
        "type": f"type {value}",
        "enum": f"one of {value}",
        "pattern": f"a string matching {value}",
        "minItems": f"at least {value} item(s)",
        "maxItems": f"at most {value} item(s)",
        "uniqueItems": "distinct items",
        "const": repr(value),
    }
    expected = words.get(kind, f"{kind} {value!r}")
    return expected, found if found is not None else repr(error.instance)[:80], path


def _source(path: Sequence[Any], sources: Sequence[tuple[str, dict]]) -> str:
    """The last source (later files override earlier ones) that sets ``path``; none of them:
    ``--config`` on the command line."""
    for name, data in reversed(sources):
        node: Any = data
        for part in path:
            in_dict = isinstance(node, dict) and part in node
            in_list = isinstance(node, list) and isinstance(part, int) and part < len(node)
            if in_dict or in_list:
                node = node[part]
            else:
                break
        else:
            return name
    return COMMAND_LINE


def numbers(node: Any, path: Sequence[Any] = ()) -> list[tuple[list[Any], float]]:
    """(key path, value) of every float in a nested record (a YAML ``.nan`` or ``.inf`` passes
    every ``minimum``/``maximum`` of a JSON schema, so finiteness is checked on its own)."""
    if isinstance(node, float):
        return [(list(path), node)]
    if isinstance(node, dict):
        return [hit for key, value in node.items() for hit in numbers(value, [*path, key])]
    if isinstance(node, list):
        return [hit for i, value in enumerate(node) for hit in numbers(value, [*path, i])]
    return []


class _UniqueKeyLoader(yaml.SafeLoader):
    """PyYAML keeps the last of two equal keys without a word; a config file that names a key
    twice is refused instead (one of the two values is a mistake, and we cannot tell which)."""

    def construct_mapping(self, node, deep=False):
        seen: set = set()
        for key_node, _ in node.value:
            if not isinstance(key_node, yaml.ScalarNode) or key_node.tag.endswith(":merge"):
                continue  # merge keys (<<) may repeat; config keys are plain scalars
            key = key_node.value
            if key in seen:
                raise InputError(
                    self.name, "each key once per mapping", f"{key!r} twice",
                    line=key_node.start_mark.line + 1,
                )  # fmt: skip
            seen.add(key)
        return super().construct_mapping(node, deep=deep)


def read_sources(paths: Sequence[str | Path]) -> list[tuple[str, dict]]:
    """(path, parsed YAML) of each config file, in the order Snakemake merges them. A ``.json``
    file (the workflow's records, ``mlmm.records``) is parsed as JSON: PyYAML's YAML 1.1 reads
    a JSON number such as ``6e-05`` as a string."""
    out = []
    for path in paths:
        if Path(path).suffix == ".json":
            data = read_json(path, "a JSON config file")
        else:
            data = _read_yaml_config(path)
        if not isinstance(data, dict):
            raise InputError(path, "a mapping of config keys", f"a {type(data).__name__}")
        out.append((str(path), data))
    return out


def _read_yaml_config(path: str | Path):
    """A YAML config file as Snakemake reads it, refusing a key given twice in one mapping."""
    try:
        text = Path(path).read_text(encoding="utf-8-sig")
        loader = _UniqueKeyLoader(text)
        loader.name = str(path)
        try:
            return loader.get_single_data() or {}
        finally:
            loader.dispose()
    except (OSError, UnicodeDecodeError, yaml.YAMLError) as exc:
        raise InputError(path, "a readable YAML file", type(exc).__name__) from None


COMMAND_LINE = "--config (command line)"


def validate_config(
    config: dict,
    schema_path: str | Path,
    sources: Sequence[str | Path] = (),
    command_line: dict | None = None,
) -> dict:
    """Validate ``config`` in place (defaults filled); the first error becomes one InputError.

    ``sources``: the config files merged into ``config``, in order (``workflow.configfiles``),
    then ``command_line``, the ``--config`` values Snakemake merges last, to name the one that
    set the failing key. Also checks that every name in ``retrieval.run`` is a variant of
    ``retrieval.variants``, blamed on the source naming it.
    """
    schema = read_yaml(schema_path, "the config schema")
    validator_class = validators.validator_for(schema)
    validator = _with_defaults(validator_class)(schema)
    named = [*read_sources(sources), (COMMAND_LINE, dict(command_line or {}))]
    for path, value in numbers(config):
        if not math.isfinite(value):
            raise InputError(
                _source(path, named), "a finite number", repr(value), key=_dotted(path)
            )
    errors = sorted(validator.iter_errors(config), key=lambda e: list(e.absolute_path))
    if errors:
        error = jsonschema.exceptions.best_match(errors)
        expected, found, path = _expected(error)
        raise InputError(_source(path, named), expected, found, key=_dotted(path))
    _check_paper_tables(config, named)
    _check_nmt_pair(config, named)
    retrieval = config.get("retrieval") or {}
    variants = retrieval.get("variants") or {}
    for index, name in enumerate(retrieval.get("run") or []):
        if name not in variants:
            raise InputError(
                _source(["retrieval", "run"], named),
                f"a variant of retrieval.variants ({len(variants)} defined)",
                repr(name),
                key=f"retrieval.run[{index}]",
            )
    return config


def _check_paper_tables(config: dict, named: Sequence[tuple[str, dict]]) -> None:
    """``paper_tables`` apart from ``<results>/tables``: the table jobs write there, and would
    replace the papers' CSVs (the same names) with ours, then compare ours with ours."""
    import os

    paper = config.get("paper_tables")
    if not paper:
        return
    tables = Path(config.get("results") or "results") / "tables"
    mine, ours = Path(os.path.realpath(paper)), Path(os.path.realpath(tables))
    if mine.is_relative_to(ours) or ours.is_relative_to(mine):
        raise InputError(
            _source(["paper_tables"], named),
            f"a directory apart from {tables} (the workflow writes its tables there)",
            repr(paper),
            key="paper_tables",
        )


def _check_nmt_pair(config: dict, named: Sequence[tuple[str, dict]]) -> None:
    """``nmt.src``-``nmt.tgt`` must be the pair of the one table the NMT stage fills (Calixto &
    Liu 2017 Table 3, English to German): another pair would be printed under "en-de" beside
    the paper's numbers."""
    from mlmm.catalogue import NMT_TABLE_LANGUAGE as LANGUAGE

    nmt = config.get("nmt") or {}
    src, tgt = nmt.get("src", "en"), nmt.get("tgt", "de")
    if f"{src}-{tgt}" != LANGUAGE:
        key = "nmt.src" if src != LANGUAGE.split("-")[0] else "nmt.tgt"
        raise InputError(
            _source(key.split("."), named),
            f"the pair {LANGUAGE} of the table it fills (Calixto & Liu 2017 Table 3)",
            f"{src}-{tgt}",
            key=key,
        )


def validate_or_exit(
    config: dict,
    schema_path: str | Path,
    sources: Sequence[str | Path] = (),
    command_line: dict | None = None,
) -> dict:
    """``validate_config`` for the Snakefile: an error exits with its one line, no traceback."""
    try:
        return validate_config(config, schema_path, sources, command_line)
    except InputError as error:
        raise SystemExit(f"config error: {error}") from None


RESOLVED_HEADER = """\
# The configuration the workflow last planned with in this directory: config.yaml and the
# files given with --configfile (and --config values), merged in that order, with the schema's
# defaults filled in. Each result records what it was made from in its own provenance
# (metrics.json); this file is the settings as a whole, for the report and for a paper's
# appendix. Written by `mlmm configuration` (rule configuration).
"""


def write_resolved(record: str | Path, out: str | Path, schema_path: str | Path) -> None:
    """The resolved configuration in ``record`` (JSON, written while the workflow is planned)
    as commented YAML at ``out``: what the report links instead of dumping it, checked against
    the schema first so that a hand-written record fails with one line naming its key."""
    from mlmm.io import write_text

    (_, config), = read_sources([record])  # fmt: skip
    validate_config(config, schema_path, [record])
    body = yaml.safe_dump(config, sort_keys=False, allow_unicode=True, default_flow_style=False)
    write_text(out, RESOLVED_HEADER + body)
