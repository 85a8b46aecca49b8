"""``mlmm configuration``: the resolved workflow configuration as the file the report links."""

from __future__ import annotations

from pathlib import Path

from mlmm.cli import declare_outputs


def register(subparsers) -> None:
    p = subparsers.add_parser(
        "configuration",
        help="write the resolved workflow configuration as commented YAML (the report links it)",
        description="Check the resolved configuration RECORD (JSON: config.yaml and the "
        "--configfile files merged, defaults filled in, as the workflow writes it under "
        "results/records/) against the config schema and write it as YAML to --out.",
    )
    p.add_argument("record", type=Path, help="the resolved configuration, a JSON object")
    p.add_argument("--out", required=True, type=Path, help="YAML file to write")
    declare_outputs(p, "out")
    p.set_defaults(func=run_configuration)


def run_configuration(args) -> None:
    from mlmm.config import write_resolved
    from mlmm.io import guard_outputs
    from mlmm.schema import SCHEMA_PATH

    guard_outputs([args.out], [args.record])
    write_resolved(args.record, args.out, SCHEMA_PATH)
