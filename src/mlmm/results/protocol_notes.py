"""The notes a retrieval table prints beside a variant's numbers: which reading of its paper's
protocol it ran where the paper and the authors' code disagree, in the words of the readings
registry (src/mlmm/fidelity/readings.yaml, ``mlmm.retrieval.config.reading``), from the
variant's resolved record."""

from __future__ import annotations

from mlmm.retrieval.config import languages, reading, variant_defaults


def protocol_notes(record: dict) -> list[str]:
    """Which reading of Kádár's data protocol a variant ran, where the paper and the code that
    was run (mulisera master) disagree: the table notes say it beside the numbers, in the words
    of ``reading`` (readings.yaml), which docs/fidelity.md shows beside the registry's sources."""
    notes = []
    subset, multi = record["image_subset"], len(languages(record)) > 1
    if subset["fraction"] < 1.0 and multi:
        notes.append(
            f"image subset ({subset['fraction']:g}, {subset['assignment']}): "
            + reading("image_subset.draw", subset["draw"])["note"]
        )
        if record["c2c"]:
            notes.append("c2c pairs from " + reading("image_subset.c2c", subset["c2c"])["note"])
    sampled = any(s.get("captions_per_image") for s in record["train_data"])
    if sampled and record["c2c"] and multi:
        notes.append(
            "c2c and vocabulary " + reading("c2c_captions", record["c2c_captions"])["note"]
        )
    return notes + _reading_notes(record) + calixto_notes(record) + _ame_notes(record)


# Keys whose value other than the built-in default is a reading of an author's code; the note
# names it (readings.yaml), where the key acts on the record.
READING_KEYS = {
    "tokens": lambda record: True,
    "count_words": lambda record: record["encoder"] == "shared" and len(languages(record)) > 1,
    "unknown_word_init": lambda record: record["word_embeddings"] in ("pretrained", "ame", "fme"),
    "alignment.lr_halving": lambda record: (
        record["word_embeddings"] == "ame" and record["alignment"]["lr_schedule"] == "halve_on_rise"
    ),
}


def _reading_notes(record: dict) -> list[str]:
    notes = []
    for key, acts in READING_KEYS.items():
        value, default = record, variant_defaults()
        for part in key.split("."):
            value, default = value[part], default[part]
        if value != default and acts(record):
            notes.append(reading(key, value)["note"])
    return notes


def calixto_notes(record: dict) -> list[str]:
    """Which reading of Calixto & Liu 2017 a variant ran where the paper and the authors' code
    (iacercalixto/multilingual-multimodal-embedding) disagree: features, initialisation,
    dropout (docs/fidelity.md, "Calixto & Liu 2017, Tables 1-2")."""
    if not any(row.get("paper") == "calixto2017" for row in record["paper_rows"]):
        return []
    notes = []
    if record["backbone"] in ("vgg19", "vgg19_bn"):
        notes.append(reading("backbone", record["backbone"])["note"])
    if record["init"] in ("calixto_paper", "calixto_code"):
        notes.append(reading("init", record["init"])["note"])
    if record["dropout"] > 0:
        code = (
            record["dropout_position"] == "after_norm"
            or record["embedding_dropout"] == "variational"
            or record["word_dropout"] > 0
            or record["recurrent_dropout"] > 0
        )
        notes.append(
            f"dropout {record['dropout']:g} "
            + (
                "as model_multilingual.py (the authors' code)"
                if code
                else "on the text and image representations (paper Section 4; the authors' "
                "run_f30kC.sh trains without dropout)"
            )
        )
    return notes


def _ame_notes(record: dict) -> list[str]:
    """AME: where its paper and AME-CMR disagree on the RCSLS mapping, which reading ran."""
    alignment = record["alignment"]
    if record["word_embeddings"] != "ame":
        return []
    mapping = reading("alignment.orthogonalise", alignment["orthogonalise"])
    rows = reading("alignment.normalise", alignment["normalise"])
    whose = f" ({mapping['by']})" if mapping["by"] == rows["by"] else ""
    return [f"RCSLS: {mapping['note']} on {rows['note']}{whose}"]
