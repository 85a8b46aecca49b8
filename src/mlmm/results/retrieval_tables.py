"""Retrieval tables and figures from per-run ``metrics.json`` files, beside the papers' numbers.

A run is ``results/retrieval/<variant>/seed<k>/metrics.json``. Which paper rows a variant
stands for is data: its ``paper_rows`` in ``config.yaml``, e.g.
``{paper: kadar2018, table: 2, system: "Bilingual + c2c", variant_note: "..."}`` or
``{paper: ame2019, figure: 2, system: AME}``, with an optional ``languages`` list that keeps
only those languages of the run. ``system`` and ``variant_note`` must be spelled as in the
paper's CSV (``paper_tables/<paper>_table<N>.csv``) so that our cells line up with the paper's.

Every cell of ours is the mean, standard deviation and count over the seeds of the variants
mapped onto it; rows the papers only quote (earlier work) stay in as references.
"""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pandas as pd

from mlmm.catalogue import TABLES, TableSpec
from mlmm.errors import InputError
from mlmm.figures import figure_size, paper_style
from mlmm.io import parse_json, read_json, save_figure
from mlmm.origin import Origin, backbone_name, stamp_figure
from mlmm.results.build import beside, paper_table
from mlmm.results.intervals import BOOTSTRAP_NOTE, Run
from mlmm.tables import KEYS, load_paper_table, write_table

# ----------------------------------------------------------------------------------------
# reading runs


def read_section(config_paths: list[Path]) -> dict:
    """The ``retrieval`` section of config files merged in order (as Snakemake merges them)."""
    from mlmm.config import read_sources
    from mlmm.retrieval.config import merge_config

    merged: dict = {}
    for path in map(Path, config_paths):
        if not path.is_file():
            raise InputError(path, "a config file", "no such file")
    for _, loaded in read_sources(config_paths):
        merged = merge_config(merged, loaded)
    return merged.get("retrieval") or {}


def _metrics_files(paths: list[Path]) -> list[Path]:
    out = []
    for path in paths:
        if path.is_dir():
            out += sorted(path.rglob("metrics.json"))
        elif path.is_file():
            out.append(path)
        else:
            raise InputError(path, "a metrics.json file or a directory of runs", "no such path")
    return out


def load_runs(paths: list[Path], section: dict, where: str = "config") -> list[Run]:
    """Every run's metrics with its variant's ``paper_rows`` from the retrieval section."""
    from mlmm.results.protocol_notes import protocol_notes
    from mlmm.retrieval.config import resolve_variant

    rows_of: dict[str, list[dict]] = {}
    protocol_of: dict[str, list[str]] = {}
    records_of: dict[str, dict] = {}
    seen: dict[tuple[str, int], Path] = {}
    runs = []
    for path in _metrics_files([Path(p) for p in paths]):
        metrics = read_json(path, "a JSON metrics file")
        for key in ("variant", "seed", "test", "provenance"):
            if key not in metrics:
                raise InputError(path, f"a metrics file with '{key}'", "none", key=key)
        name = metrics["variant"]
        if name not in rows_of:
            record = resolve_variant(section, name, where)
            rows_of[name] = [_check_row(r, where, name) for r in record["paper_rows"]]
            protocol_of[name] = protocol_notes(record)
            records_of[name] = record
        _check_same_config(path, metrics, records_of[name], where)
        key = (name, int(metrics["seed"]))
        if key in seen:
            raise InputError(
                path, "one run per (variant, seed) (a copy would count as another seed)",
                f"variant {name!r} seed {key[1]} already read from {seen[key]}",
            )  # fmt: skip
        seen[key] = path
        runs.append(
            Run(name, int(metrics["seed"]), metrics, rows_of[name], protocol_of[name], path)
        )
    return runs


# Keys of a variant record that do not shape its numbers: where a table puts it, the device.
UNSCORED_KEYS = ("paper_rows", "device", "name")


