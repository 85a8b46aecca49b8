"""Calixto & Liu 2017 Table 3: MT metrics of the NMT 1-best and of reranked 20-best lists."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

import pandas as pd

from mlmm.catalogue import NMT_TABLE_LANGUAGE
from mlmm.errors import InputError
from mlmm.io import read_json, read_json_object
from mlmm.origin import Origin
from mlmm.results.build import paper_table
from mlmm.results.intervals import BOOTSTRAP_NOTE, Run
from mlmm.tables import load_paper_table, write_table

LANGUAGE, DIRECTION = NMT_TABLE_LANGUAGE, "mt"
METRICS = ["BLEU", "METEOR", "TER", "chrF"]


def table3(
    metrics: Sequence[Path],
    paper_tables: str | None,
    stem: Path,
    feature_runs: Sequence[Path] = (),
) -> list[str]:
    """Write ``stem``.csv/.md/.tex from `mlmm mt-score` JSONs; return the table notes.

    ``feature_runs``: the metrics.json of the retrieval runs whose models gave the image
    features of the reranking; their recorded backbone is the table's (its origin)."""
    rows, meteor_notes, records = [], set(), []
    seen: dict[tuple, Path] = {}
    for path in metrics:
        try:
            record = read_json(path, "a metrics JSON of mlmm mt-score")
            system, note, scores = record["system"], record["variant_note"], record["scores"]
        except (OSError, ValueError, KeyError) as exc:
            raise InputError(path, "a metrics JSON written by `mlmm mt-score`", str(exc)) from None
        settings = (record.get("provenance") or {}).get("config") or {}
        language = settings.get("language", LANGUAGE.split("-")[1])
        if language != LANGUAGE.split("-")[1]:
            raise InputError(path, f"scores of {LANGUAGE} output (this table's pair)",
                             f"--language {language}", key="provenance.config.language")
        key = (system, note, (record.get("provenance") or {}).get("seed"))
        if key in seen:
            raise InputError(path, "one metrics file per (system, note, seed) (a copy would "
                             "count as another run)", f"the run of {seen[key]} again")
        seen[key] = path
        meteor_notes.add(record.get("meteor", ""))
        records.append(record)
        for metric in METRICS:
            if metric in scores:
                rows.append({"system": system, "variant_note": note, "language": LANGUAGE,
                             "direction": DIRECTION, "metric": metric, "value": scores[metric]})
    paper = load_paper_table(paper_tables, "calixto2017", 3)
    # 95 % intervals from each system's per-sentence statistics (sentences.npz; not METEOR)
    table = paper_table(pd.DataFrame(rows), paper, nmt_runs(metrics), "calixto2017", 3,
                        order=lambda table: _in_paper_order(table, paper))  # fmt: skip
    notes = [
        BOOTSTRAP_NOTE,
        "Test set: 20-best lists of our NMT model, reranked with weights tuned by k-best batch "
        "MIRA on the validation 20-best lists; BLEU/TER/chrF by sacrebleu on tokenised, "
        "lowercased text (tokenize=none, unsmoothed BLEU).",
        *sorted(n for n in meteor_notes if n),
        "Reranked paper rows tune log p(Y|X) and the embedding distances only (Section 5); "
        "rows without a paper value are ours only (chrF, and the control row that adds a word "
        "penalty, labelled 'Control, not in the paper').",
    ]
    if paper is None:
        notes.append("No paper numbers: no calixto2017_table3.csv among the paper tables.")
    runs = [read_json_object(path, (), "a metrics.json of `mlmm train-retrieval`")
            for path in feature_runs]  # fmt: skip
    write_table(table, stem, "Calixto & Liu 2017, Table 3: NMT 20-best reranking", notes,
                Origin.of_runs([*records, *runs]))  # fmt: skip
    return notes


def _in_paper_order(table: pd.DataFrame, paper: pd.DataFrame | None) -> pd.DataFrame:
    """Metric by metric, the paper's rows in the paper's order, then rows of ours only."""
    keys = [] if paper is None else zip(paper.system, paper.variant_note, strict=True)
    rank = {key: i for i, key in enumerate(dict.fromkeys(keys))}
    table["_metric"] = table["metric"].map({m: i for i, m in enumerate(METRICS)})
    table["_row"] = [
        rank.get(key, len(rank)) for key in zip(table.system, table.variant_note, strict=True)
    ]
    table = table.sort_values(["_metric", "_row"], kind="stable")
    return table.drop(columns=["_metric", "_row"]).reset_index(drop=True)


def nmt_runs(paths) -> list[Run]:
    """``mlmm mt-score`` metrics.json files as runs of Calixto & Liu's Table 3 rows (their
    ``system`` and ``variant_note``), each with its sentences.npz beside it."""
    runs = []
    for path in map(Path, paths):
        record = read_json_object(
            path, ("system", "variant_note", "provenance"),
            "a metrics JSON written by `mlmm mt-score`",
        )
        row = {"paper": "calixto2017", "table": 3, "system": record["system"],
               "variant_note": record["variant_note"], "languages": None}  # fmt: skip
        seed = (record.get("provenance") or {}).get("seed") or 0
        runs.append(Run(path.parent.name, int(seed), record, [row], [], path))
    return runs
