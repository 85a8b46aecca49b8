"""Rajendran et al. 2016 Table 5 beside the paper's numbers.

Every run (metrics.json of mlmm.pivot.experiment) is one (model, language, lambda). For each
model, language and direction the lambda with the best validation criterion is chosen (ties:
the smaller lambda) and that run's test recalls fill the row; the test set never chooses.
"""

from __future__ import annotations

from pathlib import Path

import pandas as pd

from mlmm.errors import InputError
from mlmm.fingerprint import check_directory
from mlmm.io import read_json_object
from mlmm.origin import Origin
from mlmm.pivot import KS
from mlmm.results.build import paper_table
from mlmm.tables import load_paper_table, write_table

PAPER = "rajendran2016"
SYSTEMS = {
    "direct": "En-Image CorrNet",
    "mae": "Bridge MAE",
    "two": "2-CorrNet",
    "bridge": "Bridge CorrNet",
    "random": "Random",
    "mt": "CorrNet + MT (NMT; the paper used Moses)",
}
# The paper's spelling of the CorrNet + MT rows (resources/paper_tables), renamed to ours so
# that its cells stand beside our NMT-based rows.
PAPER_MT_SYSTEM = "CorrNet+MT"
DIRECTIONS = ("i2t", "t2i")
# The paper's row order: the English reference, then per language, then Random.
ROW_ORDER = [
    "En-Image CorrNet",
    "Bridge MAE",
    "2-CorrNet",
    "Bridge CorrNet",
    SYSTEMS["mt"],
    "Random",
]


def read_runs(paths: list[str | Path]) -> list[dict]:
    """metrics.json files (or run directories holding one)."""
    runs = []
    for path in paths:
        path = Path(path)
        path = path / "metrics.json" if path.is_dir() else path
        if not path.is_file():
            raise InputError(path, "a metrics.json of mlmm pivot-train", "no such file")
        check_directory(path.parent, path.name, "pivot-train or pivot-mt for this run")
        run = read_json_object(
            path, ("model", "language", "lambda", "criteria", "test", "provenance"),
            "a metrics.json of mlmm pivot-train",
        )
        if run["model"] not in SYSTEMS:
            raise InputError(path, f"a model of {list(SYSTEMS)}", repr(run["model"]), key="model")
        run["path"] = str(path)
        runs.append(run)
    return runs


def choose(runs: list[dict]) -> dict[tuple[str, str, str], dict]:
    """{(model, language, direction): the run chosen by its validation criterion}."""
    groups: dict[tuple[str, str], list[dict]] = {}
    for run in runs:
        groups.setdefault((run["model"], run["language"] or ""), []).append(run)
    chosen = {}
    for (model, language), group in groups.items():
        for direction in DIRECTIONS:
            if model == "random":
                best = group[0]
            else:
                best = max(group, key=lambda r, d=direction: (r["criteria"][d], -r["lambda"]))
            chosen[model, language, direction] = best
    return chosen


def _row_keys(model: str, language: str) -> tuple[str, str]:
    """(variant_note, language) as the paper's CSV spells them."""
    if model == "random":
        return "captions=n/a (random baseline)", ""
    return f"captions={language or 'en'}", language or "en"


def ours(chosen: dict[tuple[str, str, str], dict]) -> pd.DataFrame:
    rows = []
    for (model, language, direction), run in chosen.items():
        note, lang = _row_keys(model, language)
        for k in KS:
            rows.append(
                {
                    "system": SYSTEMS[model],
                    "variant_note": note,
                    "language": lang,
                    "direction": direction,
                    "metric": f"R@{k}",
                    "value": run["test"][direction][f"R@{k}"],
                }
            )
    return pd.DataFrame(rows)


def notes(runs: list[dict], chosen: dict) -> list[str]:
    config = runs[0]["provenance"]["config"] if runs and "provenance" in runs[0] else {}
    backbone = config.get("backbone", "alexnet_fc6")
    split = (
        "the paper's own split: every train2014/val2014 image but the MIC ones, Section 4.2"
        if config.get("pivot_split") == "paper"
        else "Karpathy train + restval minus MIC, not the paper's 118K/1K/1K split"
    )
    lambdas = "; ".join(
        f"{SYSTEMS[m]} {lang or 'en'} {d}: {run['lambda']:g}"
        for (m, lang, d), run in sorted(chosen.items())
        if m not in ("random", "mae")
    )
    if backbone == "alexnet_fc6":
        features = (
            "Image features: alexnet_fc6, torchvision AlexNet fc6 after its ReLU (ImageNet "
            "weights, resize 256, centre crop 224), the nearest available model to the paper's "
            "BVLC Reference CaffeNet fc6 (Caffe weights, 227 crop)."
        )
    else:
        features = (
            f"Image features: {backbone}, not the paper's CaffeNet fc6 (config pivot.backbone; "
            "alexnet_fc6 is the nearest torchvision model)."
        )
    if config.get("standardise_images"):
        features += (
            " Features z-scored per dimension with the Z1 statistics (pivot.standardise_images: "
            "true; neither the paper nor the authors' CorrNet code does so)."
        )
    else:
        features += (
            " Features used as extracted, as the paper and the authors' CorrNet code "
            "(pivot.standardise_images: false)."
        )
    return [
        "Recall@K as fractions of 1, as the paper prints them; I To C = i2t, C To I = t2i; "
        "ranking by Euclidean distance in the common space; 5 captions per image.",
        features,
        f"Data: Z1 = pivot_train images with English captions ({split}), test = the MIC "
        "images with French and German captions; Z2 = the TED CLDC train split of the pair. "
        "Lambda-selection data are held out of Z1 (images) and Z2 (talks). MIC captions are "
        "tokenised like the training text (fr/de like ted-cldc, en like Karpathy's tokens).",
        "Lambda chosen per direction without image-French/German data: i2t by English-to-X "
        "talk retrieval on held-out Z2 talks, t2i by image retrieval with English captions on "
        "held-out Z1 images (En-Image CorrNet: both directions on held-out Z1 images); the "
        f"criterion is R@5+R@10+R@50. Chosen: {lambdas or 'none'}.",
        "Bridge MAE: Ngiam et al. (2011) view-dropping objective (each instance shown with "
        "both views or one of them, reconstructing both) on the same one-hidden-layer network, "
        "without modality-specific layers or RBM pre-training; no lambda.",
        mt_note(runs),
        "2-CorrNet: both CorrNets of a run share its lambda; the chain goes through the "
        "nearest English caption among the Z1 training captions.",
        "Random: seeded uniform scores.",
    ]