def _check_same_config(path: Path, metrics: dict, record: dict, where: str) -> None:
    """The variant record a run was trained with (``provenance.config.retrieval``) must be
    the one the table builder resolves now: a run of an edited or another configuration is
    refused instead of averaged in under the current variant's name."""
    recorded = ((metrics.get("provenance") or {}).get("config") or {}).get("retrieval")
    if not isinstance(recorded, dict):
        return  # a run written before records were kept: nothing to compare
    plain = parse_json(json.dumps(record, default=str), "the variant record")
    for key, value in plain.items():
        if key in UNSCORED_KEYS or key not in recorded or recorded[key] == value:
            continue
        raise InputError(
            path,
            f"a run of retrieval.variants.{record['name']} as {where} defines it "
            f"({key} = {json.dumps(value)[:60]})",
            f"{key} = {json.dumps(recorded[key])[:60]}",
            key=f"provenance.config.retrieval.{key}",
        )


def _check_row(row: dict, where: str, variant: str) -> dict:
    place = f"{where} retrieval.variants.{variant}.paper_rows"
    if not isinstance(row, dict) or "paper" not in row or "system" not in row:
        raise InputError(place, "entries {paper, table or figure, system, ...}", repr(row))
    if ("table" in row) == ("figure" in row):
        raise InputError(place, "exactly one of 'table' and 'figure'", repr(row))
    return {"variant_note": "", "languages": None, **row}


def run_cells(metrics: dict) -> list[dict]:
    """One record per number of a run: language, direction, metric, dataset, value."""
    cells = []
    for lang, directions in metrics.get("test", {}).items():
        for direction in ("i2t", "t2i"):
            for metric, value in (directions.get(direction) or {}).items():
                cells.append(dict(language=lang, direction=direction, metric=metric, value=value))
    for pair, values in (metrics.get("c2c") or {}).items():
        a, b = pair.split("-")
        language = f"{a}-{b}" if a == "en" or (b != "en" and a < b) else f"{b}-{a}"
        for metric, value in values.items():
            cells.append(
                dict(language=language, direction=f"t2t_{a}2{b}", metric=metric, value=value)
            )
    for year, value in (metrics.get("sts") or {}).items():
        cells.append(
            dict(language="en", direction="sts", metric="pearson", value=value, dataset=str(year))
        )
    for pair, value in (metrics.get("alignment") or {}).items():
        cells.append(dict(language=pair, direction="", metric="alignment", value=value))
    for cell in cells:
        cell.setdefault("dataset", "")
    return cells


def runs_frame(runs: list[Run], paper: str, number: int, key: str = "table") -> pd.DataFrame:
    """Long frame of every cell of every run mapped onto one paper table (or figure)."""
    records = []
    for run in runs:
        for row in run.paper_rows:
            if row["paper"] != paper or row.get(key) != number:
                continue
            for cell in run_cells(run.metrics):
                if row["languages"] and cell["language"] not in row["languages"]:
                    continue
                records.append(
                    dict(
                        system=row["system"],
                        variant_note=row["variant_note"],
                        variant=run.variant,
                        seed=run.seed,
                        **cell,
                    )
                )
    columns = [*KEYS, "dataset", "value", "variant", "seed"]
    return pd.DataFrame.from_records(records, columns=columns)


# ----------------------------------------------------------------------------------------
# tables


def build_table(runs: list[Run], spec: TableSpec, paper_tables: Path | None) -> pd.DataFrame:
    """Our cells of one paper table (mean, std, count over seeds, 95 % bootstrap interval
    from the runs' per-query outcomes) beside the paper's."""
    ours = runs_frame(runs, spec.paper, spec.table)
    wanted = spec.cells()
    cells = zip(ours.language, ours.direction, ours.metric, strict=True)
    ours = ours[np.array([cell in wanted for cell in cells], dtype=bool)]
    paper = load_paper_table(paper_tables, spec.paper, spec.table)
    if spec.directions != ("sts",):
        return paper_table(ours, paper, runs, spec.paper, spec.table,
                           order=lambda frame: _in_paper_order(frame, paper, spec))  # fmt: skip
    return paper_table(ours, paper, runs, spec.paper, spec.table,
                       place=lambda ours, paper: _sts_cells(ours, paper, spec))  # fmt: skip


