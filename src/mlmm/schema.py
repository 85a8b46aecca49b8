"""The workflow's config schema as the one source of truth for every entry point.

Snakemake validates config.yaml against ``workflow/schemas/config.schema.yaml``
(``mlmm.config.validate_config``); a subcommand run by hand would otherwise accept values the
schema forbids (``mira --iters 0``, ``--c nan``) and train nothing or crash.
Each numeric option of a subcommand is therefore declared with ``checked_option``, naming the
schema property it sets (``nmt.mira.iters``); ``check_options`` (called by ``mlmm.cli.main``
after parsing) validates every given value against that property's sub-schema and turns the
first failure into one InputError naming the option, what was expected and what was found.
The option's default is that property's ``default`` too, so a hand run and the workflow agree.
Options with no config key (``--jobs``) have their ranges in the schema's ``$defs/cli_options``.
"""

from __future__ import annotations

import argparse
import math
from collections.abc import Iterable
from functools import lru_cache
from pathlib import Path
from typing import Any

from mlmm.errors import InputError
from mlmm.io import read_yaml

# workflow/schemas/config.schema.yaml, package data (a link to it in the repository: mlmm.shipped)
SCHEMA_PATH = Path(__file__).parent / "config.schema.yaml"
CHECKS = "_schema_checks"  # the parser default holding {dest: (option, pointer)}
_UNSET = object()  # checked_option's own_default when not given (None is a default)


@lru_cache(maxsize=1)
def schema() -> dict:
    """The parsed config schema (the checkout's copy, beside the package's sources)."""
    if not SCHEMA_PATH.is_file():
        raise InputError(SCHEMA_PATH, "the config schema of the mlmm checkout", "no such file")
    return read_yaml(SCHEMA_PATH, "the config schema of the mlmm checkout")


def _resolve(node: dict) -> dict:
    """Follow ``$ref`` links (``#/$defs/...``) to the schema they name."""
    while isinstance(node, dict) and "$ref" in node:
        target: Any = schema()
        for part in node["$ref"].removeprefix("#/").split("/"):
            target = target[part]
        node = target
    return node


def subschema(pointer: str) -> dict:
    """The schema of a dotted config key: ``nmt.mira.iters``; ``ted.lambdas[]`` is an item of
    the list ``ted.lambdas``; ``$defs.cli_options.jobs`` a definition."""
    node: dict = schema()
    parts = pointer.split(".")
    if parts[0] == "$defs":
        node, parts = schema()["$defs"], parts[1:]
        node = {"properties": node}
    for part in parts:
        items = part.endswith("[]")
        node = _resolve(node)
        try:
            node = _resolve(node["properties"][part.removesuffix("[]")])
            if items:
                node = _resolve(node["items"])
        except KeyError:
            raise KeyError(f"no config key {pointer!r} in {SCHEMA_PATH}") from None
    return node


_RANGE_KEYS = {"type", "minimum", "maximum", "exclusiveMinimum", "exclusiveMaximum"}
_NUMBER_TYPES = {"integer": (int,), "number": (int, float)}


def plainly_within(value: Any, node: dict) -> bool:
    """Whether ``node`` is a plain numeric range (type, minimum, maximum, exclusive bounds)
    that ``value`` (an int, or a finite float where numbers are allowed) plainly meets: most
    checked options are such, and deciding them here keeps jsonschema's import (about 90 ms)
    off every command's start-up. False means "ask jsonschema", never "invalid"."""
    rule = {k: v for k, v in node.items() if k not in ("default", "description")}
    kinds = _NUMBER_TYPES.get(rule["type"]) if isinstance(rule.get("type"), str) else None
    if not kinds or not rule.keys() <= _RANGE_KEYS or type(value) not in kinds:
        return False
    if isinstance(value, float) and not math.isfinite(value):
        return False
    return (
        value >= rule.get("minimum", value)
        and value <= rule.get("maximum", value)
        and ("exclusiveMinimum" not in rule or value > rule["exclusiveMinimum"])
        and ("exclusiveMaximum" not in rule or value < rule["exclusiveMaximum"])
    )


def value_error(value: Any, node: dict) -> tuple[str, str] | None:
    """(expected, found) when ``value`` breaks ``node`` (a non-finite number always does:
    NaN passes every comparison of a JSON schema), else None."""
    if isinstance(value, float) and not math.isfinite(value):
        return "a finite number", repr(value)
    if plainly_within(value, node):
        return None
    import jsonschema

    from mlmm.config import _expected

    node = {k: v for k, v in node.items() if k not in ("default", "description")}
    validator = jsonschema.validators.validator_for(schema())({**node, "$defs": schema()["$defs"]})
    errors = list(validator.iter_errors(value))
    if not errors:
        return None
    expected, found, _ = _expected(jsonschema.exceptions.best_match(errors))
    return expected, found