def mt_note(runs: list[dict]) -> str:
    """What the CorrNet + MT rows are: the paper used Moses, we use the project's NMT."""
    paper = (
        "CorrNet + MT: the paper translates the Fr/De MIC captions to English with \"an Fr/De-En "
        "MT system using Z2\", Moses (Section 6, footnote 4), then ranks with the En-Image "
        "CorrNet."
    )
    translations = {
        run["language"]: run.get("translation") or {} for run in runs if run["model"] == "mt"
    }
    if not translations:
        return paper + " Not run here (no CorrNet + MT runs given): the paper's cells only."
    bleu = "; ".join(
        f"{lang} {stats['bleu_against_english_mic']:.1f}"
        for lang, stats in sorted(translations.items())
        if "bleu_against_english_mic" in stats
    )
    beams = sorted({stats["beam"] for stats in translations.values() if "beam" in stats})
    directions = " and ".join(f"{lang.capitalize()}->En" for lang in sorted(translations))
    normalised = all(stats.get("length_normalised") for stats in translations.values())
    best = "length-normalised 1-best (translate.sh -n)" if normalised else "1-best"
    return (
        f"{paper} Ours uses the project's attention NMT (mlmm.nmt with nmt's recipe, config "
        f"pivot.mt) instead of Moses, trained {directions} on the sentence pairs of the Z2 train "
        "talks, validated on the talks held out of Z2, beam search "
        f"({', '.join(map(str, beams)) or '?'}) {best}; the En-Image CorrNet (the network and "
        "lambda of the En-Image CorrNet row) ranks the translations. BLEU of the translations "
        f"against the English MIC captions: {bleu or 'not computed'}."
    )


def table5(
    runs: list[str | Path], paper_tables: str | Path | None, stem: str | Path
) -> pd.DataFrame:
    """Assemble Table 5 from run metrics and write `stem`.csv/.md/.tex."""
    records = read_runs(runs)
    if not records:
        raise InputError("--runs", "at least one metrics.json", "none")
    chosen = choose(records)
    paper = load_paper_table(paper_tables, PAPER, 5)
    if paper is not None:
        paper = paper.replace({"system": {PAPER_MT_SYSTEM: SYSTEMS["mt"]}})
    from mlmm.results.intervals import BOOTSTRAP_NOTE

    frame = paper_table(ours(chosen), paper, pivot_runs(records), PAPER, 5, order=_in_order)
    text = notes(records, chosen) + [
        BOOTSTRAP_NOTE,
        "Here the queries are the MIC test images (i2t) and captions (t2i) of the run chosen "
        "for the cell (one seed).",
    ]
    if load_paper_table(paper_tables, PAPER, 5) is None:
        text.append(f"The paper column is empty: no {PAPER}_table5.csv among the paper tables.")
    write_table(frame, stem, "Rajendran et al. 2016, Table 5 (pivot image-caption retrieval)", text,
                Origin.of_runs(records))  # fmt: skip
    return frame


def _in_order(frame: pd.DataFrame) -> pd.DataFrame:
    """By caption language, then the paper's rows, directions and cut-offs."""
    order = {
        "system": {s: i for i, s in enumerate(ROW_ORDER)},
        "language": {"en": 0, "fr": 1, "de": 2, "": 3},
        "direction": {d: i for i, d in enumerate(DIRECTIONS)},
        "metric": {f"R@{k}": i for i, k in enumerate(KS)},
    }
    return frame.sort_values(
        ["language", "system", "direction", "metric"],
        key=lambda column: column.map(order[column.name]).fillna(len(order[column.name])),
        kind="stable",
    ).reset_index(drop=True)


def pivot_runs(records: list[dict]) -> list:
    """Table 5 runs (``read_runs``) as runs of its rows: the run chosen per model, language and
    direction (``choose``), its recalls as fractions of 1, its MIC test ranks in queries.npz
    beside its metrics.json."""
    from mlmm.results.intervals import Run

    runs = []
    for (model, language, direction), record in choose(records).items():
        note, lang = _row_keys(model, language)
        systems = [SYSTEMS[model]] + ([PAPER_MT_SYSTEM] if model == "mt" else [])
        rows = [
            {"paper": PAPER, "table": 5, "system": system, "variant_note": note,
             "languages": [lang], "directions": [direction]}
            for system in systems
        ]  # fmt: skip
        metrics = {"test": {lang: {direction: record["test"][direction]}}, "recall_scale": 0.01,
                   "provenance": record["provenance"]}  # fmt: skip
        runs.append(Run(f"{model}_{lang}_{direction}", 0, metrics, rows, [], Path(record["path"])))
    return runs