def _sts_cells(ours: pd.DataFrame, paper: pd.DataFrame | None, spec: TableSpec) -> pd.DataFrame:
    """STS: one column of cells per SemEval year (the paper's rows differ only in dataset)."""
    parts = []
    years = sorted(set(ours.dataset) | ({"2014", "2015"} if paper is not None else set()))
    for year in years:
        cells = None if paper is None else paper[paper.dataset.str.contains(year)]
        parts.append(beside(ours[ours.dataset == year], cells).assign(dataset=year))
    if not parts:
        return _numeric(beside(ours, None).assign(dataset=""))
    frame = _in_paper_order(pd.concat(parts, ignore_index=True), paper, spec)
    return frame[["dataset", *[c for c in frame.columns if c != "dataset"]]]


def _rows(frame: pd.DataFrame) -> list[tuple[str, str]]:
    return list(zip(frame.system, frame.variant_note, strict=True))


def _numeric(frame: pd.DataFrame) -> pd.DataFrame:
    """Number columns as floats even where a table has no run of ours (all empty)."""
    for column in ("paper", "ours", "ours_std", "runs", "diff"):
        frame[column] = pd.to_numeric(frame[column]).astype(float)
    return frame


def _in_paper_order(frame: pd.DataFrame, paper: pd.DataFrame | None, spec: TableSpec):
    """The paper's row order, our rows without a paper row after them; within a row, the
    table's language, direction and metric order."""
    systems = [] if paper is None else list(dict.fromkeys(_rows(paper)))
    systems += [s for s in dict.fromkeys(_rows(frame)) if s not in systems]

    def position(values, order) -> list[int]:
        order = list(order)
        return [order.index(v) if v in order else len(order) for v in values]

    keys = pd.DataFrame(
        {
            "row": position(_rows(frame), systems),
            "dataset": frame.get("dataset", ""),
            "language": position(frame.language, spec.languages),
            "direction": position(frame.direction, spec.directions),
            "metric": position(frame.metric, spec.metrics),
        },
        index=frame.index,
    )
    order = keys.sort_values(list(keys.columns), kind="stable").index
    return _numeric(frame.loc[order].reset_index(drop=True))


def ran_note(metrics: dict) -> str:
    """What a run really used, from its metrics.json (recorded config and device), not from the
    paper row it stands for: image features, data set, similarity, loss, device."""
    record = ((metrics.get("provenance") or {}).get("config") or {}).get("retrieval") or {}
    parts = []
    if record.get("backbone"):
        parts.append(f"{backbone_name(record['backbone'])} image features")
    if record.get("dataset"):
        parts.append(f"data set {record['dataset']}")
    if record.get("similarity"):
        parts.append(f"{record['similarity']} similarity")
    if record.get("loss"):
        parts.append(f"{record['loss']} loss")
    if metrics.get("device"):
        parts.append(f"on {metrics['device']}")
    return ", ".join(parts)


def _notes(runs: list[Run], spec: TableSpec, paper_tables: Path | None) -> list[str]:
    notes = [
        "ours = mean over seeds, ours_std = standard deviation, runs = number of runs; "
        "diff = ours - paper.",
        BOOTSTRAP_NOTE,
    ]
    paper = load_paper_table(paper_tables, spec.paper, spec.table)
    if paper is None:
        notes.append(f"paper numbers unavailable (no {spec.stem}.csv in the paper-table directory)")
    else:
        notes += [f"paper's data: {d}" for d in dict.fromkeys(paper.dataset) if d]
    mapping: dict[str, set[str]] = {}
    capped: dict[str, set[int]] = {}  # runs the cap stopped at their best validation
    protocol: dict[str, list[str]] = {}
    for run in runs:
        for row in run.paper_rows:
            if row["paper"] == spec.paper and row.get("table") == spec.table:
                mapping.setdefault(f"{row['system']} [{row['variant_note']}]", set()).add(
                    run.variant
                )
                if run.protocol:
                    protocol[run.variant] = run.protocol
                if run.metrics.get("still_improving"):
                    capped.setdefault(run.variant, set()).add(run.seed)
    for label, variants in mapping.items():
        notes.append(f"paper row {label}: our variant(s) {', '.join(sorted(variants))}")
    mapped = set().union(*mapping.values())
    ran = {run.variant: ran_note(run.metrics) for run in runs if run.variant in mapped}
    notes += [f"{variant} ran: {text}" for variant, text in sorted(ran.items()) if text]
    if not mapping:
        notes.append("no configured variant maps onto this table: paper numbers only")
    notes += [f"{variant}: {'; '.join(lines)}" for variant, lines in sorted(protocol.items())]
    for variant, seeds in sorted(capped.items()):
        notes.append(
            f"{variant} (seed {', '.join(map(str, sorted(seeds)))}): stopped by its epoch/step "
            "cap while still improving on validation (its last validation was its best), so "
            "its numbers may be below what longer training gives"
        )
    return notes