def checked_option(
    parser: argparse.ArgumentParser, option: str, pointer: str, own_default: Any = _UNSET, **kwargs
):
    """``parser.add_argument(option, **kwargs)``, its value checked against the schema of
    ``pointer`` by ``check_options``, and its default the schema's ``default`` of ``pointer``
    when it has one (not for a required option). A hand-run tool whose default deliberately
    differs from the config's passes it as ``own_default`` (and says why where it does); a
    ``default=`` that differs from the schema's is refused when the parser is built, as is an
    ``own_default`` equal to it."""
    node = subschema(pointer)  # a misspelt pointer fails when the parser is built, not when used
    if "default" in node:
        if "default" in kwargs:
            raise TypeError(
                f"{option}: default={kwargs['default']!r} restates or contradicts the schema's "
                f"default {node['default']!r} of {pointer}; leave it out, or pass own_default= "
                "for a default that deliberately differs"
            )
        if own_default is not _UNSET:
            if own_default == node["default"]:
                raise TypeError(f"{option}: own_default={own_default!r} is the schema's default")
            kwargs["default"] = own_default
        elif not kwargs.get("required"):
            kwargs["default"] = _typed(node["default"], kwargs.get("type"), option)
    elif own_default is not _UNSET:
        raise TypeError(f"{option}: {pointer} has no schema default to differ from; use default=")
    action = parser.add_argument(option, **kwargs)
    checks = dict(parser.get_default(CHECKS) or {})
    checks[action.dest] = (option, pointer)
    parser.set_defaults(**{CHECKS: checks})
    return action


def _typed(default: Any, kind: Any, option: str) -> Any:
    """The schema's default as the option's ``type`` makes a given value (YAML's ``1`` of a
    float option is ``1.0``), so that a default and a given value read alike."""
    if default is None or kind not in (int, float):
        return default
    typed = kind(default)
    if typed != default:
        raise TypeError(f"{option}: the schema's default {default!r} is not a {kind.__name__}")
    return typed


def check_options(args: argparse.Namespace) -> None:
    """Validate every schema-checked option of ``args`` (then drop the bookkeeping, so that
    ``vars(args)`` in a provenance record holds options only)."""
    checks = getattr(args, CHECKS, None) or {}
    if hasattr(args, CHECKS):
        delattr(args, CHECKS)
    for dest, (option, pointer) in checks.items():
        value = getattr(args, dest, None)
        if value is None:
            continue
        problem = value_error(value, subschema(pointer))
        if problem:
            raise InputError(option, problem[0], problem[1])


def validate_record(record: Any, pointer: str, where: str | Path) -> None:
    """A config record a command reads itself (a JSON record, a section) checked against the
    sub-schema of ``pointer``; the first problem names ``where`` and the key inside it."""
    import jsonschema

    from mlmm.config import _dotted, _expected, numbers

    for path, value in numbers(record):
        if not math.isfinite(value):
            raise InputError(where, "a finite number", repr(value), key=_dotted([pointer, *path]))
    node = {k: v for k, v in subschema(pointer).items() if k != "default"}
    validator = jsonschema.validators.validator_for(schema())({**node, "$defs": schema()["$defs"]})
    errors = list(validator.iter_errors(record))
    if errors:
        expected, found, path = _expected(jsonschema.exceptions.best_match(errors))
        raise InputError(where, expected, found, key=_dotted([pointer, *path]))


def read_record(path: str | Path, pointer: str, keys: Iterable[str]) -> dict:
    """The record file ``path`` (JSON, or YAML) a workflow job reads its settings from
    (``mlmm.records``): a mapping of some ``keys`` of the config section ``pointer``
    (``nmt``; a dotted key, ``mt.beam``, is a key of a nested mapping), checked against their
    schema with the schema's defaults filled in for the keys it leaves out. A problem is one
    InputError naming the file and the key inside it."""
    import jsonschema
    from jsonschema import validators

    from mlmm.config import _dotted, _expected, _with_defaults, numbers, read_sources

    ((_, record),) = read_sources([path])
    node = {**_record_schema(subschema(pointer), keys), "$defs": schema()["$defs"]}
    for where, value in numbers(record):
        if not math.isfinite(value):
            raise InputError(path, "a finite number", repr(value), key=_dotted(where))
    validator = _with_defaults(validators.validator_for(schema()))(node)
    errors = sorted(validator.iter_errors(record), key=lambda e: list(e.absolute_path))
    if errors:
        expected, found, where = _expected(jsonschema.exceptions.best_match(errors))
        raise InputError(path, expected, found, key=_dotted(where))
    return record


def _record_schema(section: dict, keys: Iterable[str]) -> dict:
    """The schema of a record holding ``keys`` of the section schema ``section`` and nothing
    else: ``mt.beam`` allows the mapping ``mt`` with the key ``beam`` only."""
    properties = _resolve(section)["properties"]
    nested: dict[str, list[str] | None] = {}
    for key in keys:
        head, _, rest = key.partition(".")
        if not rest:
            nested[head] = None
        elif nested.get(head, []) is not None:
            nested.setdefault(head, []).append(rest)
    node: dict = {"type": "object", "additionalProperties": False, "properties": {}}
    for head, rest in nested.items():
        if rest is None:
            node["properties"][head] = properties[head]
        else:
            node["properties"][head] = {
                **_record_schema(properties[head], rest),
                "default": {},
            }
    return node