def _maps_onto(row: dict, spec: TableSpec) -> bool:
    return row["paper"] == spec.paper and row.get("table") == spec.table


def build_tables(
    runs: list[Run], paper_tables: Path | None, out: Path, papers: list[str] | None = None
) -> list[Path]:
    """Write every retrieval table (of ``papers``; None: all) as
    ``out/<paper>_table<N>.{csv,md,tex}``."""
    written = []
    for spec in TABLES:
        if papers and spec.paper not in papers:
            continue
        frame = build_table(runs, spec, paper_tables)
        used = [run for run in runs if any(_maps_onto(row, spec) for row in run.paper_rows)]
        written += write_table(
            frame,
            Path(out) / spec.stem,
            spec.title,
            _notes(runs, spec, paper_tables),
            Origin.of_runs(run.metrics for run in (used or runs)),
        )
    return written


# ----------------------------------------------------------------------------------------
# figures


def _require(frame: pd.DataFrame, paper: str, number: int, what: str) -> None:
    """A figure is drawn from real runs or not at all: no placeholder image."""
    if frame.empty:
        raise InputError(
            "--runs",
            f"{what} of a variant whose paper_rows has {{paper: {paper}, figure: {number}}}",
            "none",
        )


def kadar_figure3(runs: list[Run], out: Path, metric: str = "R@10") -> list[Path]:
    """Kádár et al. 2018, Figure 3: Monolingual vs Bilingual vs Multilingual, en and de.

    Grouped bars of ``metric`` (mean over seeds, error bar = std) for image-to-text and
    text-to-image retrieval, two columns wide; the systems are the ``system`` names of the
    variants' rows with ``figure: 3``, in the paper's order where they use its names.
    """
    import matplotlib

    matplotlib.use("Agg")

    frame = runs_frame(runs, "kadar2018", 3, key="figure")
    frame = frame[frame.direction.isin(["i2t", "t2i"]) & (frame.metric == metric)]
    _require(frame, "kadar2018", 3, f"a run with {metric} of i2t or t2i")
    with paper_style():
        fig = _kadar_figure3(frame, metric)
    single = frame.groupby(["direction", "language", "system"])["seed"].nunique().eq(1)
    bars = (
        "Error bars: standard deviation over seeds"
        + ("; none on a bar of one seed." if single.any() else ".")
        if not single.all()
        else "No error bars: one seed per bar."
    )
    stamp_figure(fig, _figure_origin(runs, "kadar2018", 3), bars)
    return _close(fig, save_figure(fig, Path(out) / "kadar2018_figure3"))


def _kadar_figure3(frame: pd.DataFrame, metric: str):
    import matplotlib.pyplot as plt

    fig, axes = plt.subplots(
        1, 2, figsize=figure_size(2, 2.4), sharey=True, layout="constrained"
    )
    order = ["Monolingual", "Bilingual", "Multilingual"]
    systems = sorted(set(frame.system), key=lambda s: (order.index(s) if s in order else 9, s))
    languages = [la for la in ("en", "de") if la in set(frame.language)]  # the paper's panels
    stats = frame.groupby(["direction", "language", "system"])["value"].agg(["mean", "std"])
    width = 0.8 / len(systems)
    for ax, direction, title in zip(
        axes, ("i2t", "t2i"), ("image to text", "text to image"), strict=True
    ):
        for s, system in enumerate(systems):
            means = [stats["mean"].get((direction, la, system), np.nan) for la in languages]
            # the std of one seed is NaN: no error bar (not one of zero height)
            stds = np.array([stats["std"].get((direction, la, system), np.nan) for la in languages])
            x = np.arange(len(languages)) + (s - (len(systems) - 1) / 2) * width
            spread = {"yerr": stds, "capsize": 2} if np.isfinite(stds).any() else {}
            ax.bar(x, means, width, label=system, **spread)
        ax.set_xticks(np.arange(len(languages)), languages)
        ax.set_title(title)  # the panel's label
        ax.grid(axis="y", alpha=0.3)
    axes[0].set_ylabel(f"{metric} (%)")
    fig.legend(*axes[0].get_legend_handles_labels(), loc="outside right center", frameon=False)
    fig.suptitle("Kádár et al. 2018, Figure 3: one, two and four training languages")
    return fig


def ame_figure2(runs: list[Run], out: Path) -> list[Path]:
    """AME 2019, Figure 2: alignment ratio and image-to-text R@1 at each validation step.

    Curves from each mapped run's ``history`` (mean over seeds at each step), one panel per
    measure (each on its own scale), one column wide.
    """
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    rows = []
    for run in runs:
        labels = [r for r in run.paper_rows if r["paper"] == "ame2019" and r.get("figure") == 2]
        for label in labels:
            for point in run.metrics.get("history") or []:
                rows.append(
                    dict(
                        system=label["system"],
                        step=point.get("step"),
                        seed=run.seed,
                        alignment=point.get("alignment"),
                        r1=point.get("R@1_i2t"),
                    )
                )
    frame = pd.DataFrame(rows, columns=["system", "step", "seed", "alignment", "r1"])
    frame = frame.dropna(subset=["step"])
    _require(frame, "ame2019", 2, "a run with a validation history")
    with paper_style():
        fig, (top, bottom) = plt.subplots(
            2, 1, figsize=figure_size(1, 3.6), sharex=True, layout="constrained"
        )
        for n, (system, group) in enumerate(frame.groupby("system", sort=False)):
            curve = group.groupby("step")[["alignment", "r1"]].mean(numeric_only=True)
            top.plot(curve.index, curve["alignment"], "o-", c=f"C{n}", ms=3, label=system)
            bottom.plot(curve.index, curve["r1"], "s--", c=f"C{n}", ms=3, label=system)
        top.set_ylabel("alignment ratio (%)")
        bottom.set_ylabel("image-to-text R@1 (%)")
        bottom.set_xlabel("training step")
        for ax in (top, bottom):
            ax.grid(alpha=0.3)
        top.legend(frameon=False, loc="best")
        fig.suptitle("AME 2019, Figure 2: alignment ratio and R@1 during training")
    stamp_figure(fig, _figure_origin(runs, "ame2019", 2))
    return _close(fig, save_figure(fig, Path(out) / "ame2019_figure2"))


def _figure_origin(runs: list[Run], paper: str, number: int) -> Origin:
    """The origin of the runs drawn in a figure (their metrics.json provenance)."""
    drawn = [
        run.metrics
        for run in runs
        if any(r["paper"] == paper and r.get("figure") == number for r in run.paper_rows)
    ]
    return Origin.of_runs(drawn)


def _close(fig, paths: list[Path]) -> list[Path]:
    import matplotlib.pyplot as plt

    plt.close(fig)
    return paths


def build_figures(runs: list[Run], out: Path, papers: list[str] | None = None) -> list[Path]:
    """The retrieval figures (of ``papers``; None: all)."""
    makers = {"kadar2018": kadar_figure3, "ame2019": ame_figure2}
    return [
        path
        for paper, make in makers.items()
        if not papers or paper in papers
        for path in make(runs, out)
    ]
